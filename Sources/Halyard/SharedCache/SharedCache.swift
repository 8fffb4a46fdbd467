public import Foundation

/// A second-level cache shared by every `FlagService` of a fleet (SPEC §15, docs/fleet.md):
/// set ``FlagServiceOptions/sharedCache`` to one.
///
/// A struct with static factories, so that other engines and options (timeouts, a key prefix)
/// can be added without breaking callers.
///
/// ```swift
/// var options = FlagServiceOptions(baseURL: url, key: "srv-...")
/// options.sharedCache = .redis(url: URL(string: "redis://10.0.0.5:6379/0")!)
/// let service = try FlagService(options: options)   // throws for a URL it cannot use
/// ```
///
/// A service that has one looks a context up there on a miss and before a refresh (never on a
/// read), lets one pod per context fetch it from the control plane (a lease), and writes what
/// it fetched back for the others; entries are authenticated with a key derived from the SDK
/// key and name no context (docs/fleet.md).
///
/// The URL may hold a password: it is never shown by ``description``, `debugDescription`,
/// `dump`, logs, stats or errors.
public struct SharedCache: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The engine and where it is.
    enum Engine: Sendable {
        case redis(URL)
    }

    let engine: Engine

    /// The PEM file of the certificate authorities a `rediss://` server's certificate must
    /// chain to, *replacing* the system trust store (*default* nil: the system store). Read once
    /// per process, when the first service that names it starts; ignored by `redis://` and
    /// `unix://`. The host name (or IP address) in the URL is always verified; there is no
    /// option to turn verification off (docs/fleet.md, "TLS").
    ///
    /// ```swift
    /// var cache = SharedCache.redis(url: URL(string: "rediss://cache.internal:6380")!)
    /// cache.trustedCAFile = "/etc/redis/ca.pem"
    /// options.sharedCache = cache
    /// ```
    public var trustedCAFile: String?

    /// A Redis server (Debian's `redis-server` 7.x, or Valkey) at `url`:
    /// `redis://[user:password@]host[:port][/db]` (port *default* 6379, db *default* 0),
    /// `rediss://…` (TLS, Linux: ``trustedCAFile`` and docs/fleet.md "TLS"), or `unix:///path`
    /// (`?db=N` optional). The user and password, when given, are sent with `AUTH`.
    ///
    /// ```swift
    /// options.sharedCache = .redis(url: URL(string: "redis://halyard:secret@10.0.0.5:6379/2")!)
    /// options.sharedCache = .redis(url: URL(string: "unix:///run/redis.sock")!)
    /// ```
    ///
    /// The URL is checked by ``FlagService/init(options:)``, which throws
    /// ``FlagServiceError/invalidSharedCache(_:)`` for one it cannot use.
    public static func redis(url: URL) -> SharedCache {
        SharedCache(engine: .redis(url))
    }

    /// A Redis server at `url`, usually `rediss://…`, whose certificate must chain to a CA in
    /// the PEM file `trustedCAFile` (which replaces the system trust store). The same as
    /// ``redis(url:)`` with ``trustedCAFile`` set.
    ///
    /// ```swift
    /// options.sharedCache = .redis(url: URL(string: "rediss://cache.internal:6380")!, trustedCAFile: "/etc/redis/ca.pem")
    /// ```
    public static func redis(url: URL, trustedCAFile: String) -> SharedCache {
        var cache = SharedCache(engine: .redis(url))
        cache.trustedCAFile = trustedCAFile
        return cache
    }

    /// The Redis endpoint the URL names, or why it cannot be used.
    package func redisEndpoint() throws(SharedCacheError) -> RedisEndpoint {
        switch engine {
        case .redis(let url):
            var endpoint = try RedisEndpoint(url: url)
            endpoint.trustedCAFile = trustedCAFile
            return endpoint
        }
    }

    /// What the cache is, without its password: `redis://user:***@host:6379/2`.
    ///
    /// ```swift
    /// print(SharedCache.redis(url: URL(string: "redis://:pw@cache:6379")!))   // redis://:***@cache:6379
    /// ```
    public var description: String {
        switch engine {
        case .redis(let url):
            if let endpoint = try? RedisEndpoint(url: url) { return endpoint.description }
            return "redis(unusable URL, scheme \"\(url.scheme ?? "")\")"
        }
    }

    /// The same as ``description``: the password is never shown.
    ///
    /// ```swift
    /// debugPrint(options.sharedCache as Any)   // Optional(redis://:***@cache:6379)
    /// ```
    public var debugDescription: String { description }

    /// A mirror with the description only, so that `dump` and the default printing of
    /// ``FlagServiceOptions`` never show the URL's password.
    ///
    /// ```swift
    /// dump(SharedCache.redis(url: URL(string: "redis://:pw@cache:6379")!))   // no "pw"
    /// ```
    public var customMirror: Mirror {
        Mirror(self, children: ["description": description], displayStyle: .struct)
    }
}
