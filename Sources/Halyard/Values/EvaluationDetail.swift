/// Not API: everything an ``Evaluation`` says besides its key and value, as one immutable
/// object. A snapshot builds one per served flag when it is built (so a detail read retains
/// this one object instead of copying a variant, a reason, a message and a metadata dictionary
/// one by one); an evaluation made with ``Evaluation/init(key:value:variant:reason:errorCode:errorMessage:metadata:)``
/// or changed through a setter gets one of its own. Which fields an evaluation shows is its
/// ``Form``: a served flag's detail holds the server's error message, but a successful read of
/// it shows none.
@usableFromInline
final class EvaluationDetail: Sendable {
    /// How an evaluation reads its detail (one byte beside the reference).
    @usableFromInline
    enum Form: Sendable, Hashable {
        /// Success or code default: the flag's variant, reason and metadata, no error.
        case served
        /// The flag was served with an error code: its variant, code (or `GENERAL`), message and
        /// metadata, reason `ERROR`.
        case servedError
        /// The flag's value is not of the requested type: its variant and metadata, reason
        /// `ERROR`, `TYPE_MISMATCH` and a message naming both types.
        case typeMismatch(_FlagValueKind)
        /// The key is not served (no detail).
        case flagNotFound
        /// Nothing to read (no detail): the matching code and message.
        case providerNotReady, providerFatal, invalidContext
        /// Every field as the detail holds it (a public initializer or a setter made it).
        case explicit
    }

    /// The fields, for building a detail.
    struct Fields {
        var variant: String?
        var reason: EvaluationReason
        var errorCode: FlagErrorCode?
        var errorMessage: String?
        var metadata: FlagMetadata
    }

    /// The served flag's key (empty for a detail of its own: an ``Evaluation`` made by its
    /// public initializer or changed through a setter keeps its key itself). A detail read takes
    /// its key from here, so it retains this one object and not the caller's key as well.
    @usableFromInline let key: String
    /// The served flag's value (nil for a detail of its own, or a flag served without one), for
    /// String and JSON detail reads, which make their value from it.
    @usableFromInline let value: JSONValue?
    // The one-byte error code right after the 17-byte value, in its padding: 112 bytes in all
    // (a 128-byte malloc block) instead of 128 (144). Stored properties are laid out in order.
    let errorCode: FlagErrorCode?
    let variant: String?
    let reason: EvaluationReason
    let errorMessage: String?
    let metadata: FlagMetadata
    /// The JSON type name of the served value (`"absent"` is said for none), for the
    /// type-mismatch message.
    var valueTypeName: String? { value?.typeName }

    init(
        key: String = "", value: JSONValue? = nil, variant: String?, reason: EvaluationReason,
        errorCode: FlagErrorCode?, errorMessage: String?, metadata: FlagMetadata
    ) {
        self.key = key
        self.value = value
        self.variant = variant
        self.reason = reason
        self.errorCode = errorCode
        self.errorMessage = errorMessage
        self.metadata = metadata
    }

    convenience init(_ fields: Fields) {
        self.init(
            variant: fields.variant, reason: fields.reason, errorCode: fields.errorCode,
            errorMessage: fields.errorMessage, metadata: fields.metadata)
    }

    /// The detail of a served flag, as its snapshot keeps it.
    convenience init(served flag: ServedFlag) {
        self.init(
            key: flag.key, value: flag.value, variant: flag.variant, reason: flag.reason, errorCode: flag.errorCode,
            errorMessage: flag.errorMessage, metadata: flag.metadata)
    }

    /// The served flag this detail was made from (a snapshot keeps its flags only as details).
    var servedFlag: ServedFlag {
        ServedFlag(
            key: key, value: value, variant: variant, reason: reason, errorCode: errorCode, errorMessage: errorMessage,
            metadata: metadata)
    }
}

extension EvaluationDetail {
    /// The bytes of one instance (header and stored fields), for footprint estimates.
    static var instanceBytes: Int {
        16
            + MemoryLayout<
                (String, JSONValue?, FlagErrorCode?, String?, EvaluationReason, String?, FlagMetadata)
            >.size
    }
}
