import CHalyardAtomics

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
    // Under a snapshot's protection only Halyard's own lookup and copy-out run
    // (docs/architecture.md): no user code (the injected clock behind the exposure recorder,
    // `FlagValue` conformances), no lock, no read of another store. A read that must call out
    // copies what it needs — or, on the exposure slow path (once per window), retains the
    // snapshot — ends the protection, then calls out.

    /// Bool/Int/Double: entry kind and bits only, no `JSONValue`, no retain.
    ///
    /// Written without a closure (``SnapshotStore/protect()``): the snapshot's table, entries
    /// and exposure slots are raw pointers, taken at +0, so between protect and end the read
    /// touches no reference and nothing but Halyard's lookup runs.
    @inline(__always)
    func scalar<Value: FlagValue>(_ key: String, _ defaultValue: Value) -> Value {
        let requested = Value._flagValueKind
        let (record, raw) = store.protect()
        guard let raw else {
            SnapshotStore.endProtection(record)
            countFailure(key, requested)
            return defaultValue
        }
        let snapshot = Unmanaged<Snapshot>.fromOpaque(raw)
        let (table, entries, slots) = snapshot._withUnsafeGuaranteedRef { ($0.table, $0.entries, $0.exposureSlots) }
        guard let index = table.index(of: key), entries[index].kind.isReadable(as: requested) else {
            SnapshotStore.endProtection(record)
            countFailure(key, requested)
            return defaultValue
        }
        let bits = entries[index].bits(as: requested)
        var exposure: UnsafeMutableRawPointer?
        if let clock = exposureClock, hal_load_relaxed(slots + index) <= hal_load_relaxed(clock) {
            exposure = Self.retainForExposure(snapshot)
        }
        SnapshotStore.endProtection(record)
        // The protection has ended: the recorder (a lock, the injected clock) may run now.
        if let exposure { recordRetainedExposure(exposure, index) }
        return Value._fromBits(bits)
    }

    /// Any type, with the full result.
    ///
    /// The result is built under the protection from Halyard's own data (the default stands in
    /// for the value); the value itself is made after the protection ends, because for a
    /// `FlagValue` conformance outside Halyard `_fromBits` / `_fromJSON` are user code. Like
    /// ``scalar(_:_:)`` it protects without a closure and reaches the snapshot's data through
    /// raw pointers taken at +0.
    func evaluate<Value: FlagValue>(_ key: String, _ defaultValue: Value) -> Evaluation<Value> {
        let requested = Value._flagValueKind
        let (record, raw) = store.protect()
        guard let raw else {
            SnapshotStore.endProtection(record)
            countFailure(.providerNotReady)
            return notReadyEvaluation(key, defaultValue)
        }
        let snapshot = Unmanaged<Snapshot>.fromOpaque(raw)
        let (table, entries, details, slots) = snapshot._withUnsafeGuaranteedRef {
            ($0.table, $0.entries, $0.details, $0.exposureSlots)
        }
        guard let index = table.index(of: key) else {
            SnapshotStore.endProtection(record)
            countFailure(.flagNotFound)
            return Evaluation(
                key: key, value: defaultValue, reason: .error, errorCode: .flagNotFound,
                errorMessage: "flag '\(key)' is not in the served flags")
        }
        // Fields are read one by one: copying the whole ServedFlag would retain and release
        // every string and the metadata dictionary on each read.
        let entry = entries[index]
        switch entry.kind.outcome(as: requested) {
        case .success:
            var exposure: UnsafeMutableRawPointer?
            if let clock = exposureClock, hal_load_relaxed(slots + index) <= hal_load_relaxed(clock) {
                exposure = Self.retainForExposure(snapshot)
            }
            var json: JSONValue?
            var bits: UInt64 = 0
            switch requested {
            case .bool, .int, .double: bits = entry.bits(as: requested)
            case .string, .json: json = snapshot._withUnsafeGuaranteedRef { $0.flags[index].value }
            }
            var result = Evaluation(
                key: key, value: defaultValue, variant: details[index].variant, reason: details[index].reason,
                metadata: details[index].metadata)
            SnapshotStore.endProtection(record)
            // The protection has ended: from here on, user code may run.
            if let exposure { recordRetainedExposure(exposure, index) }
            switch requested {
            case .bool, .int, .double: result.value = Value._fromBits(bits)
            case .string, .json:
                if let value = json.flatMap(Value._fromJSON) { result.value = value }
            }
            return result
        case .codeDefault:
            let result = Evaluation(
                key: key, value: defaultValue, variant: details[index].variant, reason: details[index].reason,
                metadata: details[index].metadata)
            SnapshotStore.endProtection(record)
            return result
        case .servedError:
            let flag = snapshot._withUnsafeGuaranteedRef { $0.flags[index] }
            SnapshotStore.endProtection(record)
            countFailure(.general)
            return Evaluation(
                key: key, value: defaultValue, variant: flag.variant, reason: .error,
                errorCode: flag.errorCode ?? .general, errorMessage: flag.errorMessage, metadata: flag.metadata)
        case .typeMismatch, .flagNotFound, .notReady:
            let flag = snapshot._withUnsafeGuaranteedRef { $0.flags[index] }
            SnapshotStore.endProtection(record)
            countFailure(.typeMismatch)
            return Evaluation(
                key: key, value: defaultValue, variant: flag.variant, reason: .error, errorCode: .typeMismatch,
                errorMessage: "flag '\(key)' is \(flag.value?.typeName ?? "absent"), not \(requested)",
                metadata: flag.metadata)
        }
    }

    func notReadyEvaluation<Value>(_ key: String, _ defaultValue: Value) -> Evaluation<Value> {
        let fatal = readCounters.isFatal
        return Evaluation(
            key: key, value: defaultValue, reason: .error,
            errorCode: fatal ? .providerFatal : .providerNotReady,
            errorMessage: fatal ? "the client cannot serve values" : "no flag values have been loaded yet")
    }

    /// Retains the snapshot for an exposure recorded after the protection ends (once per
    /// window per flag). Out of line and taking `Unmanaged`, so the fast path around it keeps
    /// the snapshot at +0.
    @inline(never)
    static func retainForExposure(_ snapshot: Unmanaged<Snapshot>) -> UnsafeMutableRawPointer {
        snapshot.retain().toOpaque()
    }

    /// The exposure slow path, outside any protection: `retained` is a snapshot retained by
    /// ``retainForExposure(_:)``; this records the exposure of flag `index` with the recorder
    /// (which takes its lock and reads the injected clock), stores the deadline it returns in
    /// the snapshot's slot, and releases the snapshot. Returns the deadline.
    @inline(never)
    @discardableResult
    func recordRetainedExposure(_ retained: UnsafeMutableRawPointer, _ index: Int) -> UInt32 {
        let unmanaged = Unmanaged<Snapshot>.fromOpaque(retained)
        defer { unmanaged.release() }
        return unmanaged._withUnsafeGuaranteedRef { snapshot -> UInt32 in
            guard let sink = exposureSink else { return 0 }
            let flag = snapshot.flags[index]
            // The value only when there is no variant (the OTLP exporter's
            // `feature_flag.result.value`); a variant names it.
            let deadline = sink.recordExposure(
                key: flag.key, variant: flag.variant, reason: flag.reason,
                contextFingerprint: snapshot.contextFingerprint, value: flag.variant == nil ? flag.value : nil,
                errorCode: flag.errorCode)
            hal_store_relaxed(snapshot.exposureSlots + index, UInt(deadline))
            return deadline
        }
    }

    /// Slow path of a scalar read that served the default: classify and count it.
    @inline(never)
    func countFailure(_ key: String, _ requested: _FlagValueKind) {
        let outcome = store.withCurrent { snapshot -> ReadOutcome in
            guard let snapshot else { return .notReady }
            guard let index = snapshot.index(of: key) else { return .flagNotFound }
            return snapshot.entries[index].kind.outcome(as: requested)
        }
        switch outcome {
        case .notReady: readCounters.increment(.notReady)
        case .flagNotFound: readCounters.increment(.flagNotFound)
        case .typeMismatch: readCounters.increment(.typeMismatch)
        case .servedError: readCounters.increment(.servedError)
        case .success, .codeDefault: break
        }
    }

    @inline(never)
    func countFailure(_ code: FlagErrorCode) {
        switch code {
        case .providerNotReady, .providerFatal: readCounters.increment(.notReady)
        case .flagNotFound: readCounters.increment(.flagNotFound)
        case .typeMismatch: readCounters.increment(.typeMismatch)
        default: readCounters.increment(.servedError)
        }
    }
}
