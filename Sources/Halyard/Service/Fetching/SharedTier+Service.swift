import Foundation

extension SharedTier {
    /// The tier for a service's options, or nil when it has none or cannot use the one it has
    /// (then it logs one warning and the service runs on its own cache).
    static func make(options: FlagServiceOptions) -> SharedTier? {
        guard let shared = options.sharedCache, let endpoint = try? shared.redisEndpoint() else { return nil }
        if endpoint.tls {
            options.logHandler?(
                .warning,
                "sharedCache \(shared): rediss:// (TLS) is not supported by Halyard's Redis client yet; the service runs on its own cache only"
            )
            return nil
        }
        if !endpoint.isLoopback {
            options.logHandler?(
                .warning,
                "sharedCache \(shared) is plain redis:// to a host that is not loopback: entries are authenticated, not encrypted"
            )
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
            clock: options.clock, logHandler: options.logHandler, callDeadline: shared.callDeadline,
            slowCallThreshold: shared.effectiveSlowCallThreshold)
    }
}
