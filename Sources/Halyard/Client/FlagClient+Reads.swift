// The typed reads (their rules: README, docs/architecture.md). Every read answers from one
// snapshot, protected by the calling thread's hazard slot for the few nanoseconds it takes (no
// lock, no retain, no allocation for Bool/Int/Double).

extension FlagClient {
    /// Reads a Bool flag. Returns `default` when there are no values yet, the flag is missing,
    /// is not a JSON boolean, or was served with an error or without a value.
    ///
    /// ```swift
    /// if flags.bool("checkout.new", default: false) { showNewCheckout() }
    /// ```
    public func bool(_ key: String, default defaultValue: Bool) -> Bool {
        scalar(key, defaultValue)
    }

    /// Reads an Int flag. Only JSON numbers written without fraction or exponent that fit in
    /// 64 bits are integers; a fractional number gives `default` (`TYPE_MISMATCH`).
    public func int(_ key: String, default defaultValue: Int) -> Int {
        scalar(key, defaultValue)
    }

    /// Reads a Double flag. Any JSON number is accepted; integers widen.
    public func double(_ key: String, default defaultValue: Double) -> Double {
        scalar(key, defaultValue)
    }

    /// Reads a String flag.
    public func string(_ key: String, default defaultValue: String) -> String {
        evaluate(key, defaultValue).value
    }

    /// Reads a flag of any JSON type.
    public func json(_ key: String, default defaultValue: JSONValue) -> JSONValue {
        evaluate(key, defaultValue).value
    }

    /// Reads a flag of any JSON type with the full result: value, variant, reason, error code
    /// and metadata.
    ///
    /// ```swift
    /// let banner = flags.detail("banner", default: .string("x"))
    /// print(banner.reason, banner.variant ?? "-")
    /// ```
    public func detail(_ key: String, default defaultValue: JSONValue) -> Evaluation<JSONValue> {
        evaluate(key, defaultValue)
    }

    /// Reads a Bool flag with the full result (same rules as ``bool(_:default:)``).
    public func boolDetail(_ key: String, default defaultValue: Bool) -> Evaluation<Bool> {
        evaluate(key, defaultValue)
    }

    /// Reads a String flag with the full result (same rules as ``string(_:default:)``).
    public func stringDetail(_ key: String, default defaultValue: String) -> Evaluation<String> {
        evaluate(key, defaultValue)
    }

    /// Reads an Int flag with the full result (same rules as ``int(_:default:)``).
    public func intDetail(_ key: String, default defaultValue: Int) -> Evaluation<Int> {
        evaluate(key, defaultValue)
    }

    /// Reads a Double flag with the full result (same rules as ``double(_:default:)``).
    public func doubleDetail(_ key: String, default defaultValue: Double) -> Evaluation<Double> {
        evaluate(key, defaultValue)
    }

    /// Reads a flag as any ``FlagValue`` type with the full result.
    public func evaluation<Value: FlagValue>(_ key: String, default defaultValue: Value) -> Evaluation<Value> {
        evaluate(key, defaultValue)
    }

    // MARK: - The read path
    //
    // The rules themselves are in ``ReadRules`` (shared with `ContextFlags`). Under a
    // snapshot's protection only Halyard's own lookup and copy-out run (docs/architecture.md):
    // no user code (the injected clock behind the exposure recorder, `FlagValue`
    // conformances), no lock, no read of another store. A read that must call out copies what
    // it needs — or, on the exposure slow path (once per window), retains the snapshot — ends
    // the protection, then calls out.

    /// Bool/Int/Double: entry kind and bits only, no `JSONValue`, no retain.
    ///
    /// Written without a closure (``SnapshotStore/protect()``): the snapshot's table, entries
    /// and exposure slots are raw pointers, taken at +0, so between protect and end the read
    /// touches no reference and nothing but Halyard's lookup runs.
    @inline(__always)
    func scalar<Value: FlagValue>(_ key: String, _ defaultValue: Value) -> Value {
        let (record, raw) = store.protect()
        guard let raw else {
            SnapshotStore.endProtection(record)
            readCounters.count(ReadOutcome.notReady)
            return defaultValue
        }
        let lookup = ReadRules.scalar(
            Unmanaged<Snapshot>.fromOpaque(raw), key, Value._flagValueKind, exposureClock)
        SnapshotStore.endProtection(record)
        // The protection has ended: the recorder (a lock, the injected clock) may run now.
        guard lookup.outcome == .success else {
            ReadRules.finishDefault(lookup, defaultValue, sink: exposureSink, counters: readCounters)
            return defaultValue
        }
        if let exposure = lookup.exposure { ReadRules.recordRetainedExposure(exposure, lookup.index, exposureSink) }
        return Value._fromBits(lookup.bits)
    }

    /// Any type, with the full result.
    ///
    /// The result is built under the protection from Halyard's own data (the default stands in
    /// for the value); the value itself is made after the protection ends, because for a
    /// `FlagValue` conformance outside Halyard `_fromBits` / `_fromJSON` are user code.
    func evaluate<Value: FlagValue>(_ key: String, _ defaultValue: Value) -> Evaluation<Value> {
        let (record, raw) = store.protect()
        guard let raw else {
            SnapshotStore.endProtection(record)
            readCounters.count(FlagErrorCode.providerNotReady)
            return notReadyEvaluation(key, defaultValue)
        }
        var pending = ReadRules.PendingValue()
        var result = ReadRules.detail(
            Unmanaged<Snapshot>.fromOpaque(raw), key, defaultValue, exposureClock, &pending)
        SnapshotStore.endProtection(record)
        // The protection has ended: from here on, user code may run.
        ReadRules.finish(&result, pending, sink: exposureSink, counters: readCounters)
        return result
    }

    func notReadyEvaluation<Value>(_ key: String, _ defaultValue: Value) -> Evaluation<Value> {
        ReadRules.unavailable(key, defaultValue, readCounters.isFatal ? .providerFatal : .providerNotReady)
    }

    /// The exposure slow path for handles (see ``ReadRules/recordRetainedExposure(_:_:_:)``).
    @discardableResult
    func recordRetainedExposure(_ retained: UnsafeMutableRawPointer, _ index: Int, servedDefault: JSONValue? = nil)
        -> UInt32
    {
        ReadRules.recordRetainedExposure(retained, index, exposureSink, servedDefault: servedDefault)
    }
}
