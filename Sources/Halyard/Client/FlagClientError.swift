/// Programming errors that creating or configuring a ``FlagClient`` can throw.
///
/// Connection problems never throw: they show up in ``FlagClient`` status and events. No case
/// carries the key itself.
public enum FlagClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// An offline value has an empty key.
    case emptyFlagKey
    /// An offline value cannot be served (for example a non-finite double), with the reason.
    case invalidOfflineValue(key: String, reason: String)
    /// `setOfflineValues(_:)` was called on a client that is not in offline mode.
    case notOffline
    /// The key is empty or only whitespace (online clients).
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
    /// ``ExposureOptions/exporter`` cannot be used (for example an OTLP endpoint over plain
    /// `http` to a host that is not loopback). Carries the reason.
    case invalidExposureExporter(ExposureExporterError)
    /// The key or the app id (`field`: `"key"` or `"appID"`) holds a control character
    /// (U+0000–U+001F, U+007F) once its surrounding whitespace is trimmed: it would put a line
    /// break or another control byte into a request header, so it is refused and never sent.
    /// Carries the field's name, never its value.
    case controlCharacter(field: String)

    /// A description that never contains the key.
    public var description: String {
        switch self {
        case .emptyFlagKey:
            "an offline value has an empty flag key"
        case .invalidOfflineValue(let key, let reason):
            "the offline value for '\(key)' cannot be served: \(reason)"
        case .notOffline:
            "offline values can only be set on a client created in offline mode"
        case .blankKey:
            "the key is empty"
        case .serverKeyInClientRole(let prefix):
            "a server key (prefix \"\(prefix)\") in a .client role configuration; use role .service on servers"
        case .baseURLNotAbsolute:
            "the base URL needs a scheme and a host"
        case .unsupportedScheme(let scheme):
            "the base URL scheme \"\(scheme)\" is not supported (use http or https)"
        case .insecureHTTPToNonLoopbackHost(let host):
            "plain http to \(host) is refused (use https; http is allowed to loopback only)"
        case .invalidExposureExporter(let reason):
            "the exposure exporter cannot be used: \(reason)"
        case .controlCharacter(let field):
            "the \(field) holds a control character (U+0000-U+001F or U+007F); it is never sent"
        }
    }
}
