import CHalyardAtomics
import Foundation

/// Flag values for many evaluation contexts in one process: the service mode (docs/service.md).
///
/// ```swift
/// var options = FlagServiceOptions(baseURL: url, key: "srv-...")
/// let service = try FlagService(options: options)
/// let flags = await service.flags(for: context)      // ContextFlags for this request
/// if flags.bool("checkout.new", default: false) { ... }
/// _ = await service.flushExposures()
/// service.close()
/// ```
///
/// Values come from the OFREP bulk endpoint, one request per context, and are held as
/// immutable snapshots in a bounded cache keyed by the context's fingerprint (the SHA-1 of its
/// fitted canonical JSON). ``flags(for:)`` answers a held context at once; on a miss it joins
/// the one fetch for that context and waits at most
/// ``FlagServiceOptions/coldFetchTimeout``. ``flagsIfCached(for:)`` never waits. Values older
/// than ``FlagServiceOptions/refreshAfter`` are served and refreshed in the background with
/// `If-None-Match`; values older than ``FlagServiceOptions/maxStaleness`` are not served.
public final class FlagService: Sendable {
    let options: FlagServiceOptions
    /// `options.probeLead`, computed once: a `Duration` division (through 128-bit arithmetic)
    /// cost ~1,350 instructions on every request's decision.
    let probeLead: Duration
    let cache: ContextCache
    let fetcher: ServiceFetcher
    /// The per-context decisions (Service/Policy/ContextPolicy.swift).
    let policy: ContextPolicy
    let recorder: ExposureRecorder
    let environment: ServiceReadEnvironment
    let identity: ClientIdentity
    /// One copy of each flag key for all the snapshots (docs/service.md, "How bytes are counted").
    let keys = FlagKeyInterner()
    /// One key table per distinct key list, shared by the snapshots built from it.
    let tables = FlagTableInterner()
    /// One detail per distinct served flag result, shared by the snapshots served it.
    let details: DetailInterner
    /// The warm path: contexts seen recently, fitted (docs/service.md, "The warm path").
    let memo: FittingMemo
    /// The event stream (ServiceStreaming.swift, FlagService+Streaming.swift), nil without one.
    let streaming: ServiceStreaming?
    /// The fleet's shared cache (SPEC §15, SharedFetchPlan.swift, SharedTier+Service.swift), nil without one.
    let sharedTier: SharedTier?
    /// Whether this service still has to learn the event stream from a control-plane answer of
    /// its own before it may be served from the shared cache alone (nil without a stream).
    let streamLearning: StreamLearning?
    /// The per-context change signal (FlagService+Changes.swift).
    let changes = ContextChangeHub()
    let clock: any HalyardClock
    /// The definitions evaluated in process (Service/InProcess/, docs/in-process.md), nil
    /// when values come from the control plane.
    let inProcess: InProcessEvaluator?
    /// The service's own atomic counters and its closed flag: named offsets into one
    /// allocation (``word(_:)``).
    enum Word: Int, CaseIterable {
        /// Non-zero once `close()` was called.
        case closed
        case coldWaits
        case coldWaitTimeouts
        case invalidContexts
        case backgroundRefreshes
        case probes
    }

    nonisolated(unsafe) let words = UnsafeMutablePointer<hal_atomic_word>.allocate(capacity: Word.allCases.count)

    /// The atomic word `w`.
    @inline(__always) func word(_ w: Word) -> UnsafeMutablePointer<hal_atomic_word> { words + w.rawValue }

    /// Creates a service. Nothing is fetched until a context is asked for.
    ///
    /// - Throws: ``FlagServiceError`` for programming errors only (blank key, a base URL that is
    ///   not absolute http(s), plain http to a non-loopback host, an OTLP endpoint the
    ///   exporter refuses, a ``FlagServiceOptions/sharedCache`` it cannot use, options out of
    ///   range).
    ///   Server keys are accepted.
    public init(options: FlagServiceOptions) throws(FlagServiceError) {
        try options.validate()
        let transport = options.transport ?? makeDefaultTransport(logHandler: options.logSink)
        // First: the one step besides `validate` that throws, before anything is started.
        if let source = options.definitions {
            do throws(DefinitionsSourceError) {
                inProcess = try InProcessEvaluator(options: options, source: source, transport: transport)
            } catch {
                throw .invalidDefinitionsSource(error)
            }
        } else {
            inProcess = nil
        }
        self.options = options
        probeLead = options.probeLead
        details = DetailInterner(stripes: options.sharedDetailStripes)
        clock = options.clock
        words.initialize(repeating: hal_atomic_word(value: 0), count: Word.allCases.count)
        let identity = ClientIdentity(
            baseURL: options.baseURL, key: options.key, appID: options.appID,
            installID: { [fixed = options.installID] in fixed ?? UUID().uuidString.lowercased() })
        self.identity = identity
        fetcher = ServiceFetcher(options: options, identity: identity, transport: transport)
        policy = ContextPolicy(
            configuration: .init(
                refreshAfter: options.refreshAfter, maxStaleness: options.maxStaleness, probeLead: probeLead),
            backoffs: fetcher.backoffs)
        // In process without a control plane, the Halyard exporter has nowhere to upload:
        // exposures then go to an OTLP exporter only (docs/in-process.md, "Exposures").
        var exposureOptions = options.exposures
        if !options.hasControlPlane, case .halyard = exposureOptions.exporter { exposureOptions.enabled = false }
        recorder = ExposureRecorder.forControlPlane(
            options: exposureOptions, clock: options.clock, transport: transport, baseURL: options.baseURL,
            appID: options.appID, serviceName: options.serviceName, identity: identity,
            logHandler: options.logSink)
        environment = ServiceReadEnvironment(sink: recorder, counters: ReadCounters())
        memo = FittingMemo(
            maxCount: min(options.maxContexts, 65_536), maxBytes: min(16 << 20, max(1 << 20, options.maxCacheBytes / 4))
        )
        cache = ContextCache(
            maxContexts: options.maxContexts, maxBytes: options.maxCacheBytes, admission: options.frequencyAdmission)
        streaming = ServiceStreaming.make(options: options, identity: identity, transport: transport, cache: cache)
        sharedTier = SharedTier.make(options: options)
        streamLearning = streaming == nil ? nil : StreamLearning()
        attachStreaming()
        inProcess?.start()
    }

    /// A service dropped without `close()` closes itself.
    deinit {
        close()
        words.deallocate()
    }

    // MARK: - Views

    /// The flag values for `context`, for one request.
    ///
    /// Held values (younger than `maxStaleness`) are returned at once; older than
    /// `refreshAfter`, a background refresh starts. On a miss the call joins the one fetch for
    /// the context (starting it when there is none) and waits at most `coldFetchTimeout`; if the
    /// values have not arrived by then, the view serves defaults with `PROVIDER_NOT_READY`
    /// (`PROVIDER_FATAL` once the key was refused) while the fetch completes. An invalid
    /// context gives a view serving defaults with `INVALID_CONTEXT`, and nothing is sent.
    public func flags(for context: EvaluationContext) async -> ContextFlags {
        if let inProcess { return await evaluatedFlags(for: context, inProcess, wait: true) }
        guard let entry = fit(context) else { return invalidView() }
        // Decided here rather than by awaiting `flags(for: entry.fitted)`: a hit then runs in
        // this one async frame, without a second frame holding the fitted context (measured).
        switch decide(entry.fitted, join: true, link: entry.cacheNode) {
        case .view(let view): return view
        case .join(let flight): return await wait(flight, entry.fitted.fingerprint)
        }
    }

    /// ``flags(for:)-(EvaluationContext)`` for a context fitted already (its fingerprint is
    /// the cache key): skips the fitting, the costly part of a hit.
    public func flags(for fitted: FittedContext) async -> ContextFlags {
        if let inProcess { return await evaluatedFlags(for: fitted, inProcess, wait: true) }
        switch decide(fitted, join: true) {
        case .view(let view): return view
        case .join(let flight): return await wait(flight, fitted.fingerprint)
        }
    }

    /// A miss's wait for the fetch it joined: at most `coldFetchTimeout`, then a view serving
    /// defaults with `PROVIDER_NOT_READY` while the fetch completes.
    private func wait(_ flight: ContextFlight, _ fingerprint: String) async -> ContextFlags {
        _ = hal_fetch_add(word(.coldWaits), 1)
        if let result = await flight.wait(timeout: options.coldFetchTimeout, clock: clock) {
            return view(result, fingerprint)
        }
        _ = hal_fetch_add(word(.coldWaitTimeouts), 1)
        return unavailableView(.providerNotReady, fingerprint)
    }

    /// The flag values for `context` if they are held now; never waits. On a miss the view
    /// serves defaults with `PROVIDER_NOT_READY` and the fetch starts (joined if in flight).
    public func flagsIfCached(for context: EvaluationContext) -> ContextFlags {
        if let inProcess { return evaluatedFlags(for: context, inProcess) }
        guard let entry = fit(context) else { return invalidView() }
        return flagsIfCached(entry.fitted, link: entry.cacheNode)
    }

    /// ``flagsIfCached(for:)-(EvaluationContext)`` for a context fitted already.
    public func flagsIfCached(for fitted: FittedContext) -> ContextFlags {
        if let inProcess { return evaluatedFlags(for: fitted, inProcess) }
        return flagsIfCached(fitted, link: nil)
    }

    private func flagsIfCached(_ fitted: FittedContext, link: UnsafeMutablePointer<Int32>?) -> ContextFlags {
        switch decide(fitted, join: false, link: link) {
        case .view(let view): return view
        case .join: return unavailableView(.providerNotReady, fitted.fingerprint)
        }
    }

    /// Uploads pending exposures now (as ``FlagClient/flushExposures()``).
    @discardableResult
    public func flushExposures() async -> ExposureFlushResult {
        await recorder.flush()
    }

    /// Stops every fetch (queued ones are refused, running ones cancelled), closes the exposure
    /// recorder (its final flush runs detached). Views keep answering from the values they
    /// hold; later calls serve held values and fetch nothing. Idempotent; never blocks.
    public func close() {
        guard hal_fetch_add(word(.closed), 1) == 0 else { return }
        inProcess?.close()
        streaming?.close()
        // The shared cache's leases are released (queued ahead of the closing of its
        // connections) before the fetches holding them are cancelled.
        sharedTier?.close()
        fetcher.close()
        recorder.close()
        changes.finish()
    }

    /// Whether ``close()`` was called.
    public var isClosed: Bool { hal_load_acquire(word(.closed)) != 0 }

    /// The service's status: `notReady` until a fetch succeeds, then `ready`; `error` from a
    /// 429 or the service-wide backoff until the next success (during a pause and after it,
    /// until a fetch succeeds again: docs/service.md, "Status"); `fatal` once the key was
    /// refused (401) until ``setKey(_:)``. A 403 is about one context and changes nothing here.
    /// With ``FlagServiceOptions/definitions``: `notReady` until the first definitions load,
    /// then `ready` (docs/in-process.md, "Status").
    public var status: ClientStatus { inProcess?.status ?? fetcher.status }

    /// Replaces the credential for every later request (fetches and exposure uploads), as
    /// ``FlagClient/setKey(_:)`` does. After a 401 made the service `fatal`, this is how it
    /// recovers: the status goes back to `notReady` and misses fetch again.
    ///
    /// - Throws: ``FlagServiceError/blankKey`` for an empty or whitespace key (then nothing
    ///   changes).
    public func setKey(_ key: String) async throws(FlagServiceError) {
        var candidate = options
        candidate.key = key
        try candidate.validate()
        guard !isClosed else { return }
        // One step: the request key, its generation and the shared cache's names change
        // together, so an answer to the old key is never applied nor written under the new
        // key's names (SPEC §12, §15; docs/service.md, "Key rotation").
        let tierKeys = sharedTier.map {
            ($0, SharedTier.Keys(baseURL: options.baseURL, key: key, appID: options.appID))
        }
        fetcher.setKey(key, tier: tierKeys)
        // A stream opened with the old key reconnects with the new one (SPEC §12).
        streaming?.driver.keyChanged()
    }

    /// Counters: the cache, the fetches, the reads and the exposures.
    public var stats: FlagServiceStats {
        var stats = FlagServiceStats()
        let totals = cache.totals()
        stats.cache.hits = totals.hits
        stats.cache.misses = totals.misses
        stats.cache.evictions = totals.evictions
        stats.cache.admissionRejections = totals.rejections
        stats.cache.contextsHeld = totals.count
        stats.cache.failureRecords = totals.failures
        stats.cache.failureRecordEvictions = totals.failureEvictions
        stats.fetching.probes = Int(hal_load_relaxed(word(.probes)))
        stats.cache.bytesHeld = cache.bytesHeld
        stats.cache.peakBytesHeld = cache.peakBytesHeld
        stats.fetching.inFlight = totals.flights
        stats.cache.coldWaits = Int(hal_load_relaxed(word(.coldWaits)))
        stats.cache.coldWaitTimeouts = Int(hal_load_relaxed(word(.coldWaitTimeouts)))
        stats.cache.invalidContexts = Int(hal_load_relaxed(word(.invalidContexts)))
        stats.fetching.backgroundRefreshes = Int(hal_load_relaxed(word(.backgroundRefreshes)))
        let fetches = fetcher.stats
        stats.fetching.requests = fetches.requestsSent
        stats.fetching.byStatus = fetches.responsesByStatus
        stats.fetching.notModified = fetches.notModified
        stats.fetching.timeouts = fetches.timeouts
        stats.fetching.networkErrors = fetches.networkErrors
        stats.fetching.invalidBodies = fetches.invalidBodies + fetches.oversizedResponses
        stats.fetching.paused = fetches.paused
        stats.fetching.shed = fetches.shed
        stats.fetching.dropped = fetches.dropped
        stats.fetching.forbiddenContexts = fetches.forbidden
        stats.fetching.staleKeyRefusals = fetches.staleKeyRefusals
        stats.fetching.staleKeyCancels = fetches.staleKeyCancels
        stats.cache.internedKeyBytes = keys.bytes + tables.bytes
        stats.cache.sharedDetailBytes = details.bytes
        stats.cache.sharedDetails = details.count
        stats.cache.memoBytes = memo.totals.bytes
        stats.status = status
        stats.definitions = inProcess?.stats
        stats.reads = environment.counters.stats
        stats.exposures = recorder.counters
        addStreamingStats(&stats)
        stats.sharedCache = sharedTier?.stats
        return stats
    }

    // MARK: - Internals

    /// The memo's entry for `context` (its `fitted` is read in place), or nil when the context
    /// is invalid.
    func fit(_ context: EvaluationContext) -> FittingMemo.Entry? {
        do {
            let limit = options.maxContextCodeUnits
            return try memo.entry(context) { (c) throws(ContextError) in try c.fitted(limit: limit) }
        } catch {
            _ = hal_fetch_add(word(.invalidContexts), 1)
            return nil
        }
    }

    func invalidView() -> ContextFlags {
        ContextFlags(unavailable: .invalidContext, fingerprint: nil, environment: environment)
    }

    func unavailableView(_ code: FlagErrorCode, _ fingerprint: String) -> ContextFlags {
        let code = code == .providerNotReady && fetcher.isFatal ? .providerFatal : code
        return ContextFlags(unavailable: code, fingerprint: fingerprint, environment: environment)
    }

    func view(_ result: ContextFlight.Result, _ fingerprint: String) -> ContextFlags {
        switch result {
        case .values(let snapshot): return ContextFlags(snapshot: snapshot, environment: environment)
        case .unavailable(let code): return unavailableView(code, fingerprint)
        }
    }
}
