import CHalyardAtomics

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
    ///
    /// A small or literal key is answered from ``KeyedReadCache`` when its answer carries the
    /// current generation (a load, a probe and a seqlock read: no snapshot protection); any
    /// other key, and any answer that is not current, reads the snapshot.
    public func _readScalar(_ key: String, as kind: _FlagValueKind, default defaultBits: UInt64) -> UInt64? {
        // The fast path keeps to a few registers; every other path is a tail call.
        // Any key's words are looked up (see `KeyedReadCache.answer`): only small and literal
        // keys are ever added, so other keys miss and go through the flag table.
        let (w0, w1) = StringLayout.words(key)
        // A native heap string never has an answer: straight to the flag table, without a probe.
        guard StringLayout.mayBeKeyed(w1) else { return readThroughSnapshot(key, kind, defaultBits) }
        guard let answer = KeyedReadCache.answer(keySlots, w0, w1, KeyedReadCache.code(kind)) else {
            return readWithoutAnswer(key, kind, defaultBits)
        }
        let generation = hal_load_acquire(generationWord)
        let read = hal_handle_cache_answer(answer, generation)
        guard ReadRules.answerServes(read.info) else {
            // Not current (all ones: another generation, or a writer mid-update) or a failure.
            if read.info == .max { return readCaching(key, kind, defaultBits, known: answer) }
            return ReadRules.countCachedFailure(read.info, readCounters)
        }
        if let clock = exposureClock, ExposureMark.isDue(in: answer, generation: generation, clock: clock) {
            return readCaching(key, kind, defaultBits, known: answer)
        }
        return ReadRules.answerValue(read.info, read.bits)
    }

    /// A scalar read without a cached answer: a small or literal key's first read (or one the
    /// full table has no room for), or any other key that is not a native heap string.
    @inline(never)
    func readWithoutAnswer(_ key: String, _ kind: _FlagValueKind, _ defaultBits: UInt64) -> UInt64? {
        if keyedReads.enabled, KeyedReadCache.qualifies(key) {
            return readCaching(key, kind, defaultBits, known: nil)
        }
        return readThroughSnapshot(key, kind, defaultBits)
    }

    /// A scalar read through the snapshot alone, the flag table finding the key (heap keys).
    @inline(never)
    func readThroughSnapshot(_ key: String, _ kind: _FlagValueKind, _ defaultBits: UInt64) -> UInt64? {
        let lookup = withProtectedSnapshot { ReadRules.scalar($0, key, kind, exposureClock) }
        return ReadRules.finish(lookup, default: defaultBits, as: kind, sink: exposureSink, counters: readCounters)
    }

    /// A scalar read of a small or literal key through the snapshot, which then stores its
    /// answer: in `known`, or in a new entry when the key is served (a missing key takes no
    /// entry; a known one caches "not found" too, until the next snapshot).
    @inline(never)
    func readCaching(
        _ key: String, _ kind: _FlagValueKind, _ defaultBits: UInt64, known: UnsafeMutablePointer<hal_handle_cache>?
    ) -> UInt64? {
        let keyedReads = self.keyedReads
        let lookup = withProtectedSnapshot { snapshot -> ReadRules.ScalarLookup in
            let lookup = ReadRules.scalar(snapshot, key, kind, exposureClock)
            if let snapshot, let answer = known ?? (lookup.outcome == .flagNotFound ? nil : keyedReads.add(key, kind)) {
                ReadRules.cache(lookup, of: snapshot, in: answer)
            }
            return lookup
        }
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
