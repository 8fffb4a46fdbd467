/// A JSON value that keeps the integer/float distinction of the literal it came from.
///
/// `1` is ``int(_:)``, `1.0` and `1e0` are ``double(_:)``. Integers that do not fit in
/// 64 bits are read as doubles, never wrapped. Doubles are always finite: the parser
/// rejects `NaN`/`Infinity`, and the public entry points that accept values from Swift
/// code (for example offline values) reject non-finite doubles with a typed error.
///
/// ```swift
/// let theme: JSONValue = .object(["color": .string("teal"), "size": .int(3)])
/// ```
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])
}

extension JSONValue {
    /// The JSON type name of this value (`"null"`, `"boolean"`, `"integer"`, `"number"`,
    /// `"string"`, `"array"`, `"object"`), for error messages.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .int: "integer"
        case .double: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    /// Whether every double inside this value (at any depth) is finite.
    public var isFinite: Bool {
        switch self {
        case .double(let d): d.isFinite
        case .array(let items): items.allSatisfy(\.isFinite)
        case .object(let members): members.values.allSatisfy(\.isFinite)
        case .null, .bool, .int, .string: true
        }
    }
}

extension JSONValue: ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(nilLiteral: ()) { self = .null }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        var members: [String: JSONValue] = [:]
        for (name, value) in elements { members[name] = value }
        self = .object(members)
    }
}
