import Foundation

/// The exposure pipeline as a pure value: de-duplication, sampling, the bounded buffer, batching
/// and the retry policy. Times are the recorder's monotonic elapsed time; no clocks, threads or
/// I/O here (the ``ExposureRecorder`` performs the actions it returns).
package struct ExposureState: Sendable {
    /// What ``record(key:variant:reason:contextFingerprint:dedupKey:now:nowSeconds:creationDate:)`` decided.
    package enum Decision: Sendable, Hashable {
        /// Kept and buffered.
        case buffered
        /// Already recorded in the window.
        case deduplicated
        /// Sampling did not keep it.
        case sampledOut
        /// The recorder is closed: nothing counted.
        case ignored
    }

    /// The result of recording one exposure.
    package struct RecordResult: Sendable, Hashable {
        /// The coarse second until which the same (key, variant, fingerprint) needs no call.
        package var windowEnd: UInt32
        /// What happened.
        package var decision: Decision
        /// Whether the caller should start a drain now (the batch size was reached).
        package var startDrain: Bool
    }

    /// What to do next in a drain.
    package enum Next: Sendable, Hashable {
        /// Send this batch.
        case send(ExposureBatch)
        /// Nothing is pending.
        case idle
        /// Something is pending but no attempt is allowed before this time.
        case deferred(until: Duration)
    }

    /// What finishing an attempt did.
    package struct Finish: Sendable, Hashable {
        /// Events confirmed delivered.
        package var sent = 0
        /// Events dropped (rejected, or pushed out by the requeue).
        package var dropped = 0
        /// Whether the attempt failed.
        package var failed = false
        /// Whether the drain must stop (a retryable failure: wait for the backoff).
        package var stop = false
        /// The rejecting status, when the batch was rejected.
        package var rejectedStatus: Int?
        /// Records a receiver refused in an accepted request (OTLP partial success), also in
        /// ``dropped``.
        package var partiallyRejected = 0
        /// Whether the batch was dropped because the answer was over the size limit.
        package var tooLarge = false
    }

    /// The normalized options.
    package let options: ExposureOptions
    /// The de-duplication window in whole seconds (0: no de-duplication).
    private let windowSeconds: UInt32
    /// The retry delays (exponential with full jitter, capped).
    private let backoff: Backoff
    /// The random prefix of this state's idempotency keys.
    private let keyPrefix: String

    /// The de-duplication table.
    private(set) var dedup: ExposureDedupTable
    /// Events kept and not yet taken into a batch, oldest first.
    private var buffer = ExposureFIFO<ExposureEvent>()
    /// Batches waiting for a retry, oldest first (at most one in practice: drains stop at the
    /// first retryable failure).
    private(set) var retryQueue: [ExposureBatch] = []
    /// The events in ``retryQueue``.
    private var retryEventCount = 0
    /// The events of the batch being sent (0 between attempts).
    private var inFlightCount = 0
    /// The counters so far (``ExposureStats/pending`` is filled in by ``counters``).
    private var totals = ExposureStats()
    /// Retryable failures in a row (the backoff's exponent); a delivery resets it.
    private var consecutiveFailures = 0
    /// The last idempotency key's sequence number.
    private var batchSequence: UInt64 = 0
    /// No attempt before this (backoff or Retry-After), except the final flush.
    package private(set) var notBefore: Duration = .zero
    /// When the periodic flush is next due.
    package private(set) var nextPeriodicFlush: Duration
    /// An automatic drain has been requested and has not finished yet.
    package private(set) var automaticDrainRequested = false
    /// Whether ``close()`` was called.
    package private(set) var isClosed = false
    /// The latest window end handed to a read (coarse seconds): until then some read's slot may
    /// still be in the future, so the coarse clock must keep moving.
    package private(set) var latestWindowEnd: UInt32 = 0

    /// Creates the state; `idempotencyKeyPrefix` should be random per recorder (keys are
    /// `prefix-sequence`).
    package init(options: ExposureOptions, idempotencyKeyPrefix: String, now: Duration = .zero) {
        let o = options.normalized
        self.options = o
        windowSeconds = o.dedupWindowSeconds
        backoff = Backoff(base: o.initialBackoff, maximum: o.maxBackoff)
        keyPrefix = idempotencyKeyPrefix
        dedup = ExposureDedupTable(capacity: o.dedupCapacity)
        nextPeriodicFlush = o.flushInterval > .zero ? now + o.flushInterval : .seconds(Int64.max / 2)
    }

    /// Events kept and not yet sent or dropped, excluding the batch in flight.
    package var queuedCount: Int { buffer.count + retryEventCount }

    /// The counters, with ``ExposureStats/pending`` filled in.
    package var counters: ExposureStats {
        var c = totals
        c.pending = queuedCount + inFlightCount
        return c
    }

    // MARK: - Recording

    /// Records one exposure offered at coarse second `nowSeconds` (elapsed time `now`);
    /// `dedupKey` is ``ExposureHash/dedupKey(fingerprint:key:variant:)`` of the triple (computed by
    /// the caller outside the lock). The sampling hash is computed here, only for first exposures
    /// and only when the rate is below 1.
    package mutating func record(
        key: String, variant: String?, reason: String, contextFingerprint: String,
        dedupKey: UInt64, now: Duration, nowSeconds: UInt32, creationDate: Int64,
        value: JSONValue? = nil, errorCode: FlagErrorCode? = nil, flagVersion: String? = nil, flagSetID: String? = nil
    ) -> RecordResult {
        if isClosed { return RecordResult(windowEnd: .max, decision: .ignored, startDrain: false) }
        totals.recorded += 1
        if windowSeconds > 0, let end = dedup.check(dedupKey, now: nowSeconds, window: windowSeconds) {
            totals.deduplicated += 1
            latestWindowEnd = max(latestWindowEnd, end)
            return RecordResult(windowEnd: end, decision: .deduplicated, startDrain: false)
        }
        let windowEnd =
            windowSeconds > 0
            ? (nowSeconds &+ windowSeconds < nowSeconds ? .max : nowSeconds + windowSeconds) : nowSeconds
        latestWindowEnd = max(latestWindowEnd, windowEnd)
        if options.sampleRate < 1,
            !ExposureHash.keeps(
                ExposureHash.hash(fingerprint: contextFingerprint, key: key, variant: variant), rate: options.sampleRate
            )
        {
            totals.sampledOut += 1
            return RecordResult(windowEnd: windowEnd, decision: .sampledOut, startDrain: false)
        }
        if queuedCount >= options.capacity { dropOldest() }
        buffer.append(
            ExposureEvent(
                key: key, variant: variant, reason: reason,
                contextFingerprint: contextFingerprint, creationDate: creationDate,
                value: value, errorCode: errorCode, flagVersion: flagVersion, flagSetID: flagSetID))
        var start = false
        if buffer.count >= options.batchSize, !automaticDrainRequested, now >= notBefore {
            automaticDrainRequested = true
            start = true
        }
        return RecordResult(windowEnd: windowEnd, decision: .buffered, startDrain: start)
    }

    /// A fresh idempotency key (`prefix-sequence`).
    private mutating func nextIdempotencyKey() -> String {
        batchSequence += 1
        return "\(keyPrefix)-\(batchSequence)"
    }

    /// Makes room for one event when the buffer is full: drops the oldest queued event (from the
    /// batch waiting for a retry first, giving it a new key since its body changes).
    private mutating func dropOldest() {
        if !retryQueue.isEmpty {
            retryQueue[0].events.removeFirst()
            retryEventCount -= 1
            if retryQueue[0].events.isEmpty {
                retryQueue.removeFirst()
            } else {
                // A changed body is a new request: servers that follow the Idempotency-Key draft
                // answer 422 to a reused key with a different body.
                retryQueue[0].idempotencyKey = nextIdempotencyKey()
            }
        } else {
            buffer.popFirst()
        }
        totals.dropped += 1
    }

    /// Called on every timer tick: whether an automatic drain should start now (periodic flush
    /// due, a retry's backoff over, or a full batch waiting).
    package mutating func tick(now: Duration) -> Bool {
        if isClosed || automaticDrainRequested || queuedCount == 0 { return false }
        // Nothing can be sent before the backoff or Retry-After ends: no no-op drain per tick.
        if now < notBefore { return false }
        let due =
            now >= nextPeriodicFlush
            || (!retryQueue.isEmpty && now >= notBefore)
            || (buffer.count >= options.batchSize && now >= notBefore)
        if due { automaticDrainRequested = true }
        return due
    }

    /// Whether the once-a-second ticker is still needed: something is pending (to flush or
    /// retry), a drain is running, or a read's de-duplication window has not ended yet (the
    /// coarse clock must move for the read to call the recorder again after it).
    package func needsTicker(coarseNow: UInt32) -> Bool {
        !isClosed && (queuedCount > 0 || inFlightCount > 0 || automaticDrainRequested || coarseNow < latestWindowEnd)
    }

    /// Marks the automatic drain finished (call at the end of a drain started by ``tick(now:)``
    /// or by ``record(key:variant:reason:contextFingerprint:dedupKey:now:nowSeconds:creationDate:)``).
    package mutating func automaticDrainFinished() { automaticDrainRequested = false }

    // MARK: - Draining

    /// The next batch to send: a batch waiting for a retry first (same idempotency key while its
    /// events are unchanged, a new one once the full buffer trimmed it), else
    /// up to `batchSize` of the oldest buffered events under a new key. `ignoreBackoff` is for the
    /// final flush at close.
    package mutating func nextBatch(now: Duration, ignoreBackoff: Bool = false) -> Next {
        if queuedCount == 0 { return .idle }
        if !ignoreBackoff, now < notBefore { return .deferred(until: notBefore) }
        if options.flushInterval > .zero { nextPeriodicFlush = now + options.flushInterval }
        var batch: ExposureBatch
        if !retryQueue.isEmpty {
            batch = retryQueue.removeFirst()
            retryEventCount -= batch.events.count
        } else {
            batch = ExposureBatch(
                idempotencyKey: nextIdempotencyKey(),
                events: buffer.popFirst(options.batchSize), attempts: 0)
        }
        batch.attempts += 1
        inFlightCount = batch.events.count
        return .send(batch)
    }

    /// Resolves the batch returned by ``nextBatch(now:ignoreBackoff:)``. `unit` in `[0, 1)` is
    /// the jitter draw for the backoff.
    package mutating func finish(_ batch: ExposureBatch, outcome: ExposureUploadOutcome, now: Duration, unit: Double)
        -> Finish
    {
        inFlightCount = 0
        var f = Finish()
        let n = batch.events.count
        switch outcome {
        case .delivered:
            totals.sent += n
            f.sent = n
            consecutiveFailures = 0
            notBefore = .zero
        case .partiallyDelivered(let rejected, _):
            let k = min(max(rejected, 0), n)
            totals.sent += n - k
            totals.dropped += k
            totals.rejected += k
            f.sent = n - k
            f.dropped = k
            f.partiallyRejected = k
            consecutiveFailures = 0
            notBefore = .zero
        case .rejected(let status):
            totals.failed += 1
            totals.dropped += n
            totals.rejected += n
            f.dropped = n
            f.failed = true
            f.rejectedStatus = status
        case .responseTooLarge, .redirectRefused:
            totals.failed += 1
            totals.dropped += n
            f.dropped = n
            f.failed = true
            f.tooLarge = outcome == .responseTooLarge
        case .retry(let retryAfter):
            totals.failed += 1
            f.failed = true
            f.stop = true
            consecutiveFailures += 1
            notBefore = now + backoff.delay(failures: consecutiveFailures, retryAfter: retryAfter, unit: unit)
            var requeued = batch
            let excess = queuedCount + n - options.capacity
            if excess > 0 {
                let k = min(n, excess)
                requeued.events.removeFirst(k)
                totals.dropped += k
                f.dropped = k
                if !requeued.events.isEmpty { requeued.idempotencyKey = nextIdempotencyKey() }
            }
            if !requeued.events.isEmpty {
                retryQueue.insert(requeued, at: 0)
                retryEventCount += requeued.events.count
            }
        }
        return f
    }

    // MARK: - Closing

    /// Marks the state closed: later records are ignored. Returns false when already closed.
    package mutating func close() -> Bool {
        if isClosed { return false }
        isClosed = true
        return true
    }

    /// Drops everything still queued (after the final flush at close) and returns how many.
    package mutating func abandonQueued() -> Int {
        let n = queuedCount
        buffer.removeAll()
        retryQueue.removeAll()
        retryEventCount = 0
        totals.dropped += n
        return n
    }
}
