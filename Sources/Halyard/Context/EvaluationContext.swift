public import Foundation

/// Who or what flags are evaluated for (docs/context.md): a targeting key, a kind, attributes, and the
/// names of the attributes that must never leave the process.
///
/// Building one from Swift values never throws; problems (an invalid kind, an attribute named
/// `targetingKey` or `kind`, a non-finite double) are reported by ``validate()`` and by
/// ``fitted(limit:)``, which validates first.
///
/// ```swift
/// let ctx = EvaluationContext(
///     targetingKey: "u-42", kind: "user",
///     attributes: ["plan": "pro", "email": "a@example.com"],
///     privateAttributes: ["email"])
/// let fitted = try ctx.fitted()
/// fitted.canonicalJSON  // {"kind":"user","plan":"pro","targetingKey":"u-42"}
/// ```
public struct EvaluationContext: Sendable, Hashable {
    /// The targeting key; empty for an anonymous context.
    public var targetingKey: String
    /// The context kind (`"user"` by default): 1 to 64 characters from `a-z 0-9 - _`.
    public var kind: String
    /// Top-level attributes (JSON values, nesting allowed). May not contain `targetingKey` or
    /// `kind`.
    public var attributes: [String: JSONValue]
    /// Names of top-level attributes that are removed before the context leaves the process
    /// (not sent, not cached, not in exposures, not in the fingerprint). Names that are not
    /// attributes are ignored; `targetingKey` and `kind` cannot be private.
    public var privateAttributes: Set<String>

    /// The default kind, `"user"`.
    public static let defaultKind = "user"

    /// Creates a context from Swift values. Never throws: call ``validate()`` (or
    /// ``fitted(limit:)``, which validates) to check it.
    public init(
        targetingKey: String,
        kind: String = EvaluationContext.defaultKind,
        attributes: [String: JSONValue] = [:],
        privateAttributes: Set<String> = []
    ) {
        self.targetingKey = targetingKey
        self.kind = kind
        self.attributes = attributes
        self.privateAttributes = privateAttributes
    }

    /// An anonymous context of kind `user` with no attributes.
    public static var anonymous: EvaluationContext { EvaluationContext(targetingKey: "") }

    /// Whether the targeting key is empty.
    public var isAnonymous: Bool { targetingKey.isEmpty }

    /// Whether `kind` is 1 to 64 characters from `a-z 0-9 - _`.
    public static func isValidKind(_ kind: String) -> Bool {
        let utf8 = kind.utf8
        guard !utf8.isEmpty, utf8.count <= 64 else { return false }
        return utf8.allSatisfy { b in
            (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z"))
                || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9"))
                || b == UInt8(ascii: "-") || b == UInt8(ascii: "_")
        }
    }

    /// The member names that can never be attributes.
    public static let reservedNames: Set<String> = ["targetingKey", "kind"]

    /// Checks the context: a valid kind, no attribute named `targetingKey` or `kind`, and only
    /// finite numbers. Reports the first problem found (attribute problems in name order).
    public func validate() throws(ContextError) {
        guard Self.isValidKind(kind) else { throw .invalidKind(kind) }
        // Fast path: one pass in storage order; sort only to report the first problem by name.
        var ok = true
        for (name, value) in attributes where name == "targetingKey" || name == "kind" || !value.isFinite {
            ok = false
            break
        }
        if ok { return }
        for name in JSONWriter.sortedNames(attributes.keys) {
            if Self.reservedNames.contains(name) { throw .reservedAttributeName(name) }
            if !attributes[name]!.isFinite { throw .nonFiniteNumber(attribute: name) }
        }
    }

    // MARK: Parsing

    /// Parses a context from its JSON wire form, a flat object such as
    /// `{"targetingKey": "u1", "kind": "tenant", "plan": "pro"}`.
    ///
    /// `targetingKey` and `kind` fill the fields (missing `targetingKey` = anonymous, missing
    /// `kind` = `"user"`); every other member is an attribute. JSON carries no private
    /// attributes: pass their names in `privateAttributes`.
    /// - Parameters:
    ///   - json: UTF-8 JSON bytes.
    ///   - privateAttributes: names of attributes to keep private.
    ///   - limits: parser limits; ``JSONParsingLimits/context`` by default (64 KiB, depth 32,
    ///     1,000 members per object).
    /// - Throws: ``ContextError``; parse problems carry the byte offset.
    public init(
        json: Data,
        privateAttributes: Set<String> = [],
        limits: JSONParsingLimits = .context
    ) throws(ContextError) {
        let value: JSONValue
        do {
            value = try JSONValue(parsing: json, limits: limits)
        } catch {
            throw .invalidJSON(error)
        }
        try self.init(wireValue: value, privateAttributes: privateAttributes)
    }

    /// Parses a context from JSON text (see ``init(json:privateAttributes:limits:)-(Data,_,_)``).
    /// - Throws: ``ContextError``; offsets count UTF-8 bytes of `json`.
    public init(
        json: String,
        privateAttributes: Set<String> = [],
        limits: JSONParsingLimits = .context
    ) throws(ContextError) {
        try self.init(json: Data(json.utf8), privateAttributes: privateAttributes, limits: limits)
    }

    /// Builds a context from an already parsed wire-form object (see
    /// ``init(json:privateAttributes:limits:)-(Data,_,_)``).
    /// - Throws: ``ContextError`` when the value is not an object, `targetingKey` or `kind`
    ///   is not a string, or the kind is invalid.
    public init(wireValue: JSONValue, privateAttributes: Set<String> = []) throws(ContextError) {
        guard case .object(var members) = wireValue else {
            throw .notAnObject(found: wireValue.typeName)
        }
        var targetingKey = ""
        if let tk = members.removeValue(forKey: "targetingKey") {
            guard case .string(let s) = tk else { throw .nonStringTargetingKey(found: tk.typeName) }
            targetingKey = s
        }
        var kind = Self.defaultKind
        if let k = members.removeValue(forKey: "kind") {
            guard case .string(let s) = k else { throw .nonStringKind(found: k.typeName) }
            guard Self.isValidKind(s) else { throw .invalidKind(s) }
            kind = s
        }
        self.init(
            targetingKey: targetingKey, kind: kind, attributes: members,
            privateAttributes: privateAttributes)
    }

    /// The wire form without private attributes: one flat object with `targetingKey`, `kind`
    /// and every public attribute. Not fitted; see ``fitted(limit:)``.
    public var publicWireValue: JSONValue {
        var members = attributes
        for name in privateAttributes { members.removeValue(forKey: name) }
        members["targetingKey"] = .string(targetingKey)
        members["kind"] = .string(kind)
        return .object(members)
    }
}
