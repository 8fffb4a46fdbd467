import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// `FlagServiceOptions.sharedCache` (SPEC §15, docs/fleet.md): the URLs it accepts and refuses,
/// the password never shown, and what a service says about a shared cache it cannot use.
@Suite struct SharedCacheOptionsTests {
    static func url(_ text: String) throws -> URL { try #require(URL(string: text)) }

    @Test func parsesRedisAndUnixURLs() throws {
        let plain = try RedisEndpoint(url: Self.url("redis://127.0.0.1:6380"))
        #expect(plain.address == .tcp(host: "127.0.0.1", port: 6380))
        #expect(plain.user == nil && plain.password == nil && plain.database == 0 && !plain.tls && plain.isLoopback)

        let full = try RedisEndpoint(url: Self.url("redis://app:p%40ss@cache.internal:7000/12"))
        #expect(full.address == .tcp(host: "cache.internal", port: 7000))
        #expect(full.user == "app" && full.password?.value == "p@ss" && full.database == 12 && !full.isLoopback)

        let passwordOnly = try RedisEndpoint(url: Self.url("redis://:pw@10.0.0.5"))
        #expect(passwordOnly.user == nil && passwordOnly.password?.value == "pw")
        #expect(passwordOnly.address == .tcp(host: "10.0.0.5", port: 6379) && !passwordOnly.isLoopback)

        let slash = try RedisEndpoint(url: Self.url("redis://localhost/"))
        #expect(slash.database == 0 && slash.isLoopback)

        let v6 = try RedisEndpoint(url: Self.url("redis://[::1]:6379/1"))
        #expect(v6.address == .tcp(host: "::1", port: 6379) && v6.isLoopback && v6.database == 1)

        let tls = try RedisEndpoint(url: Self.url("rediss://cache.example:6380"))
        #expect(tls.tls && tls.description == "rediss://cache.example:6380")

        let unix = try RedisEndpoint(url: Self.url("unix:///run/redis/redis.sock"))
        #expect(unix.address == .unix(path: "/run/redis/redis.sock") && unix.database == 0 && unix.isLoopback)
        let unixDB = try RedisEndpoint(url: Self.url("unix:///tmp/r.sock?db=4"))
        #expect(unixDB.database == 4 && unixDB.description == "unix:///tmp/r.sock?db=4")
    }

    @Test func refusesWhatItCannotUse() throws {
        let refused: [(String, SharedCacheError)] = [
            ("http://cache:6379", .unsupportedScheme("http")),
            ("https://cache:6379", .unsupportedScheme("https")),
            ("file:///tmp/r.sock", .unsupportedScheme("file")),
            ("memcached://cache:11211", .unsupportedScheme("memcached")),
            ("redis:///0", .missingHost),
            ("redis://cache:0", .invalidPort(0)),
            ("redis://cache:70000", .invalidPort(70000)),
            ("redis://cache:6379/x", .invalidDatabase("/x")),
            ("redis://cache:6379/1/2", .invalidDatabase("/1/2")),
            ("redis://cache:6379/-1", .invalidDatabase("/-1")),
            ("unix://", .invalidSocketPath("")),
            (
                "unix:///" + String(repeating: "a", count: 107),
                .invalidSocketPath("/" + String(repeating: "a", count: 107))
            ),
            ("unix:///tmp/r.sock?db=x", .invalidDatabase("x")),
        ]
        for (text, error) in refused {
            #expect(throws: error, "\(text)") { try RedisEndpoint(url: Self.url(text)) }
            var options = InMemoryControlPlane().makeServiceOptions()
            options.sharedCache = .redis(url: try Self.url(text))
            #expect(throws: FlagServiceError.invalidSharedCache(error), "\(text)") { try FlagService(options: options) }
        }
    }

    /// The password is never in a description, a debug description, `dump`, the options'
    /// default printing, an error, or the service's log.
    @Test func thePasswordIsNeverShown() throws {
        let secret = "hunter2-Very-Secret"
        let cache = SharedCache.redis(url: try Self.url("redis://app:\(secret)@cache.internal:6379/2"))
        var dumped = ""
        dump(cache, to: &dumped)
        var options = InMemoryControlPlane().makeServiceOptions()
        options.sharedCache = cache
        let logged = Locked<[String]>([])
        options.logHandler = { level, message in logged.withLock { $0.append("\(level) \(message)") } }
        let service = try FlagService(options: options)
        defer { service.close() }
        var dumpedOptions = ""
        dump(options, to: &dumpedOptions)
        let endpoint = try cache.redisEndpoint()
        let shown = [
            cache.description, cache.debugDescription, String(describing: cache), String(reflecting: cache), dumped,
            String(describing: options), dumpedOptions, endpoint.description, String(reflecting: endpoint),
            "\(endpoint.password as Any)", String(reflecting: service.stats),
        ]
        for text in shown + logged.value {
            #expect(!text.contains(secret), "\(text)")
        }
        #expect(cache.description == "redis://app:***@cache.internal:6379/2")

        // Errors about a URL with a password do not carry it either.
        let bad = SharedCache.redis(url: try Self.url("redis://app:\(secret)@cache.internal:6379/nope"))
        options.sharedCache = bad
        do {
            _ = try FlagService(options: options)
            Issue.record("an invalid database was accepted")
        } catch {
            #expect(!error.description.contains(secret) && !"\(error)".contains(secret))
            #expect(!bad.description.contains(secret))
        }
        // A server message that echoed the password would be scrubbed.
        let scrubbed = RedisConnection.scrub("ERR bad \(secret)!", RedisSecret(secret))
        #expect(scrubbed == "ERR bad <redacted>!")
        #expect(!RedisError.handshakeFailed(scrubbed).description.contains(secret))
    }

    /// What a service says about its shared cache when it is created: one warning for a plain
    /// `redis://` host that is not loopback (accepted: the cluster network is the operator's),
    /// one for `rediss://` that cannot be used (here: its CA file does not load; likewise without
    /// `libssl.so.3` or on Apple platforms; then it runs on its own cache), nothing for
    /// a local one or none. A shared cache that cannot be reached never keeps values from a
    /// reader. (No call is made to the non-loopback host: tests stay on loopback.)
    @Test func aServiceSaysWhatItCannotUseAndServesAnyway() async throws {
        let absentSocket = "unix:///tmp/halyard-absent-\(UUID().uuidString.prefix(8)).sock"
        for (text, warning, calls) in [
            ("redis://10.0.0.5:6379", "not loopback", false), ("rediss://cache.example:6380", "TLS", true),
            (absentSocket, nil, true), ("", nil, true),
        ] {
            let plane = InMemoryControlPlane(values: ["a": .bool(true)])
            var options = plane.makeServiceOptions()
            options.changeDetection = .polling
            // What is checked is where the values come from, not how fast: a loaded run must
            // not turn the shared cache's failed call plus the fetch into a cold-wait timeout.
            options.coldFetchTimeout = .seconds(10)
            if text.hasPrefix("rediss") {
                options.sharedCache = .redis(url: try Self.url(text), trustedCAFile: "/nonexistent/halyard-ca.pem")
            } else if !text.isEmpty {
                options.sharedCache = .redis(url: try Self.url(text))
            }
            let logged = Locked<[String]>([])
            options.logHandler = { level, message in
                if level == .warning { logged.withLock { $0.append(message) } }
            }
            let service = try FlagService(options: options)
            defer { service.close() }
            let warnings = logged.value.filter { $0.contains("sharedCache") }
            #expect(warnings.count == (warning == nil ? 0 : 1), "\(text): \(logged.value)")
            if let warning { #expect(warnings.first?.contains(warning) == true, "\(text): \(warnings)") }
            guard calls else { continue }
            let flags = await service.flags(for: EvaluationContext(targetingKey: "user-1"))
            #expect(flags.bool("a", default: false), "\(text): served from the control plane")
            let stats = service.stats.sharedCache
            switch text {
            case absentSocket: #expect(stats?.errors ?? 0 >= 1, "\(String(describing: stats))")
            default: #expect(stats == nil, "\(text): no shared cache in use")
            }
        }
    }
}
