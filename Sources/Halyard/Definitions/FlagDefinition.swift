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
    }
}
