import CHalyardAtomics

/// The read rules of SPEC §2, once, for every reader: ``FlagClient``'s keyed reads (which protect
/// the store's current snapshot with a hazard slot) and `ContextFlags`' reads (which hold their
/// snapshot strongly). Each read is two steps:
///
/// 1. a *lookup* (``scalar(_:_:_:_:)``, ``detail(_:_:_:_:_:)``) that runs while the snapshot is
///    guaranteed alive — under the caller's protection or reference — and does only Halyard's
///    own lookup and copy-out: the key probe, the type rule, the entry's bits, the detail
///    fields, and the exposure slot check (retaining the snapshot once per window when an
///    exposure is due);
/// 2. a *finish* (``finish(_:_:sink:counters:)``, the scalar branch in the callers) after the
///    protection ends: count a failure, record the exposure through the sink (a lock and the
///    injected clock: user code), and make the value (`_fromBits`/`_fromJSON`: user code for
///    conformances outside Halyard).
///
/// Everything is `@inline(__always)` and generic over the value type, so each call site
/// specialises to the code it had before the rules were shared: no closure, no existential and
/// no reference count on the fast path (the sink is touched only on the exposure slow path).
enum ReadRules {
    /// What a scalar lookup found.
    struct ScalarLookup {
        /// `.success`, or why the default is served.
        var outcome: ReadOutcome
        /// The value's bits (meaningful on success).
        var bits: UInt64
        /// The flag's index in the snapshot (meaningful when found).
        var index: Int
        /// A retained snapshot when an exposure is due (see ``recordRetainedExposure(_:_:_:)``).
        var exposure: UnsafeMutableRawPointer?
    }

    /// Bool/Int/Double lookup: entry kind and bits only, no `JSONValue`, no retain.
    @inline(__always)
    static func scalar(
        _ snapshot: Unmanaged<Snapshot>, _ key: String, _ requested: _FlagValueKind,
        _ exposureClock: UnsafePointer<hal_atomic_word>?
    ) -> ScalarLookup {
        let (table, entries, slots) = snapshot._withUnsafeGuaranteedRef { ($0.table, $0.entries, $0.exposureSlots) }
        guard let index = table.index(of: key) else {
            return ScalarLookup(outcome: .flagNotFound, bits: 0, index: 0, exposure: nil)
        }
        let kind = entries[index].kind
        guard kind.isReadable(as: requested) else {
            let outcome = kind.outcome(as: requested)
            // Code default (SPEC §2/§7): a successful read, so it records an exposure too.
            var exposure: UnsafeMutableRawPointer?
            if outcome == .codeDefault, let clock = exposureClock,
                hal_load_relaxed(slots + index) <= hal_load_relaxed(clock)
            {
                exposure = retainForExposure(snapshot)
            }
            return ScalarLookup(outcome: outcome, bits: 0, index: index, exposure: exposure)
        }
        let bits = entries[index].bits(as: requested)
        var exposure: UnsafeMutableRawPointer?
        if let clock = exposureClock, hal_load_relaxed(slots + index) <= hal_load_relaxed(clock) {
            exposure = retainForExposure(snapshot)
        }
        return ScalarLookup(outcome: .success, bits: bits, index: index, exposure: exposure)
    }

    /// What a detail read must finish after the protection ends. Kept apart from the
    /// `Evaluation` itself, which the caller holds in a local and returns as it is (a move):
    /// an evaluation carried inside another struct and copied out cost a retain and a release
    /// of each of its strings and its metadata (the detail read went from ~52 to ~97 ns).
    struct PendingValue {
        /// `.success`, or why the default is served.
        var outcome: ReadOutcome = .notReady
        var bits: UInt64 = 0
        var json: JSONValue? = nil
        var index: Int = 0
        /// A retained snapshot when an exposure is due.
        var exposure: UnsafeMutableRawPointer? = nil
    }

    /// Any-type lookup with the full result (the default stands in for the value; `pending`
    /// receives what ``finish(_:_:sink:counters:)`` needs). Fields are read one by one: copying
    /// the whole `ServedFlag` would retain and release every string and the metadata.
    @inline(__always)
    static func detail<Value: FlagValue>(
        _ snapshot: Unmanaged<Snapshot>, _ key: String, _ defaultValue: Value,
        _ exposureClock: UnsafePointer<hal_atomic_word>?, _ pending: inout PendingValue
    ) -> Evaluation<Value> {
        let requested = Value._flagValueKind
        let (table, entries, details, slots) = snapshot._withUnsafeGuaranteedRef {
            ($0.table, $0.entries, $0.details, $0.exposureSlots)
        }
        guard let index = table.index(of: key) else {
            pending.outcome = .flagNotFound
            return Evaluation(
                key: key, value: defaultValue, reason: .error, errorCode: .flagNotFound,
                errorMessage: "flag '\(key)' is not in the served flags")
        }
        let entry = entries[index]
        let outcome = entry.kind.outcome(as: requested)
        pending.outcome = outcome
        pending.index = index
        switch outcome {
        case .success:
            if let clock = exposureClock, hal_load_relaxed(slots + index) <= hal_load_relaxed(clock) {
                pending.exposure = retainForExposure(snapshot)
            }
            switch requested {
            case .bool, .int, .double: pending.bits = entry.bits(as: requested)
            case .string, .json: pending.json = snapshot._withUnsafeGuaranteedRef { $0.flags[index].value }
            }
            return Evaluation(
                key: key, value: defaultValue, variant: details[index].variant, reason: details[index].reason,
                metadata: details[index].metadata)
        case .codeDefault:
            // A successful read (SPEC §2): it records an exposure like any other (SPEC §7).
            if let clock = exposureClock, hal_load_relaxed(slots + index) <= hal_load_relaxed(clock) {
                pending.exposure = retainForExposure(snapshot)
            }
            return Evaluation(
                key: key, value: defaultValue, variant: details[index].variant, reason: details[index].reason,
                metadata: details[index].metadata)
        case .servedError:
            let flag = snapshot._withUnsafeGuaranteedRef { $0.flags[index] }
            return Evaluation(
                key: key, value: defaultValue, variant: flag.variant, reason: .error,
                errorCode: flag.errorCode ?? .general, errorMessage: flag.errorMessage, metadata: flag.metadata)
        case .typeMismatch, .flagNotFound, .notReady:
            pending.outcome = .typeMismatch
            let flag = snapshot._withUnsafeGuaranteedRef { $0.flags[index] }
            return Evaluation(
                key: key, value: defaultValue, variant: flag.variant, reason: .error, errorCode: .typeMismatch,
                errorMessage: "flag '\(key)' is \(flag.value?.typeName ?? "absent"), not \(requested)",
                metadata: flag.metadata)
        }
    }

    /// The second step of a detail read, after the protection ended: counts a failure, records
    /// a due exposure, and sets the value in `result` (user code may run here).
    @inline(__always)
    static func finish<Value: FlagValue>(
        _ result: inout Evaluation<Value>, _ pending: PendingValue, sink: (any ExposureSink)?, counters: ReadCounters
    ) {
        switch pending.outcome {
        case .success:
            if let exposure = pending.exposure { recordRetainedExposure(exposure, pending.index, sink) }
            switch Value._flagValueKind {
            case .bool, .int, .double: result.value = Value._fromBits(pending.bits)
            case .string, .json:
                if let value = pending.json.flatMap(Value._fromJSON) { result.value = value }
            }
        case .codeDefault:
            if let exposure = pending.exposure {
                recordRetainedExposure(exposure, pending.index, sink, servedDefault: exposedValue(of: result.value))
            }
        default:
            counters.count(pending.outcome)
        }
    }

    /// The end of a scalar read that serves the default: counts a failure, or, for a code
    /// default (a successful read), records its due exposure with the default as the value.
    @inline(__always)
    static func finishDefault<Value: FlagValue>(
        _ lookup: ScalarLookup, _ defaultValue: Value, sink: (any ExposureSink)?, counters: ReadCounters
    ) {
        if lookup.outcome == .codeDefault {
            if let exposure = lookup.exposure {
                recordRetainedExposure(exposure, lookup.index, sink, servedDefault: exposedValue(of: defaultValue))
            }
        } else {
            counters.count(lookup.outcome)
        }
    }

    /// A served default as the exposure's value (OTLP's `feature_flag.result.value`): Halyard's
    /// own value types only; nil for a `FlagValue` conformance outside Halyard.
    @inline(never)
    static func exposedValue<Value: FlagValue>(of value: Value) -> JSONValue? {
        switch value {
        case let v as Bool: .bool(v)
        case let v as Int: .int(Int64(v))
        case let v as Double: .double(v)
        case let v as String: .string(v)
        case let v as JSONValue: v
        default: nil
        }
    }

    /// The result of a read when there are no values to read: the default with `code`
    /// (`PROVIDER_NOT_READY`, `PROVIDER_FATAL` or `INVALID_CONTEXT`), reason `ERROR`.
    static func unavailable<Value>(_ key: String, _ defaultValue: Value, _ code: FlagErrorCode)
        -> Evaluation<Value>
    {
        let message: String
        switch code {
        case .providerFatal: message = "the client cannot serve values"
        case .invalidContext: message = "the evaluation context is invalid; nothing was fetched for it"
        default: message = "no flag values have been loaded yet"
        }
        return Evaluation(key: key, value: defaultValue, reason: .error, errorCode: code, errorMessage: message)
    }

    /// The variant, reason and fingerprint an explicit `recordExposure(key)` records, or nil
    /// when the flag is not served or was served with an error. Lookup and copy-out only.
    static func exposureCandidate(_ snapshot: Snapshot, _ key: String)
        -> (variant: String?, reason: EvaluationReason, fingerprint: String, value: JSONValue?, metadata: FlagMetadata)?
    {
        guard let index = snapshot.index(of: key), snapshot.entries[index].kind != .error else { return nil }
        let detail = snapshot.details[index]
        // The value only when there is no variant, as for reads (the OTLP exporter).
        let value = detail.variant == nil ? snapshot.flags[index].value : nil
        return (detail.variant, detail.reason, snapshot.contextFingerprint, value, detail.metadata)
    }

    /// Whether `key` is served in `snapshot` with an object value (lookup only).
    static func servesObject(_ snapshot: Snapshot, _ key: String) -> Bool {
        guard let index = snapshot.index(of: key), case .object? = snapshot.flags[index].value else { return false }
        return true
    }

    /// Retains the snapshot for an exposure recorded after the protection ends (once per
    /// window per flag). Out of line and taking `Unmanaged`, so the fast path around it keeps
    /// the snapshot at +0.
    @inline(never)
    static func retainForExposure(_ snapshot: Unmanaged<Snapshot>) -> UnsafeMutableRawPointer {
        snapshot.retain().toOpaque()
    }

    /// The exposure slow path, outside any protection: `retained` is a snapshot retained by
    /// ``retainForExposure(_:)``; this records the exposure of flag `index` with the sink
    /// (which takes its lock and reads the injected clock), stores the deadline it returns in
    /// the snapshot's slot, and releases the snapshot. Returns the deadline.
    @inline(never)
    @discardableResult
    static func recordRetainedExposure(
        _ retained: UnsafeMutableRawPointer, _ index: Int, _ sink: (any ExposureSink)?,
        servedDefault: JSONValue? = nil
    ) -> UInt32 {
        let unmanaged = Unmanaged<Snapshot>.fromOpaque(retained)
        defer { unmanaged.release() }
        return unmanaged._withUnsafeGuaranteedRef { snapshot -> UInt32 in
            guard let sink else { return 0 }
            let flag = snapshot.flags[index]
            // The value only when there is no variant (the OTLP exporter's
            // `feature_flag.result.value`); a variant names it. A flag without a value served
            // the caller's default: that is the value.
            let deadline = sink.recordExposure(
                key: flag.key, variant: flag.variant, reason: flag.reason,
                contextFingerprint: snapshot.contextFingerprint,
                value: flag.variant == nil ? (flag.value ?? servedDefault) : nil,
                errorCode: flag.errorCode, metadata: flag.metadata)
            hal_store_relaxed(snapshot.exposureSlots + index, UInt(deadline))
            return deadline
        }
    }
}
