import CHalyardAtomics

/// The read rules of SPEC §2, once, for every reader: ``FlagClient``'s keyed reads (which protect
/// the store's current snapshot with a hazard slot), `ContextFlags`' reads (which hold their
/// snapshot strongly) and a held snapshot's (`Snapshot.read`, for `HalyardTesting`). The public
/// read methods are ``FlagReading``'s; each conformer's two requirements are these two steps:
///
/// 1. a *lookup* (``scalar(_:_:_:_:)``, ``detail(_:_:_:_:unavailable:_:)``) that runs while the
///    snapshot is guaranteed alive — under the caller's protection or reference — and does only
///    Halyard's own lookup and copy-out: the key probe, the type rule, the entry's bits, the
///    flag's detail object (one retain), and the exposure slot check (retaining the snapshot
///    once per window when an exposure is due);
/// 2. a *finish* (``finish(_:default:as:sink:counters:)``, ``finish(_:servedDefault:sink:counters:)``) after the protection ends: count a failure and
///    record the exposure through the sink (a lock and the injected clock: user code). The value
///    is made after that, in the `FlagReading` method (`_fromBits`/`_fromJSON`: user code for
///    conformances outside Halyard).
///
/// Everything is `@inline(__always)`, so each conformer's requirement compiles to the code it
/// had before the rules were shared: no closure, no existential and no reference count on the
/// scalar path (the sink is touched only on the exposure slow path).
enum ReadRules {
    /// What a scalar lookup found.
    struct ScalarLookup {
        /// `.success`, or why the default is served.
        var outcome: ReadOutcome
        /// The value's bits (meaningful on success).
        var bits: UInt64
        /// The flag's index in the snapshot (meaningful when found).
        var index: Int
        /// A retained snapshot when an exposure is due (see ``recordRetainedExposure(_:_:_:servedDefault:)``).
        var exposure: UnsafeMutableRawPointer?
    }

    /// Bool/Int/Double lookup: entry kind and bits only, no `JSONValue`, no retain. A nil
    /// snapshot (no values yet, or none for the context) is `.notReady`.
    @inline(__always)
    static func scalar(
        _ snapshot: Unmanaged<Snapshot>?, _ key: String, _ requested: _FlagValueKind,
        _ exposureClock: UnsafePointer<hal_atomic_word>?
    ) -> ScalarLookup {
        guard let snapshot else { return ScalarLookup(outcome: .notReady, bits: 0, index: 0, exposure: nil) }
        let table = snapshot._withUnsafeGuaranteedRef { $0.table }
        return scalar(snapshot, found: table.index(of: key), requested, exposureClock)
    }

    /// ``scalar(_:_:_:_:)`` by handle: the key's index from ``FlagKey``'s cache when it was
    /// resolved against this snapshot's key table, else looked up once and remembered.
    @inline(__always)
    static func scalar(
        _ snapshot: Unmanaged<Snapshot>?, _ key: FlagKey, _ requested: _FlagValueKind,
        _ exposureClock: UnsafePointer<hal_atomic_word>?
    ) -> ScalarLookup {
        guard let snapshot else { return ScalarLookup(outcome: .notReady, bits: 0, index: 0, exposure: nil) }
        return scalar(snapshot, found: index(snapshot, key), requested, exposureClock)
    }

    /// The index of `key` in `snapshot` (nil: not served), through the handle's cache.
    @inline(__always)
    static func index(_ snapshot: Unmanaged<Snapshot>, _ key: FlagKey) -> Int? {
        let (table, serial) = snapshot._withUnsafeGuaranteedRef { ($0.table, $0.tableSerial) }
        return key.slot(in: serial) { table.index(of: $0) }
    }

    /// The scalar lookup once the key's index is known (nil: the snapshot does not serve it).
    @inline(__always)
    static func scalar(
        _ snapshot: Unmanaged<Snapshot>, found: Int?, _ requested: _FlagValueKind,
        _ exposureClock: UnsafePointer<hal_atomic_word>?
    ) -> ScalarLookup {
        let (entries, slots) = snapshot._withUnsafeGuaranteedRef { ($0.entries, $0.exposureSlots) }
        guard let index = found else {
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

    /// The second step of a scalar read, after the protection ended: counts a failure (nil: the
    /// default is served), or records a due exposure and returns the bits. A code default is a
    /// successful read (SPEC §2/§7): nil, and its due exposure is recorded with the caller's
    /// default (`defaultBits`, as `kind`) as the value, out of line.
    @inline(__always)
    static func finish(
        _ lookup: ScalarLookup, default defaultBits: UInt64, as kind: _FlagValueKind, sink: (any ExposureSink)?,
        counters: ReadCounters
    ) -> UInt64? {
        guard lookup.outcome == .success else {
            if lookup.outcome != .codeDefault {
                counters.count(lookup.outcome)
            } else if let exposure = lookup.exposure {
                recordRetainedDefaultExposure(exposure, lookup.index, sink, bits: defaultBits, as: kind)
            }
            return nil
        }
        if let exposure = lookup.exposure { recordRetainedExposure(exposure, lookup.index, sink) }
        return lookup.bits
    }

    /// What a detail read must finish after the protection ends (the read itself, a
    /// ``_FlagRead``, is returned as it is: a move).
    struct PendingDetail {
        /// `.success`, or why the default is served.
        var outcome: ReadOutcome = .notReady
        var index: Int = 0
        /// A retained snapshot when an exposure is due.
        var exposure: UnsafeMutableRawPointer? = nil
    }

    /// Any-type lookup with the full result but the value: the served flag's detail (one
    /// retain: the ``EvaluationDetail`` the snapshot built for it), the form that says which of
    /// its fields the evaluation shows, and the value's bits on success (a String or JSON value
    /// is made from the detail's, which the read holds, after the protection ends). `pending`
    /// receives what ``finish(_:servedDefault:sink:counters:)`` needs. A nil snapshot serves `unavailable()`
    /// (read only then).
    @inline(__always)
    static func detail(
        _ snapshot: Unmanaged<Snapshot>?, _ key: String, _ requested: _FlagValueKind,
        _ exposureClock: UnsafePointer<hal_atomic_word>?, unavailable: @autoclosure () -> FlagErrorCode,
        _ pending: inout PendingDetail
    ) -> _FlagRead {
        guard let snapshot else {
            pending.outcome = .notReady
            return _FlagRead(detail: nil, form: form(unavailable: unavailable()))
        }
        let table = snapshot._withUnsafeGuaranteedRef { $0.table }
        return detail(snapshot, found: table.index(of: key), requested, exposureClock, &pending)
    }

    /// ``detail(_:_:_:_:unavailable:_:)`` once the key's index is known (nil: the snapshot does
    /// not serve it).
    static func detail(
        _ snapshot: Unmanaged<Snapshot>, found: Int?, _ requested: _FlagValueKind,
        _ exposureClock: UnsafePointer<hal_atomic_word>?, _ pending: inout PendingDetail
    ) -> _FlagRead {
        let (entries, details, slots) = snapshot._withUnsafeGuaranteedRef {
            ($0.entries, $0.details, $0.exposureSlots)
        }
        guard let index = found else {
            pending.outcome = .flagNotFound
            return _FlagRead(detail: nil, form: .flagNotFound)
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
            // Bool/Int/Double: the bits; String/JSON: the caller makes the value from the
            // detail's (which it holds), after the protection ends.
            return _FlagRead(served: true, bits: entry.bits(as: requested), detail: details[index], form: .served)
        case .codeDefault:
            // A successful read (SPEC §2): it records an exposure like any other (SPEC §7), with
            // the caller's default as the value (see ``finish(_:servedDefault:sink:counters:)``).
            if let clock = exposureClock, hal_load_relaxed(slots + index) <= hal_load_relaxed(clock) {
                pending.exposure = retainForExposure(snapshot)
            }
            return _FlagRead(detail: details[index], form: .served)
        case .servedError:
            return _FlagRead(detail: details[index], form: .servedError)
        case .typeMismatch, .flagNotFound, .notReady:
            pending.outcome = .typeMismatch
            return _FlagRead(detail: details[index], form: .typeMismatch(requested))
        }
    }

    /// The second step of a detail read, after the protection ended: counts a failure and
    /// records a due exposure (the caller then makes the value: user code may run there). A
    /// code default records too, with `servedDefault()` (the caller's default as JSON) as the
    /// value; it is called only then, on the exposure slow path.
    @inline(__always)
    static func finish(
        _ pending: PendingDetail, servedDefault: () -> JSONValue?, sink: (any ExposureSink)?, counters: ReadCounters
    ) {
        switch pending.outcome {
        case .success:
            if let exposure = pending.exposure { recordRetainedExposure(exposure, pending.index, sink) }
        case .codeDefault:
            if let exposure = pending.exposure {
                recordRetainedDefaultExposure(exposure, pending.index, sink, servedDefault: servedDefault)
            }
        default:
            counters.count(pending.outcome)
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

    /// A scalar default's bits (see ``FlagReading/_readScalar(_:as:default:)``) as the
    /// exposure's value.
    static func exposedValue(bits: UInt64, as kind: _FlagValueKind) -> JSONValue? {
        switch kind {
        case .bool: .bool(Bool._fromBits(bits))
        case .int: .int(Int64(Int._fromBits(bits)))
        case .double: .double(Double._fromBits(bits))
        case .string, .json: nil
        }
    }

    /// The form of a read when there are no values to read: `PROVIDER_NOT_READY`,
    /// `PROVIDER_FATAL` or `INVALID_CONTEXT`, reason `ERROR`.
    static func form(unavailable code: FlagErrorCode) -> EvaluationDetail.Form {
        switch code {
        case .providerFatal: .providerFatal
        case .invalidContext: .invalidContext
        default: .providerNotReady
        }
    }

    /// The variant, reason and fingerprint an explicit `recordExposure(key)` records, or nil
    /// when the flag is not served or was served with an error. Lookup and copy-out only.
    static func exposureCandidate(_ snapshot: Snapshot, _ key: String)
        -> (variant: String?, reason: EvaluationReason, fingerprint: String, value: JSONValue?, metadata: FlagMetadata)?
    {
        guard let index = snapshot.index(of: key), snapshot.entries[index].kind != .error else { return nil }
        let detail = snapshot.details[index]
        // The value only when there is no variant, as for reads (the OTLP exporter).
        let value = detail.variant == nil ? detail.value : nil
        return (detail.variant, detail.reason, snapshot.contextFingerprint, value, detail.metadata)
    }

    /// Whether `key` is served in `snapshot` with an object value (lookup only).
    static func servesObject(_ snapshot: Snapshot, _ key: String) -> Bool {
        guard let index = snapshot.index(of: key), case .object? = snapshot.details[index].value else {
            return false
        }
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
            let flag = snapshot.details[index]
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

    /// ``recordRetainedExposure(_:_:_:servedDefault:)`` for a scalar read that served the code
    /// default: the default's bits made a value here, on the slow path.
    @inline(never)
    static func recordRetainedDefaultExposure(
        _ retained: UnsafeMutableRawPointer, _ index: Int, _ sink: (any ExposureSink)?, bits: UInt64,
        as kind: _FlagValueKind
    ) {
        recordRetainedExposure(retained, index, sink, servedDefault: exposedValue(bits: bits, as: kind))
    }

    /// ``recordRetainedExposure(_:_:_:servedDefault:)`` for a detail read that served the code
    /// default: `servedDefault` (the caller's default as JSON) is called here, on the slow path.
    @inline(never)
    static func recordRetainedDefaultExposure(
        _ retained: UnsafeMutableRawPointer, _ index: Int, _ sink: (any ExposureSink)?,
        servedDefault: () -> JSONValue?
    ) {
        recordRetainedExposure(retained, index, sink, servedDefault: servedDefault())
    }
}
