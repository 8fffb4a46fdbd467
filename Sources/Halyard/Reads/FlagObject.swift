/// A read-only view of an object-valued flag, for structured flags such as
/// `{"enabled": true, "title": "New checkout", "maxItems": 5}`.
///
/// ```swift
/// let checkout = flags.flagObject("new_checkout")
/// if checkout.isEnabled {
///     let title = checkout.string(forProperty: "title", default: "Checkout")
/// }
/// ```
///
/// The view holds the value read when it was created; take a new one to see later values.
/// A missing property or one of another type gives the default (or nil).
public struct FlagObject: Sendable, Hashable {
    /// The flag key.
    public let key: String
    /// The object's members; empty when the flag is missing or not an object.
    public let properties: [String: JSONValue]
    /// Whether the flag was served as a JSON object.
    public let isObject: Bool

    /// Creates a view over a resolved value.
    public init(key: String, value: JSONValue?) {
        self.key = key
        if case .object(let members)? = value {
            properties = members
            isObject = true
        } else {
            properties = [:]
            isObject = false
        }
    }

    /// Whether the feature is on: the flag was served as an object and its `enabled` property,
    /// when present, is `true`. A missing flag, a non-object value, or `enabled` of another
    /// type or `false` gives `false`.
    public var isEnabled: Bool {
        guard isObject else { return false }
        guard let enabled = properties["enabled"] else { return true }
        return enabled == .bool(true)
    }

    /// A string property, or `default`.
    public func string(forProperty name: String, default defaultValue: String) -> String {
        if case .string(let s)? = properties[name] { return s }
        return defaultValue
    }

    /// A number property (integers widen to Double), or `default`.
    public func number(forProperty name: String, default defaultValue: Double) -> Double {
        switch properties[name] {
        case .double(let d)?: d
        case .int(let i)?: Double(i)
        default: defaultValue
        }
    }

    /// A Bool property, or `default`.
    public func bool(forProperty name: String, default defaultValue: Bool) -> Bool {
        if case .bool(let b)? = properties[name] { return b }
        return defaultValue
    }

    /// An object property, or nil.
    public func object(forProperty name: String) -> [String: JSONValue]? {
        if case .object(let o)? = properties[name] { return o }
        return nil
    }

    /// An array property, or nil.
    public func array(forProperty name: String) -> [JSONValue]? {
        if case .array(let a)? = properties[name] { return a }
        return nil
    }
}
