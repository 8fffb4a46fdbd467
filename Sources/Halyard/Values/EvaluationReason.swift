/// Why a flag read produced its value: the OpenFeature resolution reasons.
///
/// An open set: reasons the control plane sends that are not listed here are kept exactly as
/// they came (`EvaluationReason(rawValue: "EXPERIMENT")`).
public struct EvaluationReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The reason as it appears on the wire (for example `"TARGETING_MATCH"`).
    public let rawValue: String

    /// Creates a reason from its wire spelling; any string is accepted.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The value is static (offline values).
    public static let staticValue = EvaluationReason(rawValue: "STATIC")
    /// The code default was served (no value from the control plane).
    public static let defaultValue = EvaluationReason(rawValue: "DEFAULT")
    /// A targeting rule matched.
    public static let targetingMatch = EvaluationReason(rawValue: "TARGETING_MATCH")
    /// A percentage split chose the value.
    public static let split = EvaluationReason(rawValue: "SPLIT")
    /// The value came from the on-device cache and is not yet confirmed.
    public static let cached = EvaluationReason(rawValue: "CACHED")
    /// The flag is disabled.
    public static let disabled = EvaluationReason(rawValue: "DISABLED")
    /// The reason is unknown.
    public static let unknown = EvaluationReason(rawValue: "UNKNOWN")
    /// The value is known to be out of date.
    public static let stale = EvaluationReason(rawValue: "STALE")
    /// The read failed; the default was served (see the error code).
    public static let error = EvaluationReason(rawValue: "ERROR")

    public var description: String { rawValue }
}
