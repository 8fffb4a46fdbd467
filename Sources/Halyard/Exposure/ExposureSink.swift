package import CHalyardAtomics

/// The seam between the read path and the exposure pipeline (not API).
///
/// Reads keep a per-flag "exposed until" slot (coarse seconds). While the slot is in the
/// future a read records nothing and touches no shared state; when it has passed, the read
/// calls ``recordExposure(key:variant:reason:contextFingerprint:value:errorCode:metadata:)`` once and
/// stores the deadline it returns.
package protocol ExposureSink: AnyObject, Sendable {
    /// Whether successful reads record exposures automatically.
    var recordsReads: Bool { get }
    /// The word holding the coarse current time in whole seconds (read with one relaxed load).
    var coarseClockWord: UnsafePointer<hal_atomic_word> { get }
    /// The object that owns ``coarseClockWord``. Handles keep it alive (and only it) for as
    /// long as the process runs, since they hold the word's address and may outlive the sink.
    var coarseClockOwner: AnyObject { get }
    /// Records (or de-duplicates, or samples out) one exposure. Returns the coarse second until
    /// which the same (key, variant, context) needs no further call. `value` is the value served
    /// (pass it when `variant` is nil: the OTLP exporter writes it as `feature_flag.result.value`);
    /// `errorCode` the served flag's error code, if any; `metadata` the served flag's metadata
    /// (the OTLP exporter writes its `version` and `flagSetId`).
    func recordExposure(
        key: String, variant: String?, reason: EvaluationReason, contextFingerprint: String, value: JSONValue?,
        errorCode: FlagErrorCode?, metadata: FlagMetadata
    ) -> UInt32
}

extension ExposureSink {
    /// Records an exposure without its value or error code (enough when there is a variant).
    @discardableResult
    package func recordExposure(key: String, variant: String?, reason: EvaluationReason, contextFingerprint: String)
        -> UInt32
    {
        recordExposure(
            key: key, variant: variant, reason: reason, contextFingerprint: contextFingerprint, value: nil,
            errorCode: nil, metadata: [:])
    }

    /// By default the sink owns its clock word.
    package var coarseClockOwner: AnyObject { self }
}

extension ExposureRecorder {
    /// The recorder's coarse clock owns the word; handles keep only it alive, not the recorder.
    package var coarseClockOwner: AnyObject { coarseClock }
}
