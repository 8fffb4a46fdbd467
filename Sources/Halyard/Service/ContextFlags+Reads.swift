// How a ContextFlags view reaches its snapshot for a read: the read methods are
// ``FlagReading``'s (written once, shared with FlagClient), their rules ``ReadRules``. The view
// holds its snapshot strongly, so no protection is needed around the lookup.

extension ContextFlags: FlagReading {
    /// Not API: Bool/Int/Double (the rules of ``FlagClient/bool(_:default:)``).
    public func _readScalar(_ key: String, as kind: _FlagValueKind, default defaultBits: UInt64) -> UInt64? {
        ReadRules.finish(
            withSnapshot { ReadRules.scalar($0, key, kind, exposureClock) }, default: defaultBits, as: kind,
            sink: environment.sink, counters: environment.counters)
    }

    /// Not API: any type, with the full result but the value.
    public func _readDetail(_ key: String, as kind: _FlagValueKind, default servedDefault: () -> JSONValue?)
        -> _FlagRead
    {
        var pending = ReadRules.PendingDetail()
        let read = withSnapshot { ReadRules.detail($0, key, kind, exposureClock, unavailable: unavailable, &pending) }
        ReadRules.finish(pending, servedDefault: servedDefault, sink: environment.sink, counters: environment.counters)
        return read
    }

    /// A view of an object-valued flag (see ``FlagObject``); a value of another type gives the
    /// defaults and records nothing.
    public func flagObject(_ key: String) -> FlagObject {
        guard let snapshot, ReadRules.servesObject(snapshot, key) else { return FlagObject(key: key, value: nil) }
        let result = evaluation(key, default: JSONValue.null)
        return FlagObject(key: key, value: result.errorCode == nil ? result.value : nil)
    }

    /// Records that the user saw flag `key` now (the rules of ``FlagClient/recordExposure(_:)``),
    /// with this context's fingerprint.
    public func recordExposure(_ key: String) {
        guard let sink = environment.sink, let snapshot,
            let (variant, reason, fingerprint, value, metadata) = ReadRules.exposureCandidate(snapshot, key)
        else { return }
        _ = sink.recordExposure(
            key: key, variant: variant, reason: reason, contextFingerprint: fingerprint, value: value, errorCode: nil,
            metadata: metadata)
    }

    /// The one place a read reaches the view's snapshot: at +0, through ``address`` (a `guard
    /// let` of ``snapshot`` would retain and release it on every read, an atomic on a line every
    /// view of a popular context shares); nil when the view serves defaults. The view's
    /// ``snapshot`` keeps it alive for as long as `body` runs.
    @inline(__always)
    func withSnapshot<Result>(_ body: (Unmanaged<Snapshot>?) -> Result) -> Result {
        let result = body(UnsafeRawPointer(bitPattern: address).map { Unmanaged<Snapshot>.fromOpaque($0) })
        _fixLifetime(snapshot)  // the owning reference outlives the unretained read, whatever inlining does
        return result
    }
}

// Reads by handle (docs/in-process.md, "Reading by handle"): the keyed reads' rules, with the
// key's index taken from the ``FlagKey``'s cache while the view's key table is the one it was
// resolved against (every view of one definitions generation shares one).

extension ContextFlags {
    /// Reads Bool flag `key` (the rules of ``bool(_:default:)``), found by index: no hashing
    /// while the key table is the one the handle last saw (``FlagKey``).
    @inline(__always)
    public func bool(_ key: FlagKey, default defaultValue: Bool) -> Bool {
        readScalar(key, .bool, defaultValue ? 1 : 0).map(Bool._fromBits) ?? defaultValue
    }

    /// Reads Int flag `key` (the rules of ``int(_:default:)``), found by index (``FlagKey``).
    @inline(__always)
    public func int(_ key: FlagKey, default defaultValue: Int) -> Int {
        readScalar(key, .int, UInt64(bitPattern: Int64(defaultValue))).map(Int._fromBits) ?? defaultValue
    }

    /// Reads Double flag `key` (the rules of ``double(_:default:)``), found by index
    /// (``FlagKey``).
    @inline(__always)
    public func double(_ key: FlagKey, default defaultValue: Double) -> Double {
        readScalar(key, .double, defaultValue.bitPattern).map(Double._fromBits) ?? defaultValue
    }

    /// Reads String flag `key` (the rules of ``string(_:default:)``), found by index
    /// (``FlagKey``).
    public func string(_ key: FlagKey, default defaultValue: String) -> String {
        evaluation(key, default: defaultValue).value
    }

    /// Reads flag `key` as `Value` with the full result (the rules of the keyed detail reads,
    /// ``boolDetail(_:default:)`` and the others), found by index (``FlagKey``).
    public func evaluation<Value: FlagValue>(_ key: FlagKey, default defaultValue: Value) -> Evaluation<Value> {
        let kind = Value._flagValueKind
        var pending = ReadRules.PendingDetail()
        let read = withSnapshot { snapshot -> _FlagRead in
            guard let snapshot else {
                return ReadRules.detail(nil, key.key, kind, exposureClock, unavailable: unavailable, &pending)
            }
            return ReadRules.detail(snapshot, found: ReadRules.index(snapshot, key), kind, exposureClock, &pending)
        }
        ReadRules.finish(
            pending, servedDefault: { ReadRules.exposedValue(of: defaultValue) }, sink: environment.sink,
            counters: environment.counters)
        return read._evaluation(key.key, defaultValue)
    }

    /// The scalar read by handle (``FlagReading/_readScalar(_:as:default:)``'s rules).
    @inline(__always)
    private func readScalar(_ key: FlagKey, _ kind: _FlagValueKind, _ defaultBits: UInt64) -> UInt64? {
        ReadRules.finish(
            withSnapshot { ReadRules.scalar($0, key, kind, exposureClock) }, default: defaultBits, as: kind,
            sink: environment.sink, counters: environment.counters)
    }
}
