/// The full result of a flag read: the value served and why.
///
/// ```swift
/// let result = flags.boolDetail("checkout.new", default: false)
/// if result.errorCode == .flagNotFound { ... }
/// ```
public struct Evaluation<Value: Sendable>: Sendable {
    /// The flag key that was read.
    public var key: String
    /// The value served: the flag's value, or the caller's default on error or code default.
    public var value: Value
    /// The variant name, when the served flag had one.
    public var variant: String?
    /// Why this value was served.
    public var reason: EvaluationReason
    /// Why the default was served, when it was because of an error.
    public var errorCode: FlagErrorCode?
    /// A human-readable message for the error, when there is one.
    public var errorMessage: String?
    /// The served flag's metadata (empty when none).
    public var metadata: FlagMetadata

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
        self.key = key
        self.value = value
        self.variant = variant
        self.reason = reason
        self.errorCode = errorCode
        self.errorMessage = errorMessage
        self.metadata = metadata
    }
}

extension Evaluation: Equatable where Value: Equatable {}
extension Evaluation: Hashable where Value: Hashable {}
