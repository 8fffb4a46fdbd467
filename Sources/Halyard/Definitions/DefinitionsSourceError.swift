/// Why definitions from a ``DefinitionsSource`` were not loaded (docs/definitions.md,
/// "Sources"). Whatever the error, the definitions already published stay in use.
public enum DefinitionsSourceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The document was read but refused: not JSON, or not schema-valid.
    case invalidDefinitions(FlagDefinitionsError)
    /// The file could not be read (missing, no permission, a folder), with the system's reason.
    case unreadable(path: String, reason: String)
    /// The document is larger than ``FlagDefinitions/parsingLimits`` allows (bytes).
    case tooLarge(limit: Int)
    /// The HTTP source answered with a status other than 200 or 304.
    case status(Int)
    /// The HTTP request failed without a response.
    case transport(TransportError)
    /// The source cannot be used as given (an http URL to a host that is not loopback, a
    /// header that may not be sent, a URL that is not a file URL): reported when the source is
    /// opened.
    case unusable(reason: String)

    /// A one-line description for logs.
    public var description: String {
        switch self {
        case .invalidDefinitions(let error): "\(error)"
        case .unreadable(let path, let reason): "cannot read \(path): \(reason)"
        case .tooLarge(let limit): "the definitions are larger than \(limit) bytes"
        case .status(let status): "HTTP status \(status)"
        case .transport(let error): "request failed: \(error)"
        case .unusable(let reason): "unusable definitions source: \(reason)"
        }
    }
}
