// How a FlagClient reaches its snapshot for a read: the read methods themselves are
// ``FlagReading``'s (written once, shared with ContextFlags), their rules ``ReadRules``.
// Every read answers from one snapshot, protected by the calling thread's hazard slot for the
// few nanoseconds it takes (no lock, no retain, no allocation for Bool/Int/Double).

extension FlagClient: FlagReading {
    // Under a snapshot's protection only Halyard's own lookup and copy-out run
    // (docs/architecture.md): no user code (the injected clock behind the exposure recorder,
    // `FlagValue` conformances), no lock, no read of another store. A read that must call out
    // copies what it needs — or, on the exposure slow path (once per window), retains the
    // snapshot — ends the protection, then calls out (`ReadRules.finish`, then the value is
    // made in the caller's `FlagReading` method).

    /// Not API: Bool/Int/Double (entry kind and bits only, no `JSONValue`, no retain).
    public func _readScalar(_ key: String, as kind: _FlagValueKind, default defaultBits: UInt64) -> UInt64? {
        let lookup = withProtectedSnapshot { ReadRules.scalar($0, key, kind, exposureClock) }
        return ReadRules.finish(lookup, default: defaultBits, as: kind, sink: exposureSink, counters: readCounters)
    }

    /// Not API: any type, with the full result but the value.
    public func _readDetail(_ key: String, as kind: _FlagValueKind, default servedDefault: () -> JSONValue?)
        -> _FlagRead
    {
        var pending = ReadRules.PendingDetail()
        let read = withProtectedSnapshot { snapshot in
            ReadRules.detail(
                snapshot, key, kind, exposureClock,
                unavailable: readCounters.isFatal ? .providerFatal : .providerNotReady, &pending)
        }
        ReadRules.finish(pending, servedDefault: servedDefault, sink: exposureSink, counters: readCounters)
        return read
    }

    /// The one place a read reaches the client's snapshot: `body` runs under the calling
    /// thread's hazard slot (the snapshot at +0; nil when there are no values yet) and must
    /// do only Halyard's lookup and copy-out. Written over ``SnapshotStore/protect()`` rather
    /// than a closure-taking store method, so between protect and end the read touches no
    /// reference; inlined, `body` is too.
    @inline(__always)
    func withProtectedSnapshot<Result>(_ body: (Unmanaged<Snapshot>?) -> Result) -> Result {
        let (record, raw) = store.protect()
        let result = body(raw.map { Unmanaged<Snapshot>.fromOpaque($0) })
        SnapshotStore.endProtection(record)
        return result
    }

    /// The exposure slow path for handles (see ``ReadRules/recordRetainedExposure(_:_:_:servedDefault:)``).
    @discardableResult
    func recordRetainedExposure(_ retained: UnsafeMutableRawPointer, _ index: Int, servedDefault: JSONValue? = nil)
        -> UInt32
    {
        ReadRules.recordRetainedExposure(retained, index, exposureSink, servedDefault: servedDefault)
    }
}
