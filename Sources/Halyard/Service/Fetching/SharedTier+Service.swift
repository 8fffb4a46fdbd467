import Foundation

extension SharedTier {
    /// The tier for a service's options, or nil when it has none or cannot use the one it has
    /// (then it logs one warning and the service runs on its own cache).
    static func make(options: FlagServiceOptions) -> SharedTier? {
        guard let shared = options.sharedCache, let endpoint = try? shared.redisEndpoint() else { return nil }
        // `shared`'s description never shows the URL's password; the origin has no login at all.
        let facts = [HalyardLogRecord.Key.origin: origin(of: endpoint)]
        if endpoint.tls, case .failure(let error) = RedisTLSContext.shared(trustedCAFile: endpoint.trustedCAFile) {
            options.logSink?(
                HalyardLogRecord(
                    .warning,
                    "sharedCache \(shared): rediss:// (TLS) cannot be used (\(error)); the service runs on its own cache only",
                    .sharedCache, facts.merging([HalyardLogRecord.Key.reason: "tls_unavailable"]) { $1 }))
            return nil
        }
        if !endpoint.tls && !endpoint.isLoopback {
            options.logSink?(
                HalyardLogRecord(
                    .warning,
                    "sharedCache \(shared) is plain redis:// to a host that is not loopback: entries are authenticated, not encrypted",
                    .sharedCache, facts.merging([HalyardLogRecord.Key.reason: "not_encrypted"]) { $1 }))
        }
        // One client per connection, each with the call deadline as its own default (the
        // tier passes each call the time left of its deadline).
        let clients = (0..<max(1, shared.connections)).map { _ in
            RedisClient(endpoint: endpoint, timeout: shared.callDeadline)
        }
        return SharedTier(
            clients: clients,
            keys: Keys(baseURL: options.baseURL, key: options.key, appID: options.appID, prefix: shared.keyPrefix),
            leaseDuration: options.requestTimeout + .seconds(1), entryLifetime: options.maxStaleness,
            clock: options.clock, logHandler: options.logSink, callDeadline: shared.callDeadline,
            slowCallThreshold: shared.effectiveSlowCallThreshold)
    }

    /// `redis://host:port`, `rediss://host:port` or `unix://path`: no user, no password.
    static func origin(of endpoint: RedisEndpoint) -> String {
        switch endpoint.address {
        case .unix(let path): "unix://\(path)"
        case .tcp(let host, let port):
            (endpoint.tls ? "rediss://" : "redis://") + (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
        }
    }
}
