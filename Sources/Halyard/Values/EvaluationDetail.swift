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
    /// Whether a service's ``DetailInterner`` made it, to be shared by snapshots (its bytes are
    /// counted there, not in theirs). In the padding after the error code: no bytes added.
    let interned: Bool
    let variant: String?
    let reason: EvaluationReason
    let errorMessage: String?
    let metadata: FlagMetadata
    /// The JSON type name of the served value (`"absent"` is said for none), for the
    /// type-mismatch message.
    var valueTypeName: String? { value?.typeName }

    init(
        key: String = "", value: JSONValue? = nil, variant: String?, reason: EvaluationReason,
        errorCode: FlagErrorCode?, errorMessage: String?, metadata: FlagMetadata, interned: Bool = false
    ) {
        self.key = key
        self.interned = interned
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
    convenience init(served flag: ServedFlag, interned: Bool = false) {
        self.init(
            key: flag.key, value: flag.value, variant: flag.variant, reason: flag.reason, errorCode: flag.errorCode,
            errorMessage: flag.errorMessage, metadata: flag.metadata, interned: interned)
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
                (String, JSONValue?, FlagErrorCode?, Bool, String?, EvaluationReason, String?, FlagMetadata)
            >.size
    }
}

extension EvaluationDetail {
    /// Whether this detail holds exactly `flag`'s fields: strings byte for byte, doubles by bit
    /// pattern (stricter than `ServedFlag`'s `==`, which takes canonically equivalent strings
    /// and `0.0`/`-0.0` for equal), so a shared detail shows the very bytes a plane served.
    func isExactly(_ flag: ServedFlag) -> Bool {
        Exact.same(key, flag.key) && errorCode == flag.errorCode && Exact.same(variant, flag.variant)
            && Exact.same(reason.rawValue, flag.reason.rawValue) && Exact.same(errorMessage, flag.errorMessage)
            && Exact.same(value, flag.value) && Exact.same(metadata, flag.metadata)
    }
}

/// Exact equality of served fields (``EvaluationDetail/isExactly(_:)``).
enum Exact {
    static func same(_ a: String, _ b: String) -> Bool { a.utf8.elementsEqual(b.utf8) }

    static func same(_ a: String?, _ b: String?) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case (let a?, let b?): same(a, b)
        default: false
        }
    }

    static func same(_ a: JSONValue?, _ b: JSONValue?) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case (let a?, let b?): same(a, b)
        default: false
        }
    }

    static func same(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.int(let x), .int(let y)): return x == y
        case (.double(let x), .double(let y)): return x.bitPattern == y.bitPattern
        case (.string(let x), .string(let y)): return same(x, y)
        case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { same($0, $1) }
        case (.object(let x), .object(let y)):
            guard x.count == y.count else { return false }
            for (name, item) in x {
                guard let at = y.index(forKey: name), same(y[at].key, name), same(y[at].value, item) else {
                    return false
                }
            }
            return true
        default: return false
        }
    }

    static func same(_ a: FlagMetadata, _ b: FlagMetadata) -> Bool {
        guard a.count == b.count else { return false }
        for (name, item) in a {
            guard let at = b.index(forKey: name), same(b[at].key, name) else { return false }
            switch (item, b[at].value) {
            case (.bool(let x), .bool(let y)): if x != y { return false }
            case (.int(let x), .int(let y)): if x != y { return false }
            case (.number(let x), .number(let y)): if x.bitPattern != y.bitPattern { return false }
            case (.string(let x), .string(let y)): if !same(x, y) { return false }
            default: return false
            }
        }
        return true
    }
}
