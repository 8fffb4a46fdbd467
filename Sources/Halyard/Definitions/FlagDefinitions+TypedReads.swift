// Typed value reads of flag definitions: the value only, answered from the results built at
// load (docs/definitions.md, "Evaluation cost"), with no ServedFlag made or copied.

extension FlagDefinitions {
    /// Evaluates Bool flag `key` for `context`: its value, or `default` when the flag is
    /// missing, disabled, has no default variant, fails, or is not a JSON boolean (what
    /// `ContextFlags.bool(_:default:)` of a service over these definitions answers).
    /// `timestamp` is `$flagd.timestamp` as in ``evaluate(_:context:as:timestamp:)``.
    ///
    /// Cheaper than ``evaluate(_:context:as:timestamp:)``: a static flag's value, and each
    /// variant's, are read in place by slot. Use `evaluate` for the reason, variant or error.
    public func bool(_ key: String, context: EvaluationContext, default defaultValue: Bool, timestamp: Int64? = nil)
        -> Bool
    {
        scalar(key, context, timestamp).bool ?? defaultValue
    }

    /// Evaluates Int flag `key` for `context` (the rules of ``bool(_:context:default:timestamp:)``;
    /// only a JSON integer is read, a fractional number gives `default`).
    public func int(_ key: String, context: EvaluationContext, default defaultValue: Int, timestamp: Int64? = nil)
        -> Int
    {
        scalar(key, context, timestamp).int ?? defaultValue
    }

    /// Evaluates Double flag `key` for `context` (the rules of
    /// ``bool(_:context:default:timestamp:)``; any JSON number, an integer widened).
    public func double(
        _ key: String, context: EvaluationContext, default defaultValue: Double, timestamp: Int64? = nil
    ) -> Double {
        scalar(key, context, timestamp).double ?? defaultValue
    }

    /// Evaluates String flag `key` for `context` (the rules of
    /// ``bool(_:context:default:timestamp:)``; only a JSON string is read).
    public func string(
        _ key: String, context: EvaluationContext, default defaultValue: String, timestamp: Int64? = nil
    ) -> String {
        string(slot: index.slot(of: key), context, defaultValue, timestamp)
    }

    // MARK: By handle

    /// ``bool(_:context:default:timestamp:)`` of the flag `key` names, found by slot: the key is
    /// looked up once per definitions value, not at every read (``FlagKey``).
    public func bool(_ key: FlagKey, context: EvaluationContext, default defaultValue: Bool, timestamp: Int64? = nil)
        -> Bool
    {
        scalar(slot: slot(of: key), context, timestamp).bool ?? defaultValue
    }

    /// ``int(_:context:default:timestamp:)`` of the flag `key` names, found by slot (``FlagKey``).
    public func int(_ key: FlagKey, context: EvaluationContext, default defaultValue: Int, timestamp: Int64? = nil)
        -> Int
    {
        scalar(slot: slot(of: key), context, timestamp).int ?? defaultValue
    }

    /// ``double(_:context:default:timestamp:)`` of the flag `key` names, found by slot
    /// (``FlagKey``).
    public func double(
        _ key: FlagKey, context: EvaluationContext, default defaultValue: Double, timestamp: Int64? = nil
    ) -> Double {
        scalar(slot: slot(of: key), context, timestamp).double ?? defaultValue
    }

    /// ``string(_:context:default:timestamp:)`` of the flag `key` names, found by slot
    /// (``FlagKey``).
    public func string(
        _ key: FlagKey, context: EvaluationContext, default defaultValue: String, timestamp: Int64? = nil
    ) -> String {
        string(slot: slot(of: key), context, defaultValue, timestamp)
    }

    /// ``evaluate(_:context:as:timestamp:)`` of the flag `key` names, found by slot
    /// (``FlagKey``).
    public func evaluate(
        _ key: FlagKey, context: EvaluationContext, as type: FlagDefinitionType? = nil, timestamp: Int64? = nil
    ) -> ServedFlag {
        guard let slot = slot(of: key) else {
            return evaluate(key.key, context: context, as: type, timestamp: timestamp)
        }
        return evaluate(slot: slot, context: context, as: type, timestamp: timestamp)
    }

    /// The slot of `key` in these definitions (nil: not a flag of theirs).
    @inline(__always)
    func slot(of key: FlagKey) -> Int? {
        // The serial is read in place (the index is not retained); the index itself is used
        // only on the slow path.
        let serial = index.serial
        let cached = key.cachedSlot(serial)
        if cached >= 0 { return cached }
        if cached == FlagKey.absent { return nil }
        return resolveSlot(key, serial)
    }

    /// ``slot(of:)-(FlagKey)``'s slow path: the key looked up in ``index`` and remembered.
    @inline(never)
    private func resolveSlot(_ key: FlagKey, _ serial: UInt) -> Int? {
        key.resolve(serial) { index.slot(of: $0) }
    }

    /// The String read of the flag in `slot` (nil: missing).
    private func string(slot: Int?, _ context: EvaluationContext, _ defaultValue: String, _ timestamp: Int64?)
        -> String
    {
        guard let slot else { return defaultValue }
        let flag = ordered[slot]
        let string: String?
        switch Self.outcome(flag, context: context, timestamp: timestamp) {
        case .fixed, .nullRule: string = flag.staticString
        case .variant(let variant): string = flag.matchStrings[variant]
        case .failure: return defaultValue
        }
        return string ?? defaultValue
    }

    /// The kind and scalar bits of what flag `key` serves for `context` (no value for a missing
    /// flag or a failed rule), read from the scalars built at load.
    @inline(__always)
    private func scalar(_ key: String, _ context: EvaluationContext, _ timestamp: Int64?) -> DefinitionScalar {
        scalar(slot: index.slot(of: key), context, timestamp)
    }

    /// ``scalar(_:_:_:)`` of the flag in `slot` (nil: missing).
    @inline(__always)
    private func scalar(slot: Int?, _ context: EvaluationContext, _ timestamp: Int64?) -> DefinitionScalar {
        guard let slot else { return .noValue }
        let head = heads[slot]
        guard head.targeted else { return head.scalar }
        return Self.targetedScalar(ordered[slot], context, timestamp)
    }

    /// ``scalar(_:_:_:)`` of a flag that runs a rule.
    private static func targetedScalar(_ flag: FlagDefinition, _ context: EvaluationContext, _ timestamp: Int64?)
        -> DefinitionScalar
    {
        switch outcome(flag, context: context, timestamp: timestamp) {
        case .fixed, .nullRule: return flag.staticScalar
        case .variant(let variant): return flag.matchScalars[variant]
        case .failure: return .noValue
        }
    }
}
