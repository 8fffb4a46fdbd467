/// One flag of a definitions document, validated and compiled (immutable): its state, typed
/// variants, default variant, compiled targeting rule and metadata (the flag's own over the
/// document's). A class: the definitions' table holds one reference per flag, so an evaluation
/// that looks a flag up retains one object instead of copying a dozen fields.
final class FlagDefinition: Sendable {
    /// The flag key.
    let key: String
    /// `state` is `ENABLED`.
    let enabled: Bool
    /// Variant names to values (all of one JSON type).
    let variants: [String: JSONValue]
    /// The default variant; nil when `null`, empty or absent (the code default is served).
    let defaultVariant: String?
    /// The compiled rule; nil without targeting or for `{}`.
    let targeting: LogicNode?
    /// The flag's metadata merged over the document's.
    let metadata: FlagMetadata
    /// Whether the rule may read `$flagd.timestamp`; when not, an evaluation skips the clock.
    let readsTimestamp: Bool
    /// The result when no rule runs or the rule gives null, with reason STATIC (it is
    /// re-labelled DEFAULT for a null rule result); computed once.
    let staticResult: ServedFlag
    /// The rule an evaluation runs: ``targeting`` when enabled, else nil (the result is then
    /// ``staticResult`` whatever the context).
    let rule: LogicNode?
    /// ``rule`` compiled against this flag's key and variants: what an evaluation runs.
    let variantRule: VariantRule?
    /// The variant names (byte-exact), slots in ``matchResults``.
    let variantIndex: ExactKeyIndex
    /// Per variant (``variantIndex`` order): the result of a rule that picks it (reason
    /// TARGETING_MATCH), built once so an evaluation copies it instead of assembling one.
    let matchResults: [ServedFlag]
    /// ``staticResult``'s kind and scalar bits: what a typed read
    /// (``FlagDefinitions/bool(_:context:default:timestamp:)``) reads in place.
    let staticScalar: DefinitionScalar
    /// Per variant (``variantIndex`` order): ``matchResults``' kind and scalar bits.
    let matchScalars: [DefinitionScalar]
    /// ``staticResult``'s value when it is a string (what a typed `string` read returns).
    let staticString: String?
    /// Per variant (``variantIndex`` order): ``matchResults``' value when it is a string.
    let matchStrings: [String?]

    init(
        key: String, enabled: Bool, variants: [String: JSONValue], defaultVariant: String?,
        targeting: LogicNode?, metadata: FlagMetadata
    ) {
        self.key = key
        self.enabled = enabled
        self.variants = variants
        self.defaultVariant = defaultVariant
        self.targeting = targeting
        self.metadata = metadata
        readsTimestamp = targeting?.mayReadTimestamp ?? false
        rule = enabled ? targeting : nil
        let names = Array(variants.keys)
        variantIndex = ExactKeyIndex(names)
        matchResults = names.map { name in
            ServedFlag(key: key, value: variants[name], variant: name, reason: .targetingMatch, metadata: metadata)
        }
        if !enabled {
            staticResult = ServedFlag(key: key, value: nil, reason: .disabled, metadata: metadata)
        } else if let defaultVariant {
            if let value = LogicCoercion.exactValue(variants, defaultVariant) {
                staticResult = ServedFlag(
                    key: key, value: value, variant: defaultVariant, reason: .staticValue, metadata: metadata)
            } else {
                staticResult = ServedFlag(
                    key: key, value: nil, reason: .error, errorCode: .general,
                    errorMessage: "default variant \(defaultVariant) is not one of the flag's variants",
                    metadata: metadata)
            }
        } else {
            staticResult = ServedFlag(key: key, value: nil, reason: .defaultValue, metadata: metadata)
        }
        let index = variantIndex
        variantRule = rule.map { VariantRule($0, flagKey: key, variants: index) }
        staticScalar = DefinitionScalar(staticResult)
        matchScalars = matchResults.map(DefinitionScalar.init)
        staticString = Self.string(staticResult)
        matchStrings = matchResults.map(Self.string)
    }

    private static func string(_ served: ServedFlag) -> String? {
        guard served.errorCode == nil, case .string(let string) = served.value else { return nil }
        return string
    }
}
