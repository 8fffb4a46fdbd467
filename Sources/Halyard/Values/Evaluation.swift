/// The full result of a flag read: the value served and why.
///
/// ```swift
/// let result = flags.boolDetail("checkout.new", default: false)
/// if result.errorCode == .flagNotFound { ... }
/// ```
///
/// A value type with one reference: a read fills in ``value`` and points at the served flag's
/// immutable detail (key, variant, reason, error, metadata), which the snapshot built once;
/// ``key``, ``variant``, ``reason``, ``errorCode``, ``errorMessage`` and ``metadata`` are
/// produced from it when asked (the key read is kept only when no flag was served for it) (docs/architecture.md, "Why an Evaluation is one reference"). The detail
/// lives as long as the evaluation does, whatever happens to the snapshot it came from. Setting
/// a property gives the evaluation a detail of its own, so copies never share a change.
public struct Evaluation<Value: Sendable>: Sendable {
    /// The flag key that was read.
    public var key: String {
        get { _key ?? _detail?.key ?? "" }
        set { _key = newValue }
    }
    /// The key, when the detail does not hold it: nil for a read of a served flag (whose detail
    /// holds the served key, byte for byte the key read), so the read retains one object.
    @usableFromInline var _key: String?
    /// The value served: the flag's value, or the caller's default on error or code default.
    public var value: Value
    /// Everything else, as one reference and a form (see ``EvaluationDetail``).
    @usableFromInline var _detail: EvaluationDetail?
    @usableFromInline var _form: EvaluationDetail.Form

    /// A read's result: `detail` is the served flag's (nil when the key was not served), `key`
    /// nil when the detail holds it.
    @inlinable
    init(_key key: String?, value: Value, detail: EvaluationDetail?, form: EvaluationDetail.Form) {
        self._key = key
        self.value = value
        self._detail = detail
        self._form = form
    }

    /// Creates an evaluation result.
    public init(
        key: String,
        value: Value,
        variant: String? = nil,
        reason: EvaluationReason,
        errorCode: FlagErrorCode? = nil,
        errorMessage: String? = nil,
        metadata: FlagMetadata = [:]
    ) {
        self._key = key
        self.value = value
        self._detail = EvaluationDetail(
            variant: variant, reason: reason, errorCode: errorCode, errorMessage: errorMessage, metadata: metadata)
        self._form = .explicit
    }

    /// The variant name, when the served flag had one.
    public var variant: String? {
        get { _detail?.variant }
        set { update { $0.variant = newValue } }
    }

    /// Why this value was served.
    public var reason: EvaluationReason {
        get {
            switch _form {
            case .served, .explicit: _detail?.reason ?? .error
            default: .error
            }
        }
        set { update { $0.reason = newValue } }
    }

    /// Why the default was served, when it was because of an error.
    public var errorCode: FlagErrorCode? {
        get {
            switch _form {
            case .served: nil
            case .explicit: _detail?.errorCode
            case .servedError: _detail?.errorCode ?? .general
            case .typeMismatch: .typeMismatch
            case .flagNotFound: .flagNotFound
            case .providerNotReady: .providerNotReady
            case .providerFatal: .providerFatal
            case .invalidContext: .invalidContext
            }
        }
        set { update { $0.errorCode = newValue } }
    }

    /// A human-readable message for the error, when there is one.
    public var errorMessage: String? {
        get {
            switch _form {
            case .served: nil
            case .explicit, .servedError: _detail?.errorMessage
            case .typeMismatch(let requested):
                "flag '\(key)' is \(_detail?.valueTypeName ?? "absent"), not \(requested)"
            case .flagNotFound: "flag '\(key)' is not in the served flags"
            case .providerNotReady: "no flag values have been loaded yet"
            case .providerFatal: "the client cannot serve values"
            case .invalidContext: "the evaluation context is invalid; nothing was fetched for it"
            }
        }
        set { update { $0.errorMessage = newValue } }
    }

    /// The served flag's metadata (empty when none).
    public var metadata: FlagMetadata {
        get { _detail?.metadata ?? [:] }
        set { update { $0.metadata = newValue } }
    }

    /// Gives this evaluation a detail of its own with every property as it reads now, changed
    /// by `change` (the snapshot's detail is shared and immutable).
    private mutating func update(_ change: (inout EvaluationDetail.Fields) -> Void) {
        var fields = EvaluationDetail.Fields(
            variant: variant, reason: reason, errorCode: errorCode, errorMessage: errorMessage, metadata: metadata)
        change(&fields)
        _key = key
        _detail = EvaluationDetail(fields)
        _form = .explicit
    }
}

extension Evaluation: Equatable where Value: Equatable {
    /// Equal when every public property is equal (however each was produced).
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.key == rhs.key && lhs.value == rhs.value && lhs.variant == rhs.variant && lhs.reason == rhs.reason
            && lhs.errorCode == rhs.errorCode && lhs.errorMessage == rhs.errorMessage && lhs.metadata == rhs.metadata
    }
}

extension Evaluation: Hashable where Value: Hashable {
    /// Hashes every public property (consistent with `==`).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(key)
        hasher.combine(value)
        hasher.combine(variant)
        hasher.combine(reason)
        hasher.combine(errorCode)
        hasher.combine(errorMessage)
        hasher.combine(metadata)
    }
}

extension Evaluation: CustomReflectable {
    /// The seven public properties (what `print` and `dump` show), not the internal layout.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "key": key, "value": value, "variant": variant as Any, "reason": reason,
                "errorCode": errorCode as Any, "errorMessage": errorMessage as Any, "metadata": metadata,
            ], displayStyle: .struct)
    }
}
