/// The programming errors `FlagClient(options:)` throws (SPEC §9).
///
/// Only mistakes in the configuration throw; connection problems never do (they show up as
/// ``ClientStatus`` and ``ClientEvent/error(code:message:)``). No case carries the key itself.
public enum FlagClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The key is empty or only whitespace.
    case blankKey
    /// The key starts with one of ``FlagClientOptions/serverKeyPrefixes`` (it is a server key)
    /// and the role is ``FlagClientOptions/Role/client``: server keys must not ship in apps.
    /// Carries the matching prefix, never the key.
    case serverKeyInClientRole(prefix: String)
    /// The base URL is not absolute (it has no scheme or no host).
    case baseURLNotAbsolute
    /// The base URL's scheme is not `http` or `https`. Carries the scheme.
    case unsupportedScheme(String)
    /// The base URL is plain `http` to a host that is not loopback (`localhost`, `127.0.0.0/8`,
    /// `::1`). Carries the host.
    case insecureHTTPToNonLoopbackHost(String)
    /// Offline values were given to a client that is not in offline mode.
    case offlineValuesOutsideOfflineMode
    /// An offline value cannot be served (for example a non-finite double). Carries the flag key.
    case unservableOfflineValue(key: String)

    /// A description that never contains the key.
    public var description: String {
        switch self {
        case .blankKey: "FlagClientError.blankKey: the key is empty"
        case .serverKeyInClientRole(let prefix):
            "FlagClientError.serverKeyInClientRole: a server key (prefix \"\(prefix)\") in a .client role configuration"
        case .baseURLNotAbsolute: "FlagClientError.baseURLNotAbsolute: the base URL needs a scheme and a host"
        case .unsupportedScheme(let scheme): "FlagClientError.unsupportedScheme: \"\(scheme)\" (use http or https)"
        case .insecureHTTPToNonLoopbackHost(let host):
            "FlagClientError.insecureHTTPToNonLoopbackHost: plain http to \(host) (use https)"
        case .offlineValuesOutsideOfflineMode: "FlagClientError.offlineValuesOutsideOfflineMode"
        case .unservableOfflineValue(let key): "FlagClientError.unservableOfflineValue: \(key)"
        }
    }
}
