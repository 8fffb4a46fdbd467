/// One flag's result as the control plane served it (or as offline values give it).
///
/// A served flag with an ``errorCode`` is a failure whatever else it carries: reads serve the
/// caller's default with that code. A served flag with no ``value`` means "use the code default":
/// reads serve the caller's default with ``reason`` (or `DEFAULT`), not an error.
public struct ServedFlag: Sendable, Hashable {
    /// The flag key (case-sensitive, compared exactly).
    public var key: String
    /// The served value, or `nil` for "use the code default".
    public var value: JSONValue?
    /// The variant name, when the control plane sent one.
    public var variant: String?
    /// The resolution reason (an open set; unknown strings are kept).
    public var reason: EvaluationReason
    /// The error code when this item is a failure; unknown codes are mapped to `GENERAL`.
    public var errorCode: FlagErrorCode?
    /// The error details the control plane sent with a failure.
    public var errorMessage: String?
    /// Flag metadata (empty when none).
    public var metadata: FlagMetadata

    /// Creates a served flag.
    public init(
        key: String,
        value: JSONValue?,
        variant: String? = nil,
        reason: EvaluationReason = .staticValue,
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
