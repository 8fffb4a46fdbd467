package import Foundation

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
///
/// The class is split by concern: this file holds its state, creation, recording and closing;
/// `+Ticker` the once-a-second ticker, `+Drain` the drain loop and its logging, `+Upload` the
/// request each exporter gets and the classification of the answer.
package final class ExposureRecorder: Sendable {
    /// `false` when automatic recording is disabled by the options; reads skip everything.
    /// (``recordExposure(key:variant:reason:contextFingerprint:value:errorCode:metadata:)`` still records
    /// explicit calls.)
    package let isEnabled: Bool
    /// The coarse clock read by ``coarseNow()``; the read path may hold it and load its word.
    package let coarseClock: ExposureCoarseClock
    /// The normalized options in effect.
    package let options: ExposureOptions

    /// Timestamps, windows, backoff and the ticker use it.
    let clock: any HalyardClock
    /// Uploads go through it (wrapped by ``GuardedTransport``).
    let transport: any FlagTransport
    /// Where and how batches are uploaded.
    let target: UploadTarget
    /// The `meta` object of every upload (evaluated at each upload).
    let meta: @Sendable () -> ExposureMeta
    /// The extra header fields of every upload to the control plane.
    let headers: @Sendable () -> [String: String]
    /// Where warnings go (never called under a lock).
    let log: (@Sendable (String) -> Void)?
    /// The clock's monotonic time at creation: ``elapsed`` counts from it.
    private let origin: Duration
    /// The wall clock at creation, in whole Unix seconds: events' creation dates count from it.
    private let wallOrigin: Int64
    /// The pipeline's decisions, under a lock.
    let state: Locked<ExposureState>
    /// The gzip stream every upload reuses.
    let compressor = SharedCompressor()
    /// The last OTLP partial-success message logged (each distinct message is logged once in a row).
    let lastPartialMessage = Locked<String?>(nil)
    /// The HTTP statuses whose `google.rpc.Status` message has been logged (each once; at most
    /// ``maxLoggedStatuses`` are remembered, after which messages are no longer logged).
    let loggedStatusMessages = Locked<Set<Int>>([])
    /// The OTLP resource attributes below the options' `serviceName`: the exporter's (or the
    /// process environment's) under ``ExposureOptions/resourceAttributes``. Empty for `.halyard`.
    let otlpResourceAttributes: [String: String]

    /// The largest response body read from an upload (4 MiB, SPEC §13); a larger answer is a
    /// failure that drops its batch.
    package static let maxResponseBytes = 4 << 20
    /// How many distinct statuses' messages are logged at most.
    static let maxLoggedStatuses = 64

    /// One drain at a time: who holds the turn, who waits for it.
    let turn = Locked(Turn())
    /// The ticker and the final flush.
    let tasks = Locked(Tasks())

    /// The ticker's and the final flush's tasks, and whether the recorder is closed.
    struct Tasks {
        /// Whether a ticker runs at all (tests drive ``tick()`` themselves).
        var startsTicker = false
        /// A ticker is running (or being started).
        var ticking = false
        /// Whether ``close()`` was called.
        var closed = false
        /// The running ticker, if any.
        var ticker: Task<Void, Never>?
        /// The final flush started by ``close()``.
        var final: Task<ExposureFlushResult, Never>?
    }

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
        var logHandler: HalyardLogRecordHandler?
        if let log { logHandler = { record in log(record.message) } }
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

    /// Cancels the ticker, if one runs.
    deinit {
        // Cancel outside the lock: cancellation runs the clock's handlers synchronously.
        let ticker = tasks.withLock { t -> Task<Void, Never>? in
            defer { t.ticker = nil }
            return t.ticker
        }
        ticker?.cancel()
    }

    // MARK: - Time

    /// Monotonic time since the recorder was created (never negative).
    var elapsed: Duration {
        let d = clock.monotonicNow - origin
        return d < .zero ? .zero : d
    }

    /// `d` in whole seconds, clamped to `UInt32`: the coarse clock's unit.
    static func seconds(_ d: Duration) -> UInt32 {
        UInt32(clamping: d.saturatingSeconds)
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

    /// The counters (``ExposureStats/pending`` is the current gauge).
    package var counters: ExposureStats { state.withLock { $0.counters } }

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
}
