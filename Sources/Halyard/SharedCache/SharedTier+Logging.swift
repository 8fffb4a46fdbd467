/// What a ``SharedTier`` logs about Redis's answers: a configuration problem once per tier,
/// a failover or a full Redis once per episode (docs/fleet.md, "Each failure, as an operator
/// sees it").
extension SharedTier {
    /// The record of an episode's first reply (logged again only after Redis took a write):
    /// a failover reply (`reason` `failover`) or `-OOM` (`reason` `out_of_memory`); nil for
    /// other failures. It names the reply's code only, never a key or a value.
    static func episodeRecord(_ error: RedisError, facts: [String: String]) -> HalyardLogRecord? {
        let code: String
        switch error {
        case .server(let message), .handshakeFailed(let message): code = String(message.prefix { $0 != " " })
        default: return nil
        }
        switch error.category {
        case .failover:
            return HalyardLogRecord(
                .warning,
                "the shared cache answered \(code): it is not a primary that takes writes (a failover, or a node loading its data); the connection was dropped and the next call connects again, to where the name points now; meanwhile contexts are fetched from the control plane and not written back (logged again only after Redis takes a write)",
                .sharedCache, facts.merging([HalyardLogRecord.Key.reason: "failover"]) { $1 })
        case .outOfMemory:
            return HalyardLogRecord(
                .warning,
                "the shared cache is full (\(code): maxmemory reached with the noeviction policy): it refuses leases and entry writes, reads go on; contexts it does not hold are fetched from the control plane and not written back until it has room (maxmemory-policy allkeys-lru evicts old entries instead; logged again only after Redis takes a write)",
                .sharedCache, facts.merging([HalyardLogRecord.Key.reason: "out_of_memory"]) { $1 })
        default:
            return nil
        }
    }

    /// The record of a failure that retrying does not mend (logged once per tier): refused
    /// credentials or permissions (`reason` `configuration`), a Redis Cluster (`reason`
    /// `cluster_unsupported`); nil for other failures. It names the reply's code only (an ACL
    /// refusal's message names the user).
    static func configurationRecord(_ error: RedisError, facts: [String: String]) -> HalyardLogRecord? {
        let code: String
        switch error {
        case .server(let message), .handshakeFailed(let message): code = String(message.prefix { $0 != " " })
        default: return nil
        }
        switch error.category {
        case .auth:
            return HalyardLogRecord(
                .error,
                "the shared cache refused this service (\(code)): a configuration problem (the URL's user and password, or the user's ACL permissions); the service runs on its own cache until it is fixed",
                .sharedCache, facts.merging([HalyardLogRecord.Key.reason: "configuration"]) { $1 })
        case .cluster:
            return HalyardLogRecord(
                .error,
                "the shared cache answered as a Redis Cluster (\(code)), which is not supported: point sharedCache at one primary (or a proxy in front of the cluster); the service runs on its own cache",
                .sharedCache, facts.merging([HalyardLogRecord.Key.reason: "cluster_unsupported"]) { $1 })
        default:
            return nil
        }
    }

    /// The metadata of the tier's log lines: the server's origin (never its login).
    var logFacts: [String: String] { [HalyardLogRecord.Key.origin: Self.origin(of: client.endpoint)] }
}
