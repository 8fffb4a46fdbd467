/// Everything `client.stats` reports.
public struct FlagClientStats: Sendable, Hashable {
    /// Reads that did not succeed, by outcome.
    public var reads = ReadStats()
    /// Control-plane sync counters.
    public var sync: SyncStats
    /// Exposure counters (all zero offline): `recorded`, `deduplicated`, `sampledOut`,
    /// `dropped`, `sent`, `failed`.
    public var exposures = ExposureStats()
    /// Event-stream counters (docs/protocol.md, "Event streams"); all zero without a stream.
    public var stream = EventStreamStats()

    /// Creates stats.
    public init(sync: SyncStats = SyncStats()) { self.sync = sync }
}
