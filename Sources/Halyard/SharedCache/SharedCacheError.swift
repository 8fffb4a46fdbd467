/// Why a ``SharedCache`` cannot be used: thrown by ``FlagService/init(options:)`` as
/// ``FlagServiceError/invalidSharedCache(_:)``. No case carries the URL's password (or the URL:
/// it may hold one).
///
/// ```swift
/// var options = FlagServiceOptions(baseURL: url, key: "srv-...")
/// options.sharedCache = .redis(url: URL(string: "http://cache:6379")!)
/// do { _ = try FlagService(options: options) } catch .invalidSharedCache(let reason) { print(reason) }
/// ```
public enum SharedCacheError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The URL's scheme is not `redis`, `rediss` or `unix`. Carries the scheme (empty: none).
    /// Example: `http://cache:6379` → `.unsupportedScheme("http")`.
    case unsupportedScheme(String)
    /// A `redis://` or `rediss://` URL without a host. Example: `redis:///0`.
    case missingHost
    /// The port is not in 1...65535. Carries it. Example: `redis://cache:0` → `.invalidPort(0)`.
    case invalidPort(Int)
    /// The path is not `/` followed by a database number (0...1_000_000). Carries the path.
    /// Example: `redis://cache:6379/x` → `.invalidDatabase("/x")`.
    case invalidDatabase(String)
    /// A `unix://` URL whose path is empty, relative, or longer than a socket address holds
    /// (107 bytes). Carries the path. Example: `unix://` → `.invalidSocketPath("")`.
    case invalidSocketPath(String)

    /// A description that never contains the URL's password.
    ///
    /// ```swift
    /// print(SharedCacheError.invalidPort(0))   // the shared cache URL's port 0 is not in 1...65535
    /// ```
    public var description: String {
        switch self {
        case .unsupportedScheme(let scheme):
            "the shared cache URL scheme \"\(scheme)\" is not supported (use redis://, rediss:// or unix://)"
        case .missingHost: "the shared cache URL needs a host (redis://host:port)"
        case .invalidPort(let port): "the shared cache URL's port \(port) is not in 1...65535"
        case .invalidDatabase(let path): "the shared cache URL's path \"\(path)\" is not /<database number>"
        case .invalidSocketPath(let path):
            "the unix socket path \"\(path)\" must be absolute and at most 107 bytes"
        }
    }
}
