import Foundation

/// One exposure event as uploaded (docs/exposures.md).
package struct ExposureEvent: Sendable, Hashable {
    /// The flag key.
    package var key: String
    /// The variant served, `nil` when the control plane named none.
    package var variant: String?
    /// The evaluation reason, as on the wire.
    package var reason: String
    /// The fitted context's fingerprint.
    package var contextFingerprint: String
    /// When the exposure was recorded, in Unix seconds.
    package var creationDate: Int64
    /// How many exposures this event stands for (always 1 today).
    package var count: Int
    /// The value served, kept only when there is no variant and the exporter writes it
    /// (``ExposureExporter/otlp(endpoint:headers:)``'s `feature_flag.result.value`); shared with
    /// the snapshot it came from, not copied.
    package var value: JSONValue?
    /// The error code the served flag carried, if any (`error.type` on reason `ERROR`).
    package var errorCode: FlagErrorCode?
    /// The served flag's metadata `version` as text (OTLP's `feature_flag.version`), kept only
    /// by the OTLP exporter.
    package var flagVersion: String?
    /// The served flag's metadata `flagSetId` as text (OTLP's `feature_flag.set.id`), kept only
    /// by the OTLP exporter.
    package var flagSetID: String?

    /// Creates an event.
    package init(
        key: String, variant: String?, reason: String, contextFingerprint: String, creationDate: Int64, count: Int = 1,
        value: JSONValue? = nil, errorCode: FlagErrorCode? = nil, flagVersion: String? = nil, flagSetID: String? = nil
    ) {
        self.flagVersion = flagVersion
        self.flagSetID = flagSetID
        self.key = key
        self.variant = variant
        self.reason = reason
        self.contextFingerprint = contextFingerprint
        self.creationDate = creationDate
        self.count = count
        self.value = value
        self.errorCode = errorCode
    }
}

/// A batch taken for upload, with the idempotency key it keeps across retries.
package struct ExposureBatch: Sendable, Hashable {
    /// The `Idempotency-Key` header value, the same on every attempt.
    package var idempotencyKey: String
    /// The events, oldest first (at most `batchSize`).
    package var events: [ExposureEvent]
    /// How many times it has been sent (counting the attempt in progress).
    package var attempts: Int
}

/// The two hashes of a (fingerprint, key, variant) triple.
///
/// - ``hash(fingerprint:key:variant:)``, the *sampling* hash: FNV-1a 64 over the UTF-8 bytes of
///   `fingerprint 0xFF key 0xFF variant`, or `fingerprint 0xFF key 0xFE` when there is no variant.
///   0xFF and 0xFE never occur in UTF-8, so distinct triples give distinct byte strings. Specified
///   (docs/exposures.md) so tests and servers can predict sampling.
/// - ``dedupKey(fingerprint:key:variant:)``, the *de-duplication* identity: a word-at-a-time
///   multiply–xorshift hash with each string's length mixed in and a final avalanche. Not
///   specified and free to change; about 7x faster than byte-serial FNV-1a on a 76-byte triple,
///   which matters because every slow-path call computes it.
package enum ExposureHash {
    static let offset: UInt64 = 0xcbf2_9ce4_8422_2325
    static let prime: UInt64 = 0x0000_0100_0000_01b3

    /// The sampling hash of a (fingerprint, key, variant) triple (FNV-1a 64, see above).
    @inline(__always)
    package static func hash(fingerprint: String, key: String, variant: String?) -> UInt64 {
        var h = offset
        @inline(__always) func mix(_ byte: UInt8) {
            h = (h ^ UInt64(byte)) &* prime
        }
        for b in fingerprint.utf8 { mix(b) }
        mix(0xFF)
        for b in key.utf8 { mix(b) }
        if let variant {
            mix(0xFF)
            for b in variant.utf8 { mix(b) }
        } else {
            mix(0xFE)
        }
        return h
    }

    static let k1: UInt64 = 0x9E37_79B9_7F4A_7C15
    static let k2: UInt64 = 0xC2B2_AE3D_27D4_EB4F

    @inline(__always)
    static func round(_ h: UInt64, _ word: UInt64) -> UInt64 {
        let m = (h ^ word) &* k1
        return m ^ (m >> 29)
    }

    @inline(__always)
    static func absorb(_ h: UInt64, _ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var h = h
        var i = 0
        let n = bytes.count
        while i + 8 <= n {
            h = round(h, bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            i += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while i < n {
            tail |= UInt64(bytes[i]) << shift
            shift += 8
            i += 1
        }
        h = round(h, tail)
        return round(h, UInt64(n) &* k2 | 1)  // the length delimits the string
    }

    @inline(__always)
    static func absorb(_ h: UInt64, _ s: String) -> UInt64 {
        if let r = s.utf8.withContiguousStorageIfAvailable({ absorb(h, UnsafeRawBufferPointer($0)) }) {
            return r
        }
        let bytes = Array(s.utf8)  // bridged strings without contiguous UTF-8 (Darwin)
        return bytes.withUnsafeBytes { absorb(h, $0) }
    }

    /// The de-duplication identity of a triple (see above).
    @inline(__always)
    package static func dedupKey(fingerprint: String, key: String, variant: String?) -> UInt64 {
        var h: UInt64 = 0x243F_6A88_85A3_08D3
        h = absorb(h, fingerprint)
        h = absorb(h, key)
        if let variant { h = absorb(h, variant) } else { h = round(h, 0xFE) }
        // Final avalanche (MurmurHash3 fmix64).
        h ^= h >> 33
        h = h &* 0xFF51_AFD7_ED55_8CCD
        h ^= h >> 33
        h = h &* 0xC4CE_B9FE_1A85_EC53
        h ^= h >> 33
        return h
    }

    /// The hash mapped into `[0, 1)`: its top 53 bits over 2^53.
    @inline(__always)
    package static func unit(_ hash: UInt64) -> Double {
        Double(unitInterval: hash)
    }

    /// Whether sampling at `rate` keeps the triple with this hash.
    @inline(__always)
    package static func keeps(_ hash: UInt64, rate: Double) -> Bool {
        rate >= 1 || unit(hash) < rate
    }
}

/// A FIFO queue with amortised O(1) append and removal at the front (array plus head index).
package struct ExposureFIFO<Element> {
    private var storage: [Element] = []
    private var head = 0

    /// Creates an empty queue.
    package init() {}

    /// The number of elements.
    package var count: Int { storage.count - head }
    /// Whether it is empty.
    package var isEmpty: Bool { head == storage.count }
    /// The oldest element.
    package var first: Element? { isEmpty ? nil : storage[head] }

    /// Appends at the back.
    package mutating func append(_ element: Element) { storage.append(element) }

    /// Removes and returns the oldest element.
    @discardableResult
    package mutating func popFirst() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head]
        head += 1
        compactIfNeeded()
        return element
    }

    /// Removes and returns up to `n` oldest elements, oldest first.
    package mutating func popFirst(_ n: Int) -> [Element] {
        let k = min(max(n, 0), count)
        let out = Array(storage[head..<(head + k)])
        head += k
        compactIfNeeded()
        return out
    }

    /// Removes everything.
    package mutating func removeAll() {
        storage.removeAll()
        head = 0
    }

    private mutating func compactIfNeeded() {
        if head == storage.count {
            storage.removeAll(keepingCapacity: storage.count <= 4_096)
            head = 0
        } else if head >= 1_024, head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
    }
}

/// The de-duplication table: for each (key, variant, fingerprint) identity still inside its window,
/// the coarse second its window ends. Bounded: expired entries are pruned as time passes (a few
/// per call), and beyond `capacity` the entries whose window ends first are evicted.
package struct ExposureDedupTable: Sendable {
    private var ends: [UInt64: UInt32] = [:]
    private var order = ExposureFIFO<(hash: UInt64, end: UInt32)>()
    /// The hard cap on entries.
    package let capacity: Int
    /// Entries evicted early because of the cap.
    package private(set) var evicted = 0

    /// Creates a table holding at most `capacity` entries.
    package init(capacity: Int) { self.capacity = max(1, capacity) }

    /// The number of live entries.
    package var count: Int { ends.count }

    /// If `hash` was seen in a window that has not ended at `now`, that window's end; otherwise
    /// starts a window `[now, now + window)` and returns `nil`.
    package mutating func check(_ hash: UInt64, now: UInt32, window: UInt32) -> UInt32? {
        prune(now: now, limit: 16)
        if let end = ends[hash], end > now { return end }
        let end = now &+ window < now ? UInt32.max : now + window
        ends[hash] = end
        order.append((hash, end))
        while ends.count > capacity || order.count > 2 * capacity {
            guard let oldest = order.popFirst() else { break }
            if ends[oldest.hash] == oldest.end {
                ends.removeValue(forKey: oldest.hash)
                if oldest.end > now { evicted += 1 }
            }
        }
        return nil
    }

    /// Forgets up to `limit` entries whose window has ended.
    package mutating func prune(now: UInt32, limit: Int) {
        var n = 0
        while n < limit, let oldest = order.first, oldest.end <= now {
            order.popFirst()
            if ends[oldest.hash] == oldest.end { ends.removeValue(forKey: oldest.hash) }
            n += 1
        }
    }
}

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
    private let windowSeconds: UInt32
    private let backoff: Backoff
    private let keyPrefix: String

    private(set) var dedup: ExposureDedupTable
    private var buffer = ExposureFIFO<ExposureEvent>()
    /// Batches waiting for a retry, oldest first (at most one in practice: drains stop at the
    /// first retryable failure).
    private(set) var retryQueue: [ExposureBatch] = []
    private var retryEventCount = 0
    private var inFlightCount = 0
    private var totals = ExposureCounters()
    private var consecutiveFailures = 0
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
        backoff = Backoff(base: o.retryBaseDelay, maximum: o.retryMaxDelay)
        keyPrefix = idempotencyKeyPrefix
        dedup = ExposureDedupTable(capacity: o.dedupCapacity)
        nextPeriodicFlush = o.flushInterval > .zero ? now + o.flushInterval : .seconds(Int64.max / 2)
    }

    /// Events kept and not yet sent or dropped, excluding the batch in flight.
    package var queuedCount: Int { buffer.count + retryEventCount }

    /// The counters, with ``ExposureCounters/pending`` filled in.
    package var counters: ExposureCounters {
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

extension ExposureFIFO: Sendable where Element: Sendable {}
