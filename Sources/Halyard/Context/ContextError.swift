/// Why an ``EvaluationContext`` could not be parsed, validated or fitted.
public enum ContextError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The bytes are not acceptable JSON (includes input too large, nesting too deep and too
    /// many members); the parse error carries the byte offset.
    case invalidJSON(JSONParseError)
    /// The JSON document is not an object; carries the JSON type found (for example `"array"`).
    case notAnObject(found: String)
    /// `targetingKey` is present but not a string; carries the JSON type found.
    case nonStringTargetingKey(found: String)
    /// `kind` is present but not a string; carries the JSON type found.
    case nonStringKind(found: String)
    /// The kind is not 1 to 64 characters from `a-z 0-9 - _`.
    case invalidKind(String)
    /// An attribute is named `targetingKey` or `kind` (only possible when built from Swift values).
    case reservedAttributeName(String)
    /// A double inside the named top-level attribute is NaN or infinite (only possible when
    /// built from Swift values; the parser never produces one).
    case nonFiniteNumber(attribute: String)
    /// The members that are never dropped (`targetingKey`, `kind` and an attribute named `key`)
    /// are longer than the fitting limit on their own; `length` is their canonical length in
    /// UTF-16 code units.
    case requiredMembersExceedLimit(length: Int, limit: Int)

    /// The byte offset of the problem in the parsed input, when there is one.
    public var offset: Int? {
        if case .invalidJSON(let e) = self { return e.offset }
        return nil
    }

    /// A readable, single-line description.
    public var description: String {
        switch self {
        case .invalidJSON(let e): "invalid context: \(e.description)"
        case .notAnObject(let found): "invalid context: expected a JSON object, found \(found)"
        case .nonStringTargetingKey(let found): "invalid context: targetingKey must be a string, found \(found)"
        case .nonStringKind(let found): "invalid context: kind must be a string, found \(found)"
        case .invalidKind(let kind):
            "invalid context: kind \(JSONValue.string(kind).jsonString) must be 1 to 64 characters from a-z 0-9 - _"
        case .reservedAttributeName(let name): "invalid context: an attribute may not be named \(name)"
        case .nonFiniteNumber(let name):
            "invalid context: attribute \(JSONValue.string(name).jsonString) holds NaN or Infinity"
        case .requiredMembersExceedLimit(let length, let limit):
            "invalid context: targetingKey, kind and key alone take \(length) UTF-16 code units, over the limit of \(limit)"
        }
    }
}
