/// What one `flushExposures()` did.
public struct ExposureFlushResult: Sendable, Hashable {
    /// Events in batches the control plane accepted during this flush.
    public var sentEvents: Int = 0
    /// Batches the control plane accepted during this flush.
    public var sentBatches: Int = 0
    /// Upload requests that failed during this flush (retryable or not).
    public var failedBatches: Int = 0
    /// Events dropped during this flush (rejected batches, or pending after the final flush at
    /// close).
    public var droppedEvents: Int = 0
    /// Events still pending when the flush returned (waiting for a retry or recorded meanwhile).
    public var pendingEvents: Int = 0
    /// When a backoff or `Retry-After` is in effect: how long until the next attempt is allowed,
    /// measured on the client's clock when the flush returned. `nil` when none is.
    public var retryAfter: Duration?

    /// Creates an empty result.
    public init() {}
}
