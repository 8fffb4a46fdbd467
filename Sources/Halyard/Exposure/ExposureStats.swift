/// Exposure counters (`client.stats.exposures`, `service.stats.exposures`). All are totals
/// since the client (or service) started. Was `ExposureCounters` (docs/public-api.md).
///
/// They count what reaches the exposure recorder: reads whose per-entry "exposed until" slot
/// says the flag was already exposed in the current window never reach it and are counted
/// nowhere. Over what does reach it, this identity holds at every instant:
///
/// ```
/// recorded == deduplicated + sampledOut + sent + dropped + pending
/// ```
public struct ExposureStats: Sendable, Hashable {
    /// Exposures offered to the recorder (a read's slow path or an explicit
    /// `recordExposure(_:)`), while the client was open.
    public var recorded: Int = 0
    /// Of ``recorded``: suppressed because the same (key, variant, context fingerprint) was
    /// already recorded (or sampled out) in its de-duplication window.
    public var deduplicated: Int = 0
    /// Of ``recorded``: first exposures in their window that sampling did not keep.
    public var sampledOut: Int = 0
    /// Of ``recorded``: kept events discarded without a confirmed delivery — the oldest pushed
    /// out of a full buffer, rejected by the receiver (a non-retryable status, or records an
    /// OTLP partial success refused; these are also counted in ``rejected``), answered with a
    /// body over 4 MiB (a failure whose outcome is unknown), or still pending after the final
    /// flush at close.
    /// An event dropped after a failed (ambiguous) attempt may still have reached the server.
    public var dropped: Int = 0
    /// Of ``recorded``: events in batches the control plane accepted (2xx), less the records an
    /// OTLP receiver reported rejected in a partial success.
    public var sent: Int = 0
    /// Upload requests that failed (any non-2xx status or a transport error), retried or not.
    /// Counts requests, not events; not part of the identity.
    public var failed: Int = 0
    /// Of ``dropped``: events the receiver refused — batches rejected with a non-retryable status,
    /// and the `rejectedLogRecords` of an OTLP partial success (a 2xx).
    public var rejected: Int = 0
    /// Of ``recorded``: events kept and not yet resolved (buffered, waiting for a retry, or in
    /// flight). A gauge, not a total.
    public var pending: Int = 0

    /// Creates zeroed counters.
    public init() {}
}

/// The old name of ``ExposureStats``, kept for one release: every other stats type is named
/// `<Thing>Stats` (docs/public-api.md, "Stats types").
@available(*, deprecated, renamed: "ExposureStats")
public typealias ExposureCounters = ExposureStats
