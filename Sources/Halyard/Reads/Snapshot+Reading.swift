// Reads of a snapshot the caller holds, for conformers of `FlagReading` outside this module
// (HalyardTesting's `StaticFlags`): the same rules as FlagClient's and ContextFlags' reads,
// counted in `counters`, recording no exposures.

extension Snapshot {
    /// `FlagReading._readScalar` for a snapshot the caller holds.
    package func read(_ key: String, as kind: _FlagValueKind, counters: ReadCounters) -> UInt64? {
        ReadRules.finish(
            ReadRules.scalar(Unmanaged.passUnretained(self), key, kind, nil), default: 0, as: kind, sink: nil,
            counters: counters)
    }

    /// `FlagReading._readDetail` for a snapshot the caller holds.
    package func readDetail(_ key: String, as kind: _FlagValueKind, counters: ReadCounters) -> _FlagRead {
        var pending = ReadRules.PendingDetail()
        let read = ReadRules.detail(
            Unmanaged.passUnretained(self), key, kind, nil, unavailable: .providerNotReady, &pending)
        ReadRules.finish(pending, servedDefault: { nil }, sink: nil, counters: counters)
        return read
    }
}
