public import Foundation

/// Flag definitions in flagd's format (SPEC §17, docs/definitions.md), validated and compiled
/// once: an immutable value that evaluates flags for a context in process, without parsing
/// JSON and without a request.
///
/// ```swift
/// let definitions = try FlagDefinitions(parsing: data)
/// let served = definitions.evaluate("new-checkout", context: ctx, as: .boolean)
/// served.value      // nil: the caller's default (see `reason` / `errorCode`)
/// ```
///
/// A document that is not JSON or not schema-valid throws ``FlagDefinitionsError``; whoever
/// holds definitions keeps the previous ones.
public struct FlagDefinitions: Sendable {
    let flags: [String: FlagDefinition]
    /// The flag keys sorted (``keys``), byte-exact: a flag's slot in ``ordered``.
    let index: ExactKeyIndex
    /// The flags in ``keys`` order.
    let ordered: [FlagDefinition]
    /// Per slot of ``ordered``: whether the flag runs a rule, and when not, its result's kind
    /// and scalar bits, so that a typed read of a static or disabled flag does not touch the
    /// flag's object (no retain).
    let heads: [SlotHead]
    /// The document's own `metadata` (flag-set metadata); each flag's metadata is merged over it.
    public let metadata: FlagMetadata

    /// The parsing limits of a definitions document: 16 MiB, depth 64, 100,000 members per object.
    public static let parsingLimits = JSONParsingLimits(
        maxInputBytes: 16 << 20, maxDepth: 64, maxObjectMembers: 100_000)

    /// No flags: every evaluation is `FLAG_NOT_FOUND`.
    public static let empty = FlagDefinitions(flags: [:], metadata: [:])

    init(flags: [String: FlagDefinition], metadata: FlagMetadata) {
        self.flags = flags
        self.metadata = metadata
        let sorted = flags.sorted { $0.key < $1.key }
        index = ExactKeyIndex(sorted.map(\.key))
        ordered = sorted.map(\.value)
        heads = ordered.map { SlotHead(scalar: $0.staticScalar, targeted: $0.rule != nil) }
    }

    /// What a typed read finds first for a slot (``heads``).
    struct SlotHead: Sendable {
        /// The result of a flag that runs no rule (meaningless when ``targeted``).
        let scalar: DefinitionScalar
        /// The flag runs a rule: its result depends on the context.
        let targeted: Bool
    }

    /// Parses, validates and compiles a definitions document (UTF-8 JSON).
    /// - Throws: ``FlagDefinitionsError``.
    public init(parsing data: Data) throws(FlagDefinitionsError) {
        let json: JSONValue
        do {
            json = try JSONValue(parsing: data, limits: Self.parsingLimits)
        } catch {
            throw .malformedJSON(error)
        }
        try self.init(json: json)
    }

    /// Parses, validates and compiles a definitions document given as text.
    /// - Throws: ``FlagDefinitionsError``.
    public init(parsing text: String) throws(FlagDefinitionsError) {
        try self.init(parsing: Data(text.utf8))
    }

    /// Validates and compiles a definitions document already parsed.
    /// - Throws: ``FlagDefinitionsError``.
    public init(json: JSONValue) throws(FlagDefinitionsError) {
        self = try DefinitionsCompiler.compile(json)
    }

    /// The flag keys, sorted.
    public var keys: [String] { ordered.map(\.key) }

    /// The number of flags.
    public var count: Int { flags.count }

    /// Evaluates flag `key` for `context` with flagd's semantics (docs/definitions.md,
    /// "Evaluation"). The result's `value` is nil when the caller's default is served (a
    /// disabled flag, a null default variant, an error); `reason`, `variant`, `errorCode` and
    /// `metadata` are flagd's. With `type`, a value of another type is `TYPE_MISMATCH`.
    /// `timestamp` (seconds since 1970) is `$flagd.timestamp`; the current time when nil.
    public func evaluate(
        _ key: String, context: EvaluationContext, as type: FlagDefinitionType? = nil, timestamp: Int64? = nil
    ) -> ServedFlag {
        guard let slot = index.slot(of: key) else {
            return ServedFlag(
                key: key, value: nil, reason: .error, errorCode: .flagNotFound,
                errorMessage: "flag \(key) is not in the definitions")
        }
        return evaluate(ordered[slot], context: context, as: type, timestamp: timestamp)
    }

    /// Evaluates the flag in slot `slot` of ``keys`` (what ``evaluate(_:context:as:timestamp:)``
    /// does once it has found the key).
    func evaluate(slot: Int, context: EvaluationContext, as type: FlagDefinitionType? = nil, timestamp: Int64?)
        -> ServedFlag
    {
        evaluate(ordered[slot], context: context, as: type, timestamp: timestamp)
    }

    private func evaluate(
        _ flag: FlagDefinition, context: EvaluationContext, as type: FlagDefinitionType?, timestamp: Int64?
    ) -> ServedFlag {
        switch Self.outcome(flag, context: context, timestamp: timestamp) {
        case .fixed:
            return type == nil ? flag.staticResult : Self.checked(flag.staticResult, type)
        case .nullRule:
            return Self.checked(Self.nullRuleResult(flag), type)
        case .variant(let slot):
            return type == nil ? flag.matchResults[slot] : Self.checked(flag.matchResults[slot], type)
        case .failure(let code, let message):
            return Self.failure(flag, code, message)
        }
    }

    /// Which of `flag`'s results an evaluation serves, found without building or copying one
    /// (the results themselves were built at load: ``FlagDefinition/staticResult``,
    /// ``FlagDefinition/matchResults``, their entries).
    enum Outcome: Sendable, Equatable {
        /// ``FlagDefinition/staticResult``: no rule runs (no targeting, or disabled).
        case fixed
        /// The rule gave null: ``FlagDefinition/staticResult`` with reason DEFAULT (unless it
        /// is an error).
        case nullRule
        /// The rule picked the variant in this slot of ``FlagDefinition/matchResults``.
        case variant(Int)
        /// The rule failed or named no variant of the flag.
        case failure(FlagErrorCode, String)
    }

    /// Runs `flag`'s rule (if any) for `context`: which result it serves.
    static func outcome(_ flag: FlagDefinition, context: EvaluationContext, timestamp: Int64?) -> Outcome {
        // A static flag (no rule, or disabled): its result was built at load.
        guard let rule = flag.variantRule else { return .fixed }
        let timestamp = timestamp ?? (flag.readsTimestamp ? Int64(Date().timeIntervalSince1970) : 0)
        return rule.outcome(context, flag.key, timestamp, flag.variantIndex)
    }

    /// The outcome of a rule that gave `result`, for a flag with `variants`: null serves the
    /// static result, a string (or a boolean or number, by its text) names a variant.
    static func outcome(of result: JSONValue, variants: ExactKeyIndex) -> Outcome {
        let slot: Int?
        switch result {
        case .null: return .nullRule
        case .string(let s): slot = s.isEmpty ? nil : variants.slot(of: s)
        case .bool(let b): slot = variants.slot(of: b ? "true" : "false")
        case .int, .double:
            slot = LogicCoercion.plainString(result).flatMap { $0.isEmpty ? nil : variants.slot(of: $0) }
        case .array, .object:
            return .failure(.general, "targeting gave a \(result.typeName), not a variant name")
        }
        guard let slot else {
            let variant: String
            if case .bool(let b) = result {
                variant = b ? "true" : "false"
            } else {
                variant = LogicCoercion.plainString(result) ?? ""
            }
            return .failure(.general, "targeting gave variant \"\(variant)\", which the flag does not have")
        }
        return .variant(slot)
    }

    /// The outcome of a rule that failed.
    static func outcome(of error: LogicError) -> Outcome {
        switch error {
        case .invalidRule(let message): .failure(.parseError, "invalid targeting: \(message)")
        case .failed(let message): .failure(.general, "targeting failed: \(message)")
        }
    }

    /// The result of `flag` when its rule gives null: the static one, re-labelled DEFAULT
    /// unless it is an error.
    static func nullRuleResult(_ flag: FlagDefinition) -> ServedFlag {
        var served = flag.staticResult
        if served.errorCode == nil { served.reason = .defaultValue }
        return served
    }

    /// The result of an evaluation of `flag` that failed (``Outcome/failure(_:_:)``).
    static func failure(_ flag: FlagDefinition, _ code: FlagErrorCode, _ message: String) -> ServedFlag {
        ServedFlag(
            key: flag.key, value: nil, reason: .error, errorCode: code, errorMessage: message, metadata: flag.metadata)
    }

    /// The type check of a typed evaluation: skipped when the caller's default is served; a
    /// float read of an integer is served as a double.
    private static func checked(_ served: ServedFlag, _ type: FlagDefinitionType?) -> ServedFlag {
        guard let type, let value = served.value else { return served }
        guard type.accepts(value) else {
            return ServedFlag(
                key: served.key, value: nil, variant: nil, reason: .error, errorCode: .typeMismatch,
                errorMessage: "the flag's value is a \(value.typeName), not a \(type.rawValue)",
                metadata: served.metadata)
        }
        if type == .float, case .int(let i) = value {
            var converted = served
            converted.value = .double(Double(i))
            return converted
        }
        return served
    }
}
