import CHalyardAtomics

/// The seam between the read path and the exposure pipeline (not API).
///
/// Reads keep a per-flag "exposed until" slot (coarse seconds). While the slot is in the
/// future a read records nothing and touches no shared state; when it has passed, the read
/// calls ``recordExposure(key:variant:reason:contextFingerprint:)`` once and stores the deadline
/// it returns.
package protocol ExposureSink: AnyObject, Sendable {
    /// Whether successful reads record exposures automatically.
    var recordsReads: Bool { get }
    /// The word holding the coarse current time in whole seconds (read with one relaxed load).
    var coarseClockWord: UnsafePointer<hal_atomic_word> { get }
    /// Records (or de-duplicates, or samples out) one exposure. Returns the coarse second until
    /// which the same (key, variant, context) needs no further call.
    func recordExposure(key: String, variant: String?, reason: EvaluationReason, contextFingerprint: String) -> UInt32
}
