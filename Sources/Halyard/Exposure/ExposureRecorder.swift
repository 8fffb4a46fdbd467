package import CHalyardAtomics
package import Foundation

/// Coarse time for the read path: whole seconds since the recorder started, in one machine word
/// readable from any thread with one relaxed load (no lock, no read-modify-write).
///
/// It only moves forward: writers (the recorder's ticker, once a second, and every slow-path
/// call) advance it with a compare-and-swap "store max", so a late writer never moves it back.
package final class ExposureCoarseClock: @unchecked Sendable {
    /// The word holding the coarse seconds. Allocated once, never moved, freed in `deinit`;
    /// read it with `hal_load_relaxed`.
    package let word: UnsafeMutablePointer<hal_atomic_word>

    /// Creates a coarse clock reading 0.
    package init() {
        word = UnsafeMutablePointer<hal_atomic_word>.allocate(capacity: 1)
        word.initialize(to: hal_atomic_word(value: 0))
    }

    deinit {
        word.deinitialize(count: 1)
        word.deallocate()
    }

    /// The coarse seconds: one relaxed atomic load.
    @inline(__always)
    package func now() -> UInt32 {
        UInt32(truncatingIfNeeded: hal_load_relaxed(word))
    }

    /// Moves the clock forward to `seconds` (never back); returns the resulting value.
    @discardableResult
    package func advance(to seconds: UInt32) -> UInt32 {
        var current = hal_load_relaxed(word)
        while UInt(seconds) > current {
            var expected = current
            if hal_compare_exchange(word, &expected, UInt(seconds)) { return seconds }
            current = expected
        }
        return UInt32(truncatingIfNeeded: current)
    }
}

/// The exposure pipeline (docs/exposures.md): the read path's slow path calls
/// ``recordExposure(key:variant:reason:contextFingerprint:value:errorCode:metadata:)`` when its local
/// "exposed until" slot has expired; the recorder de-duplicates, samples, buffers and uploads in gzip batches.
///
/// All decisions live in the value type ``ExposureState``; this class holds it under a lock,
/// and performs what it decides (uploads, timers) outside the lock.
///
/// Lifecycle: a ticker task (when `startsTicker`) advances ``coarseNow()`` every second and
/// starts the periodic flush and retries. It runs only while there is work: it starts with a
/// recorded exposure (not at creation) and stops once nothing is pending and every
/// de-duplication window handed to a read has ended (``ExposureState/needsTicker(coarseNow:)``),
/// so an idle client keeps no timer waking every second (an idle app's battery). The next
/// recorded exposure starts it again. ``close()`` stops it and flushes once more, detached.
package final class ExposureRecorder: Sendable {
    /// `false` when automatic recording is disabled by the options; reads skip everything.
    /// (``recordExposure(key:variant:reason:contextFingerprint:value:errorCode:metadata:)`` still records
    /// explicit calls.)
    package let isEnabled: Bool
    /// The coarse clock read by ``coarseNow()``; the read path may hold it and load its word.
    package let coarseClock: ExposureCoarseClock
    /// The normalized options in effect.
    package let options: ExposureOptions

    private let clock: any HalyardClock
    private let transport: any FlagTransport
    private let target: UploadTarget
    private let meta: @Sendable () -> ExposureMeta
    private let headers: @Sendable () -> [String: String]
    private let log: (@Sendable (String) -> Void)?
    private let origin: Duration
    private let wallOrigin: Int64
    private let state: Locked<ExposureState>
    private let compressor = SharedCompressor()
    /// The last OTLP partial-success message logged (each distinct message is logged once in a row).
    private let lastPartialMessage = Locked<String?>(nil)
    /// The HTTP statuses whose `google.rpc.Status` message has been logged (each once; at most
    /// ``maxLoggedStatuses`` are remembered, after which messages are no longer logged).
    private let loggedStatusMessages = Locked<Set<Int>>([])
    /// The OTLP resource attributes below the options' `serviceName`: the exporter's (or the
    /// process environment's) under ``ExposureOptions/resourceAttributes``. Empty for `.halyard`.
    private let otlpResourceAttributes: [String: String]

    /// The largest response body read from an upload (4 MiB, SPEC §13); a larger answer is a
    /// failure that drops its batch.
    package static let maxResponseBytes = 4 << 20
    /// How many distinct statuses' messages are logged at most.
    static let maxLoggedStatuses = 64

    /// Where and how batches are uploaded, from ``ExposureOptions/exporter``.
    private enum UploadTarget {
        /// SPEC §7: `{baseURL}{path}`, the identity headers, an `Idempotency-Key`.
        case halyard(URL)
        /// OTLP/HTTP: the logs URL (``ExposureExporter/otlpLogsURL``) with the exporter's
        /// headers only, its encoding, compression, timeout and transport.
        case otlp(OTLPUpload)
        /// An exporter that must not be used (validated at client creation; a recorder built
        /// without that check drops every batch as rejected rather than send).
        case invalid(ExposureExporterError)
    }
    private let turn = Locked(Turn())
    private let tasks = Locked(Tasks())

    private struct Turn {
        var busy = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private struct Tasks {
        var startsTicker = false
        /// A ticker is running (or being started).
        var ticking = false
        var closed = false
        var ticker: Task<Void, Never>?
        var final: Task<ExposureFlushResult, Never>?
    }

    private enum DrainMode { case automatic, explicit, final }

    /// Creates a recorder with fixed upload headers (see the designated initializer).
    package convenience init(
        options: ExposureOptions,
        clock: any HalyardClock,
        transport: any FlagTransport,
        endpoint: URL,
        meta: @autoclosure @escaping @Sendable () -> ExposureMeta,
        headers: [String: String],
        log: (@Sendable (String) -> Void)? = nil,
        startsTicker: Bool = true
    ) {
        self.init(
            options: options, clock: clock, transport: transport, endpoint: endpoint, meta: meta(),
            headerProvider: { headers }, log: log, startsTicker: startsTicker)
    }

    /// Creates a recorder.
    ///
    /// - Parameters:
    ///   - options: the exposure options (normalized here).
    ///   - clock: timestamps, windows, backoff and the ticker use it.
    ///   - transport: uploads go through it.
    ///   - endpoint: the control plane's base URL; the ``ExposureExporter/halyard`` exporter
    ///     uploads to `endpoint` + `options.path` (the OTLP exporter has its own endpoint).
    ///   - meta: the `meta` object of every upload, evaluated at the first upload (it may hold the
    ///     install id, which is resolved lazily and never on the creating thread).
    ///   - headerProvider: extra header fields for every upload to the control plane
    ///     (`Authorization`, `User-Agent`, …), read at each upload so a key rotation reaches the
    ///     uploader; `Content-Type`, `Content-Encoding` and `Idempotency-Key` are set by the
    ///     recorder. Never sent to an OTLP endpoint (it gets the exporter's headers).
    ///   - log: called (never under a lock) with a warning when a batch is rejected or cannot be
    ///     compressed. Never passed the key or header values.
    ///   - startsTicker: whether to run the once-a-second ticker (tests pass `false` and drive
    ///     ``tick()`` themselves).
    package init(
        options: ExposureOptions,
        clock: any HalyardClock,
        transport: any FlagTransport,
        endpoint: URL,
        meta: @autoclosure @escaping @Sendable () -> ExposureMeta,
        headerProvider: @escaping @Sendable () -> [String: String] = { [:] },
        log: (@Sendable (String) -> Void)? = nil,
        startsTicker: Bool = true
    ) {
        let o = options.normalized
        self.options = o
        isEnabled = o.enabled
        coarseClock = ExposureCoarseClock()
        self.clock = clock
        // Halyard's deadline and redirect log around whatever transport uploads.
        var logHandler: HalyardLogHandler?
        if let log { logHandler = { _, message in log(message) } }
        self.transport = GuardedTransport.wrapping(transport, logHandler: logHandler)
        switch o.exporter {
        case .halyard:
            target = .halyard(endpoint.appendingEndpoint(o.path))
            otlpResourceAttributes = [:]
        case .otlp, .otlpConfigured:
            var base: [String: String]
            let headers: [String: String]
            if case .otlpConfigured(let configuration) = o.exporter {
                base = configuration.resourceAttributes
                headers = configuration.headers
            } else {
                // `.otlp(endpoint:headers:)` given directly: the process environment at creation.
                base = OTLPEnvironment.resourceAttributes(o.environment ?? ProcessInfo.processInfo.environment)
                if case .otlp(_, let given) = o.exporter { headers = given } else { headers = [:] }
            }
            base.merge(o.resourceAttributes) { _, option in option }
            otlpResourceAttributes = base
            let upload = OTLPUpload.make(o.exporter, headers: headers, transport: transport, logHandler: logHandler)
            switch upload.plan {
            case .success(let plan): target = .otlp(plan)
            case .failure(let error): target = .invalid(error)
            }
            for warning in upload.warnings { log?("Halyard: " + warning) }
        }
        self.meta = meta
        self.headers = headerProvider
        self.log = log
        origin = clock.monotonicNow
        wallOrigin = Int64(clock.wallNow.timeIntervalSince1970.rounded(.down))
        var rng = SystemRandomNumberGenerator()
        let prefix = String(format: "%016llx%016llx", rng.next() as UInt64, rng.next() as UInt64)
        state = Locked(ExposureState(options: o, idempotencyKeyPrefix: prefix))
        tasks.withLock { $0.startsTicker = startsTicker }
    }

    deinit {
        // Cancel outside the lock: cancellation runs the clock's handlers synchronously.
        let ticker = tasks.withLock { t -> Task<Void, Never>? in
            defer { t.ticker = nil }
            return t.ticker
        }
        ticker?.cancel()
    }

    // MARK: - Time

    private var elapsed: Duration {
        let d = clock.monotonicNow - origin
        return d < .zero ? .zero : d
    }

    private static func seconds(_ d: Duration) -> UInt32 {
        UInt32(clamping: d.components.seconds)
    }

    /// Coarse whole seconds since the recorder started: one relaxed atomic load, no lock.
    @inline(__always)
    package func coarseNow() -> UInt32 { coarseClock.now() }

    // MARK: - Recording

    /// The slow path of a read whose local slot expired (or an explicit record).
    ///
    /// Applies the authoritative de-duplication on (key, variant, fingerprint) within the window,
    /// then sampling, then buffers the event. Returns the coarse second until which this triple
    /// needs no further call — the end of its window, also when it was de-duplicated or sampled
    /// out; the read stores it in its slot and skips the recorder while `coarseNow() < slot`.
    /// After ``close()`` it records nothing and returns `UInt32.max`.
    ///
    /// `value` is kept only when `variant` is nil and the exporter writes it (OTLP); the SPEC §7
    /// exporter never holds it.
    @discardableResult
    package func recordExposure(
        key: String, variant: String?, reason: EvaluationReason, contextFingerprint: String, value: JSONValue?,
        errorCode: FlagErrorCode?, metadata: FlagMetadata = [:]
    ) -> UInt32 {
        let now = elapsed
        let seconds = coarseClock.advance(to: Self.seconds(now))
        let dedupKey = ExposureHash.dedupKey(fingerprint: contextFingerprint, key: key, variant: variant)
        let creation = wallOrigin + Int64(seconds)
        let keeps = keepsValue
        // Outside the lock: the metadata's texts (OTLP only).
        let version = keeps ? metadata["version"].map(Self.text) : nil
        let setID = keeps ? metadata["flagSetId"].map(Self.text) : nil
        let result = state.withLock {
            $0.record(
                key: key, variant: variant, reason: reason.rawValue, contextFingerprint: contextFingerprint,
                dedupKey: dedupKey, now: now, nowSeconds: seconds, creationDate: creation,
                value: keeps && variant == nil ? value : nil, errorCode: errorCode, flagVersion: version,
                flagSetID: setID)
        }
        if result.startDrain {
            Task { await self.drain(.automatic) }
        }
        startTickerIfNeeded()
        return result.windowEnd
    }

    /// A metadata value as an attribute's text: a string as it is, a number in its shortest form
    /// (`3`, not `3.0`), a Boolean as `true`/`false`.
    static func text(_ value: FlagMetadataValue) -> String {
        switch value {
        case .string(let s): return s
        case .bool(let b): return b ? "true" : "false"
        case .int(let i): return String(i)
        case .number(let d):
            if d.isFinite, d.magnitude < 9_007_199_254_740_992, d == d.rounded(.towardZero) { return String(Int64(d)) }
            return String(d)
        }
    }

    /// Whether events keep the served value (the OTLP exporter writes it when there is no variant).
    private var keepsValue: Bool {
        if case .otlp = target { return true }
        return false
    }

    /// The counters (``ExposureCounters/pending`` is the current gauge).
    package var counters: ExposureCounters { state.withLock { $0.counters } }

    // MARK: - Flushing

    /// Uploads everything pending now, in batches of at most `batchSize`, one request at a time;
    /// stops at the first retryable failure (the batch is requeued) or when a backoff or
    /// `Retry-After` is in effect (reported in ``ExposureFlushResult/retryAfter``). Waits for a
    /// flush already in progress first. After ``close()`` it waits for the final flush.
    package func flush() async -> ExposureFlushResult {
        if let final = tasks.withLock({ $0.final }) {
            var r = await final.value
            r.pendingEvents = counters.pending
            return r
        }
        return await drain(.explicit)
    }

    /// One ticker step: advances the coarse clock and starts an automatic drain when the
    /// periodic flush is due, a retry's backoff is over, or a full batch waits.
    package func tick() {
        let now = elapsed
        coarseClock.advance(to: Self.seconds(now))
        let start = state.withLock { $0.tick(now: now) }
        if start { Task { await self.drain(.automatic) } }
    }

    private func startTickerIfNeeded() {
        let start = tasks.withLock { t -> Bool in
            guard t.startsTicker, !t.closed, !t.ticking else { return false }
            t.ticking = true
            return true
        }
        if start { startTicker() }
    }

    /// Whether the ticker should keep running; when not, marks it stopped, atomically with the
    /// check, so a record that lands right after starts a new one (records update the state
    /// before they look at the ticker).
    private func keepTicking() -> Bool {
        let seconds = coarseNow()
        return tasks.withLock { t -> Bool in
            let keep = !t.closed && state.withLock { $0.needsTicker(coarseNow: seconds) }
            if !keep {
                t.ticking = false
                t.ticker = nil
            }
            return keep
        }
    }

    private func startTicker() {
        let period = options.flushInterval > .zero ? min(.seconds(1), options.flushInterval) : .seconds(1)
        let clock = self.clock
        let task = Task { [weak self] in
            while !Task.isCancelled {
                do { try await clock.sleep(for: period) } catch { return }
                guard let self else { return }
                self.tick()
                if !self.keepTicking() { return }
            }
        }
        let cancelNow = tasks.withLock { t -> Bool in
            if t.closed { return true }
            if t.ticking { t.ticker = task }  // else it already stopped itself
            return false
        }
        if cancelNow { task.cancel() }
    }

    /// Stops the ticker, stops recording, and flushes what is pending once more on a detached
    /// task without blocking the caller (ignoring any backoff; stopping at the first failure).
    /// Whatever is still pending after that final flush is counted as dropped. Idempotent.
    package func close() {
        let first = state.withLock { $0.close() }
        guard first else { return }
        let final = Task.detached { await self.drain(.final) }
        let ticker = tasks.withLock { t -> Task<Void, Never>? in
            let old = t.ticker
            t.ticker = nil
            t.closed = true
            t.final = final
            return old
        }
        ticker?.cancel()
    }

    /// Waits for the final flush started by ``close()`` (`nil` if not closed).
    package func waitUntilClosed() async -> ExposureFlushResult? {
        guard let final = tasks.withLock({ $0.final }) else { return nil }
        return await final.value
    }

    // MARK: - Drain

    private func acquireTurn() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let acquired = turn.withLock { t -> Bool in
                if !t.busy { t.busy = true; return true }
                t.waiters.append(c)
                return false
            }
            if acquired { c.resume() }
        }
    }

    private func releaseTurn() {
        let next = turn.withLock { t -> CheckedContinuation<Void, Never>? in
            if t.waiters.isEmpty { t.busy = false; return nil }
            return t.waiters.removeFirst()
        }
        next?.resume()
    }

    private func drain(_ mode: DrainMode) async -> ExposureFlushResult {
        await acquireTurn()
        var result = ExposureFlushResult()
        var rng = SystemRandomNumberGenerator()
        loop: while true {
            let now = elapsed  // read the injected clock outside the lock
            let next = state.withLock { $0.nextBatch(now: now, ignoreBackoff: mode == .final) }
            switch next {
            case .idle:
                break loop
            case .deferred:
                break loop
            case .send(let batch):
                let (outcome, statusMessage) = await upload(batch)
                let unit = Double(unitInterval: rng.next())
                let finishedAt = elapsed
                let finish = state.withLock { $0.finish(batch, outcome: outcome, now: finishedAt, unit: unit) }
                result.sentEvents += finish.sent
                if finish.sent > 0 { result.sentBatches += 1 }
                if finish.failed { result.failedBatches += 1 }
                result.droppedEvents += finish.dropped
                if let status = finish.rejectedStatus, let log {
                    let what = status == 0 ? "not sent (invalid exporter)" : "rejected with HTTP \(status)"
                    var line = "Halyard: exposure batch of \(batch.events.count) \(what); dropped"
                    if let statusMessage, firstMessage(for: status) { line += ": \(statusMessage)" }
                    log(line)
                }
                if finish.tooLarge, let log {
                    log(
                        "Halyard: exposure batch of \(batch.events.count) dropped: the answer was over "
                            + "\(Self.maxResponseBytes >> 20) MiB")
                }
                if case .partiallyDelivered(let rejected, let message) = outcome {
                    logPartialSuccess(
                        rejected: finish.partiallyRejected, of: batch.events.count, claimed: rejected, message)
                }
                if finish.stop { break loop }
            }
        }
        let now = elapsed
        let tail = state.withLock { s -> (dropped: Int, pending: Int, notBefore: Duration) in
            var dropped = 0
            if mode == .final { dropped = s.abandonQueued() }
            if mode == .automatic { s.automaticDrainFinished() }
            return (dropped, s.counters.pending, s.notBefore)
        }
        result.droppedEvents += tail.dropped
        result.pendingEvents = tail.pending
        if tail.pending > 0, tail.notBefore > now { result.retryAfter = tail.notBefore - now }
        releaseTurn()
        return result
    }

    /// Whether `status`'s receiver message has not been logged yet (and marks it logged).
    private func firstMessage(for status: Int) -> Bool {
        loggedStatusMessages.withLock { seen in
            guard !seen.contains(status), seen.count < Self.maxLoggedStatuses else { return false }
            seen.insert(status)
            return true
        }
    }

    /// Sends `batch` and classifies the answer; for an OTLP rejection also the receiver's
    /// `google.rpc.Status` message.
    private func upload(_ batch: ExposureBatch) async -> (ExposureUploadOutcome, String?) {
        let url: URL
        let json: [UInt8]
        var fields: [String: String]
        var (contentType, compresses, timeout, sender) = ("application/json", true, options.requestTimeout, transport)
        switch target {
        case .invalid:
            return (.rejected(status: 0), nil)
        case .halyard(let halyardURL):
            url = halyardURL
            json = ExposureEncoder.encode(meta: meta(), events: batch.events)
            fields = headers()
            fields["Idempotency-Key"] = batch.idempotencyKey
        case .otlp(let plan):
            url = plan.url
            let resource = OTLPLogsEncoder.Resource(
                meta: meta(), processName: ProcessInfo.processInfo.processName, attributes: otlpResourceAttributes,
                sampleRate: options.sampleRate, dedupWindowSeconds: Int(options.dedupWindowSeconds))
            json = plan.encode(resource: resource, events: batch.events)
            // The exporter's headers only: the control plane's key never goes to a collector.
            fields = plan.headers
            (contentType, compresses) = (plan.encoding.contentType, plan.compression == .gzip)
            timeout = plan.timeout ?? timeout
            sender = plan.transport ?? sender
        }
        let gzipped = compresses ? compressor.compress(json) : nil
        fields["Content-Type"] = contentType
        let body: Data
        if let gzipped {
            fields["Content-Encoding"] = "gzip"
            body = Data(gzipped)
        } else {
            if compresses { log?("Halyard: exposure batch could not be compressed; sending it uncompressed") }
            body = Data(json)
        }
        let request = TransportRequest(
            method: "POST", url: url, headers: fields, body: body,
            timeout: timeout, maxResponseBytes: Self.maxResponseBytes)
        do {
            let response = try await sender.send(request)
            if case .otlp(let plan) = target { return plan.classify(response, wallNow: clock.wallNow) }
            let outcome = ExposureUploadOutcome.classify(
                exporter: options.exporter,
                status: response.status,
                retryAfterHeader: response.header("Retry-After"),
                body: response.body,
                wallNow: clock.wallNow)
            var message: String?
            if case .rejected = outcome, keepsValue { message = ExposureUploadOutcome.statusMessage(response.body) }
            return (outcome, message)
        } catch TransportError.responseTooLarge {
            // The transport refuses an answer whose body is over the limit without giving its
            // status, so nothing says the batch arrived: a non-retryable failure (SPEC §13),
            // not a delivery, and not a retry (resending to a receiver that always answers at
            // that length would block the pipeline). docs/exposures.md, "Failure policy".
            return (.responseTooLarge, nil)
        } catch TransportError.redirectRefused {
            // Not followed, and it would not be next time either: dropped, not retried (the
            // transport's guard logged the target's origin once).
            return (.redirectRefused, nil)
        } catch {
            return (.retry(retryAfter: nil), nil)
        }
    }

    /// Logs an OTLP partial success: the counts, and the receiver's `errorMessage` (cut to 512
    /// characters) unless it is the same message as the last one logged.
    private func logPartialSuccess(rejected: Int, of count: Int, claimed: Int, _ message: String?) {
        guard let log else { return }
        let text = message.map { String($0.prefix(512)) }
        let repeated = lastPartialMessage.withLock { last -> Bool in
            defer { last = text }
            return text != nil && last == text
        }
        var line = "Halyard: the OTLP receiver rejected \(rejected) of \(count) log records"
        if claimed > count { line += " (it reported \(claimed))" }
        if let text, !repeated { line += ": \(text)" }
        if repeated && rejected == 0 { return }
        log(line)
    }
}

/// The recorder's reusable gzip stream. `GzipCompressor` owns a `z_stream` and is not
/// `Sendable`; it is only ever touched under this lock, so it cannot be shared unguarded.
private final class SharedCompressor: @unchecked Sendable {
    private let lock = NSLock()
    private let compressor = GzipCompressor()

    func compress(_ input: [UInt8]) -> [UInt8]? {
        lock.lock()
        defer { lock.unlock() }
        return compressor.compress(input)
    }
}
