import CHalyardAtomics

/// A read view of one ``FlagClient`` snapshot (``FlagClient/pinnedFlags()``): the read API of
/// ``FlagReading`` with the client's rules, read counters and exposures, every read answering
/// from the values served when the view was taken, however the client's values change meanwhile
/// (what ``ContextFlags`` is for a service's context).
///
/// The view holds its snapshot strongly: a snapshot the client replaces is freed when the last
/// view pinning it is gone, so keep a view for one unit of work.
public struct PinnedFlags: Sendable {
    /// The values served (nil before the client had any): the view's strong reference.
    let snapshot: Snapshot?
    /// The client's exposure sink (nil when exposures are off).
    let sink: (any ExposureSink)?
    /// The sink's coarse clock word (nil when reads record nothing); alive as long as the sink,
    /// which the client owns and ``sink`` holds.
    nonisolated(unsafe) let exposureClock: UnsafePointer<hal_atomic_word>?
    /// The client's read counters.
    let counters: ReadCounters
    /// Why there are no values (meaningful when ``snapshot`` is nil).
    let unavailable: FlagErrorCode

    init(client: FlagClient) {
        snapshot = client.store.currentSnapshot
        sink = client.exposureSink
        exposureClock = client.exposureClock
        counters = client.readCounters
        unavailable = client.readCounters.isFatal ? .providerFatal : .providerNotReady
    }

    /// Whether the view serves values (false: the client had none when it was taken).
    public var hasValues: Bool { snapshot != nil }

    /// Why the view serves defaults (`PROVIDER_NOT_READY`, or `PROVIDER_FATAL` once the key was
    /// refused); nil when it serves values.
    public var unavailableReason: FlagErrorCode? { snapshot == nil ? unavailable : nil }

    /// The number of flags in the pinned values (0 without values).
    public var flagCount: Int { snapshot?.count ?? 0 }

    /// The fingerprint of the context the pinned values were served for; nil without values.
    public var fingerprint: String? { snapshot?.contextFingerprint }
}

extension PinnedFlags: FlagReading {
    /// Not API: Bool/Int/Double (the rules of ``FlagClient/bool(_:default:)``).
    public func _readScalar(_ key: String, as kind: _FlagValueKind, default defaultBits: UInt64) -> UInt64? {
        ReadRules.finish(
            withSnapshot { ReadRules.scalar($0, key, kind, exposureClock) }, default: defaultBits, as: kind,
            sink: sink, counters: counters)
    }

    /// Not API: any type, with the full result but the value.
    public func _readDetail(_ key: String, as kind: _FlagValueKind, default servedDefault: () -> JSONValue?)
        -> _FlagRead
    {
        var pending = ReadRules.PendingDetail()
        let read = withSnapshot { ReadRules.detail($0, key, kind, exposureClock, unavailable: unavailable, &pending) }
        ReadRules.finish(pending, servedDefault: servedDefault, sink: sink, counters: counters)
        return read
    }

    /// The pinned snapshot at +0 for `body` (nil without values); ``snapshot`` keeps it alive.
    @inline(__always)
    func withSnapshot<Result>(_ body: (Unmanaged<Snapshot>?) -> Result) -> Result {
        guard let snapshot else { return body(nil) }
        return withExtendedLifetime(snapshot) { body(Unmanaged.passUnretained(snapshot)) }
    }
}
