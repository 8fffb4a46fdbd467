/// Programming errors that creating a ``FlagService`` can throw. Connection problems never
/// throw. No case carries the key.
public enum FlagServiceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The key is empty or only whitespace.
    case blankKey
    /// The base URL is not absolute (it has no scheme or no host).
    case baseURLNotAbsolute
    /// The base URL's scheme is not `http` or `https`. Carries the scheme.
    case unsupportedScheme(String)
    /// The base URL is plain `http` to a host that is not loopback. Carries the host.
    case insecureHTTPToNonLoopbackHost(String)
    /// An option is out of range; says which.
    case invalidOption(String)
    /// ``ExposureOptions/exporter`` cannot be used (for example an OTLP endpoint over plain
    /// `http` to a host that is not loopback). Carries the reason.
    case invalidExposureExporter(ExposureExporterError)
    /// The key or the app id (`field`: `"key"` or `"appID"`) holds a control character
    /// (U+0000–U+001F, U+007F) once its surrounding whitespace is trimmed: refused, never sent.
    /// Carries the field's name, never its value.
    case controlCharacter(field: String)
    /// ``FlagServiceOptions/sharedCache`` cannot be used (for example a URL whose scheme is not
    /// `redis`, `rediss` or `unix`). Carries the reason, never the URL's password.
    ///
    /// ```swift
    /// catch FlagServiceError.invalidSharedCache(let reason) { print(reason) }   // no password in it
    /// ```
    case invalidSharedCache(SharedCacheError)
    /// ``FlagServiceOptions/definitions`` cannot be used (an http URL to a host that is not
    /// loopback, a header that may not be sent, a URL that is not a file URL). Carries the
    /// reason, never the headers' values.
    case invalidDefinitionsSource(DefinitionsSourceError)

    /// A description that never contains the key.
    public var description: String {
        switch self {
        case .blankKey: "the key is empty"
        case .baseURLNotAbsolute: "the base URL needs a scheme and a host"
        case .unsupportedScheme(let scheme): "the base URL scheme \"\(scheme)\" is not supported (use http or https)"
        case .insecureHTTPToNonLoopbackHost(let host):
            "plain http to \(host) is refused (use https; http is allowed to loopback only)"
        case .invalidOption(let message): "invalid FlagServiceOptions: \(message)"
        case .invalidExposureExporter(let reason): "the exposure exporter cannot be used: \(reason)"
        case .controlCharacter(let field):
            "the \(field) holds a control character (U+0000-U+001F or U+007F); it is never sent"
        case .invalidSharedCache(let reason): "the shared cache cannot be used: \(reason)"
        case .invalidDefinitionsSource(let reason): "the definitions source cannot be used: \(reason)"
        }
    }
}
