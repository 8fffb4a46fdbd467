// The typed reads of a ContextFlags view: the rules are ``ReadRules`` (shared with FlagClient).
// The view holds its snapshot strongly, so no protection is needed around the lookup.

extension ContextFlags {
    /// Reads a Bool flag (the rules of ``FlagClient/bool(_:default:)``).
    public func bool(_ key: String, default defaultValue: Bool) -> Bool {
        scalar(key, defaultValue)
    }

    /// Reads an Int flag (the rules of ``FlagClient/int(_:default:)``).
    public func int(_ key: String, default defaultValue: Int) -> Int {
        scalar(key, defaultValue)
    }

    /// Reads a Double flag (the rules of ``FlagClient/double(_:default:)``).
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

    /// Reads a flag of any JSON type with the full result.
    public func detail(_ key: String, default defaultValue: JSONValue) -> Evaluation<JSONValue> {
        evaluate(key, defaultValue)
    }

    /// Reads a Bool flag with the full result.
    public func boolDetail(_ key: String, default defaultValue: Bool) -> Evaluation<Bool> {
        evaluate(key, defaultValue)
    }

    /// Reads a String flag with the full result.
    public func stringDetail(_ key: String, default defaultValue: String) -> Evaluation<String> {
        evaluate(key, defaultValue)
    }

    /// Reads an Int flag with the full result.
    public func intDetail(_ key: String, default defaultValue: Int) -> Evaluation<Int> {
        evaluate(key, defaultValue)
    }

    /// Reads a Double flag with the full result.
    public func doubleDetail(_ key: String, default defaultValue: Double) -> Evaluation<Double> {
        evaluate(key, defaultValue)
    }

    /// Reads a flag as any ``FlagValue`` type with the full result.
    public func evaluation<Value: FlagValue>(_ key: String, default defaultValue: Value) -> Evaluation<Value> {
        evaluate(key, defaultValue)
    }

    /// A view of an object-valued flag (see ``FlagObject``); a value of another type gives the
    /// defaults and records nothing.
    public func flagObject(_ key: String) -> FlagObject {
        guard let snapshot, ReadRules.servesObject(snapshot, key) else { return FlagObject(key: key, value: nil) }
        let result = evaluate(key, JSONValue.null)
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

    // MARK: - The read path

    @inline(__always)
    func scalar<Value: FlagValue>(_ key: String, _ defaultValue: Value) -> Value {
        guard let raw = UnsafeRawPointer(bitPattern: address) else {
            environment.counters.count(ReadOutcome.notReady)
            return defaultValue
        }
        let lookup = ReadRules.scalar(Unmanaged<Snapshot>.fromOpaque(raw), key, Value._flagValueKind, exposureClock)
        guard lookup.outcome == .success else {
            ReadRules.finishDefault(lookup, defaultValue, sink: environment.sink, counters: environment.counters)
            return defaultValue
        }
        if let exposure = lookup.exposure {
            ReadRules.recordRetainedExposure(exposure, lookup.index, environment.sink)
        }
        return Value._fromBits(lookup.bits)
    }

    func evaluate<Value: FlagValue>(_ key: String, _ defaultValue: Value) -> Evaluation<Value> {
        guard let raw = UnsafeRawPointer(bitPattern: address) else {
            environment.counters.count(unavailable)
            return ReadRules.unavailable(key, defaultValue, unavailable)
        }
        var pending = ReadRules.PendingValue()
        var result = ReadRules.detail(Unmanaged<Snapshot>.fromOpaque(raw), key, defaultValue, exposureClock, &pending)
        ReadRules.finish(&result, pending, sink: environment.sink, counters: environment.counters)
        return result
    }
}
