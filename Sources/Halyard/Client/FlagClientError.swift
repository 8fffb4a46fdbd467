/// Programming errors that creating or configuring a ``FlagClient`` can throw (SPEC §9).
///
/// Connection problems never throw: they show up in ``FlagClient`` status and events.
public enum FlagClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// An offline value has an empty key.
    case emptyFlagKey
    /// An offline value cannot be served (for example a non-finite double), with the reason.
    case invalidOfflineValue(key: String, reason: String)
    /// `setOfflineValues(_:)` was called on a client that is not in offline mode.
    case notOffline

    public var description: String {
        switch self {
        case .emptyFlagKey:
            "an offline value has an empty flag key"
        case .invalidOfflineValue(let key, let reason):
            "the offline value for '\(key)' cannot be served: \(reason)"
        case .notOffline:
            "offline values can only be set on a client created in offline mode"
        }
    }
}
