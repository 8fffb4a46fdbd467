/// Why a flag definitions document was refused (docs/definitions.md, "The format and its validation"). A refused
/// document never replaces the definitions already in use.
public enum FlagDefinitionsError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The bytes are not one strict JSON document within the definitions' parsing limits.
    case malformedJSON(JSONParseError)
    /// The JSON does not follow flagd's flag definition schema (0.2.x): `path` names the
    /// offending member (`flags.my-flag.variants`), `reason` says what is wrong.
    case invalid(path: String, reason: String)

    /// A one-line description for logs.
    public var description: String {
        switch self {
        case .malformedJSON(let error): "flag definitions are not valid JSON: \(error)"
        case .invalid(let path, let reason): "flag definitions are invalid at \(path): \(reason)"
        }
    }
}
