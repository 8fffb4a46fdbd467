import Foundation

extension SharedTier {
    /// The tier for a service's options, or nil when it has none or cannot use the one it has
    /// (then it logs one warning and the service runs on its own cache).
    static func make(options: FlagServiceOptions) -> SharedTier? {
        guard let shared = options.sharedCache, let endpoint = try? shared.redisEndpoint() else { return nil }
        if endpoint.tls, case .failure(let error) = RedisTLSContext.shared(trustedCAFile: endpoint.trustedCAFile) {
            options.logHandler?(
                .warning,
                "sharedCache \(shared): rediss:// (TLS) cannot be used (\(error)); the service runs on its own cache only"
            )
            return nil
        }
        if !endpoint.tls && !endpoint.isLoopback {
            options.logHandler?(
                .warning,
                "sharedCache \(shared) is plain redis:// to a host that is not loopback: entries are authenticated, not encrypted"
            )
        }
        return SharedTier(
            client: RedisClient(endpoint: endpoint),
            keys: Keys(baseURL: options.baseURL, key: options.key, appID: options.appID),
            leaseDuration: options.requestTimeout + .seconds(1), entryLifetime: options.maxStaleness,
            clock: options.clock, logHandler: options.logHandler)
    }
}
