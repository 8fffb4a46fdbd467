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

    /// The first part of every key this service writes (*default* `halyard`): keys are
    /// `<keyPrefix>:v1:<namespace>:{<id>}` and `…:{<id>}:lease`, so that several applications
    /// can share one Redis (and ACL rules can be written per prefix). Letters, digits and
    /// `-_.:/`, 1 to 64 of them (no `{`, `}` or space: the braces are the id's hash tag).
    ///
    /// ```swift
    /// var cache = SharedCache.redis(url: URL(string: "redis://10.0.0.5:6379")!)
    /// cache.keyPrefix = "checkout"
    /// ```
    public var keyPrefix: String = "halyard"

    /// Each call's deadline, counted from when the tier admits the call (queued), not from when
    /// it reaches Redis (*default* 25 ms, SPEC §15; 1 ms to 10 s). A call whose deadline passes
    /// while it waits for its turn is dropped without being sent (``SharedCacheStats/droppedInQueue``).
    ///
    /// ```swift
    /// cache.callDeadline = .milliseconds(50)   // a Redis in another zone
    /// ```
    public var callDeadline: Duration = .milliseconds(25)

    /// A call that succeeds but takes longer than this counts as a failure for the breaker
    /// (*default* nil: half of ``callDeadline``), so a Redis slow but under the deadline (a
    /// fork for `BGSAVE`, a slow script) opens the breaker instead of slowing every fetch
    /// (docs/fleet.md, "When Redis is slow or gone"). Counted in ``SharedCacheStats/slowCalls``.
    public var slowCallThreshold: Duration? = nil

    /// Connections to Redis (*default* 1; 1 to 16): calls are spread over them, each connection
    /// taking one exchange at a time and sending the calls that queued meanwhile together in
    /// its next one (docs/fleet.md, "Sizing Redis").
    public var connections: Int = 1

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

    /// Why these options cannot be used (nil: they can): checked by
    /// ``FlagService/init(options:)``, which throws ``FlagServiceError/invalidOption(_:)``.
    func optionProblem() -> String? {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/")
        if keyPrefix.isEmpty || keyPrefix.count > 64 || !keyPrefix.allSatisfy(allowed.contains) {
            return "sharedCache.keyPrefix must be 1 to 64 of letters, digits and -_.:/"
        }
        if callDeadline < .milliseconds(1) || callDeadline > .seconds(10) {
            return "sharedCache.callDeadline must be within 1 ms...10 s"
        }
        if let slow = slowCallThreshold, slow <= .zero { return "sharedCache.slowCallThreshold must be positive" }
        if connections < 1 || connections > 16 { return "sharedCache.connections must be within 1...16" }
        return nil
    }

    /// The threshold over which a successful call counts as slow.
    var effectiveSlowCallThreshold: Duration { slowCallThreshold ?? callDeadline / 2 }

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
