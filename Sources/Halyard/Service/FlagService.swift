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
    /// The fleet's shared cache (SPEC §15, FlagService+SharedCache.swift), nil without one.
    let sharedTier: SharedTier?
    /// Whether this service still has to learn the event stream from a control-plane answer of
    /// its own before it may be served from the shared cache alone (nil without a stream).
    let streamLearning: StreamLearning?
    private let clock: any HalyardClock
    /// [closed, cold waits, timeouts, invalid contexts, background refreshes, probes].
    private nonisolated(unsafe) let words = UnsafeMutablePointer<hal_atomic_word>.allocate(capacity: 6)

    /// Creates a service. Nothing is fetched until a context is asked for.
    ///
    /// - Throws: ``FlagServiceError`` for programming errors only (blank key, a base URL that is
    ///   not absolute http(s), plain http to a non-loopback host, an OTLP endpoint the
    ///   exporter refuses, a ``FlagServiceOptions/sharedCache`` it cannot use, options out of
    ///   range).
    ///   Server keys are accepted.
    public init(options: FlagServiceOptions) throws(FlagServiceError) {
        try options.validate()
        self.options = options
        probeLead = options.probeLead
        details = DetailInterner(stripes: options.sharedDetailStripes)
        clock = options.clock
        words.initialize(repeating: hal_atomic_word(value: 0), count: 6)
        let transport = options.transport ?? makeDefaultTransport(logHandler: options.logHandler)
        let identity = ClientIdentity(
            baseURL: options.baseURL, key: options.key, appID: options.appID,
            installID: { [fixed = options.installID] in fixed ?? UUID().uuidString.lowercased() })
        self.identity = identity
        fetcher = ServiceFetcher(options: options, identity: identity, transport: transport)
        recorder = ExposureRecorder.forControlPlane(
            options: options.exposures, clock: options.clock, transport: transport, baseURL: options.baseURL,
            appID: options.appID, serviceName: options.serviceName, identity: identity,
            logHandler: options.logHandler)
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
        switch decide(fitted, join: true) {
        case .view(let view): return view
        case .join(let flight): return await wait(flight, fitted.fingerprint)
        }
    }

    /// A miss's wait for the fetch it joined: at most `coldFetchTimeout`, then a view serving
    /// defaults with `PROVIDER_NOT_READY` while the fetch completes.
    private func wait(_ flight: ContextFlight, _ fingerprint: String) async -> ContextFlags {
        _ = hal_fetch_add(words + 1, 1)
        if let result = await flight.wait(timeout: options.coldFetchTimeout, clock: clock) {
            return view(result, fingerprint)
        }
        _ = hal_fetch_add(words + 2, 1)
        return unavailableView(.providerNotReady, fingerprint)
    }

    /// The flag values for `context` if they are held now; never waits. On a miss the view
    /// serves defaults with `PROVIDER_NOT_READY` and the fetch starts (joined if in flight).
    public func flagsIfCached(for context: EvaluationContext) -> ContextFlags {
        guard let entry = fit(context) else { return invalidView() }
        return flagsIfCached(entry.fitted, link: entry.cacheNode)
    }

    /// ``flagsIfCached(for:)-(EvaluationContext)`` for a context fitted already.
    public func flagsIfCached(for fitted: FittedContext) -> ContextFlags {
        flagsIfCached(fitted, link: nil)
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
        guard hal_fetch_add(words, 1) == 0 else { return }
        streaming?.close()
        fetcher.close()
        sharedTier?.close()
        recorder.close()
    }

    /// Whether ``close()`` was called.
    public var isClosed: Bool { hal_load_acquire(words) != 0 }

    /// The service's status: `notReady` until a fetch succeeds, then `ready`; `error` from a
    /// 429 or the service-wide backoff until the next success (during a pause and after it,
    /// until a fetch succeeds again: docs/service.md, "Status"); `fatal` once the key was
    /// refused (401) until ``setKey(_:)``. A 403 is about one context and changes nothing here.
    public var status: ClientStatus { fetcher.status }

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
        sharedTier?.setKey(baseURL: options.baseURL, key: key, appID: options.appID)
        fetcher.setKey(key)
    }

    /// Counters: the cache, the fetches, the reads and the exposures.
    public var stats: FlagServiceStats {
        var stats = FlagServiceStats()
        let totals = cache.totals()
        stats.hits = totals.hits
        stats.misses = totals.misses
        stats.evictions = totals.evictions
        stats.admissionRejections = totals.rejections
        stats.contextsHeld = totals.count
        stats.failureRecords = totals.failures
        stats.failureRecordEvictions = totals.failureEvictions
        stats.probes = Int(hal_load_relaxed(words + 5))
        stats.bytesHeld = cache.bytesHeld
        stats.peakBytesHeld = cache.peakBytesHeld
        stats.fetchesInFlight = totals.flights
        stats.coldWaits = Int(hal_load_relaxed(words + 1))
        stats.timeouts = Int(hal_load_relaxed(words + 2))
        stats.invalidContexts = Int(hal_load_relaxed(words + 3))
        stats.backgroundRefreshes = Int(hal_load_relaxed(words + 4))
        let fetches = fetcher.stats
        stats.requestsSent = fetches.requestsSent
        stats.fetchesByStatus = fetches.responsesByStatus
        stats.notModified = fetches.notModified
        stats.fetchTimeouts = fetches.timeouts
        stats.networkErrors = fetches.networkErrors
        stats.invalidBodies = fetches.invalidBodies + fetches.oversizedResponses
        stats.pausedFetches = fetches.paused
        stats.shedFetches = fetches.shed
        stats.droppedFetches = fetches.dropped
        stats.forbiddenContexts = fetches.forbidden
        stats.staleKeyRefusals = fetches.staleKeyRefusals
        stats.internedKeyBytes = keys.bytes + tables.bytes
        stats.sharedDetailBytes = details.bytes
        stats.sharedDetails = details.count
        stats.memoBytes = memo.totals.bytes
        stats.status = fetcher.status
        stats.reads = environment.counters.stats
        stats.exposures = recorder.counters
        addStreamingStats(&stats)
        stats.sharedCache = sharedTier?.stats
        return stats
    }

    // MARK: - Internals

    /// The memo's entry for `context` (its `fitted` is read in place), or nil when the context
    /// is invalid.
    private func fit(_ context: EvaluationContext) -> FittingMemo.Entry? {
        do {
            let limit = options.contextSizeLimit
            return try memo.entry(context) { (c) throws(ContextError) in try c.fitted(limit: limit) }
        } catch {
            _ = hal_fetch_add(words + 3, 1)
            return nil
        }
    }

    private func invalidView() -> ContextFlags {
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

    enum Decision {
        case view(ContextFlags)
        case join(ContextFlight)
    }

    struct Start {
        var flight: ContextFlight
        var previous: Snapshot?
        var background: Bool
        /// A stream event's flag configuration version (a wave's refresh only).
        var flagConfig: FlagConfigVersion? = nil
        /// When the event that started this refresh arrived (monotonic; a wave's refresh only):
        /// a shared-cache entry confirmed before it does not answer it.
        var eventAt: Duration? = nil
        /// The one request let through before the entry expires (passes the service-wide
        /// pause and the context's backoff; docs/service.md, "Recovery").
        var probe = false
    }

    /// The one decision of a request, under its shard's lock: serve held values (and maybe
    /// start a background refresh), serve defaults (invalid or backing-off context, or a
    /// service that creates no fetch now: paused, fatal, closed, queue full), or join the
    /// context's flight (starting it when there is none and the gate admits it). The gate is
    /// read from atomics before the lock; nothing is created when it is shut.
    ///
    /// `link`: a fitting-memo entry's cache node for this context (``ContextCache/Shard/find(_:linkedBy:)``),
    /// nil on the pre-fitted path.
    private func decide(_ fitted: FittedContext, join: Bool, link: UnsafeMutablePointer<Int32>? = nil) -> Decision {
        let fingerprint = fitted.fingerprint
        let now = clock.monotonicNow
        let gate = fetcher.gate(now: now)
        let shutCode: FlagErrorCode = gate.fatal ? .providerFatal : .providerNotReady
        var start: Start?
        var refused = false
        /// A held context whose refresh the gate shed for want of room: it gets a retry time.
        var shed = false
        let maxStaleness = options.maxStaleness
        let probeLead = self.probeLead
        // Held values confirmed before the last stream wave are stale (two atomic loads: no
        // global lock on the lookup path, SPEC §12; the use is recorded in the shard below).
        let tracking = streaming?.isTracking ?? false
        let staleBefore = streaming?.staleBefore ?? .zero
        var marked = false
        let decision = cache.shard(for: fingerprint).withLock { s -> Decision in
            var previous: Snapshot?
            s.recordAccess(fingerprint)
            let found: Int32?
            if let link { found = s.find(fingerprint, linkedBy: link) } else { found = s.find(fingerprint) }
            if let i = found {
                if tracking { s.noteStreamUse(i, fitted, now: now, budget: cache.budget) }
                s.touch(i)
                let node = s.nodes[Int(i)]
                if let snapshot = node.snapshot, now - node.confirmedAt <= maxStaleness {
                    s.hits += 1
                    // A context a wave holds is not marked (its refresh is queued or running).
                    marked = node.confirmedAt < staleBefore && !s.streamQueued.contains(fingerprint)
                    if now - node.confirmedAt > options.refreshAfter || marked, s.flights[fingerprint] == nil {
                        if now >= node.retryAt && gate.admits(.refresh) {
                            let flight = ContextFlight()
                            s.flights[fingerprint] = flight
                            start = Start(flight: flight, previous: snapshot, background: true)
                        } else if !node.probed, now >= node.confirmedAt + maxStaleness - probeLead,
                            node.sheds == 0 || now >= node.retryAt, gate.admitsProbe
                        {
                            // Its expiry is near and its backoff or the pause would outlast
                            // it: one request goes anyway.
                            s.nodes[Int(i)].probed = true
                            let flight = ContextFlight()
                            s.flights[fingerprint] = flight
                            start = Start(flight: flight, previous: snapshot, background: true, probe: true)
                        } else if now >= node.retryAt && gate.shedsRefresh {
                            shed = true
                        }
                    }
                    return .view(ContextFlags(snapshot: snapshot, environment: environment))
                }
                s.misses += 1
                if now < node.retryAt {
                    return .view(
                        ContextFlags(unavailable: .providerNotReady, fingerprint: fingerprint, environment: environment)
                    )
                }
                previous = node.snapshot
            } else {
                s.misses += 1
                if let record = s.failureRecords[fingerprint], now < record.retryAt {
                    return .view(
                        ContextFlags(unavailable: record.code, fingerprint: fingerprint, environment: environment))
                }
                // Not held (yet): a cold fetch, perhaps in flight during the next event, whose
                // wave must then fetch it again.
                if tracking { s.noteStreamMiss(fitted, now: now, budget: cache.budget) }
            }
            if let flight = s.flights[fingerprint] { return .join(flight) }
            // A held (expired) context re-fetches as a refresh: it has a user being served.
            guard gate.admits(previous == nil ? .cold : .refresh) else {
                refused = true
                if previous != nil && gate.shedsRefresh { shed = true }
                return .view(ContextFlags(unavailable: shutCode, fingerprint: fingerprint, environment: environment))
            }
            let flight = ContextFlight()
            s.flights[fingerprint] = flight
            start = Start(flight: flight, previous: previous, background: false)
            return .join(flight)
        }
        if refused || shed { fetcher.countRefused(gate) }
        if shed { shedRefresh(fingerprint, now: now) }
        if var start {
            // A refresh the stale mark started is event-triggered: it carries the event's
            // parameters (read outside the shard lock, once per context per wave).
            if marked, start.background {
                start.flagConfig = streaming?.staleFlagConfig
                start.eventAt = streaming?.staleBefore
            }
            run(start, fitted)
        }
        return decision
    }

    /// A refresh of a held context was shed (no room): the context gets a retry time, growing
    /// with the sheds in a row, so it creates at most one refresh per backoff step however many
    /// requests read it. The random draw is made outside the shard lock.
    private func shedRefresh(_ fingerprint: String, now: Duration) {
        let unit = Double.random(in: 0..<1)
        let fetcher = self.fetcher
        let maxStaleness = options.maxStaleness
        cache.shard(for: fingerprint).withLock { s in
            guard let i = s.find(fingerprint), s.nodes[Int(i)].snapshot != nil, now >= s.nodes[Int(i)].retryAt
            else { return }
            Self.noteShed(&s.nodes[Int(i)], now: now, unit: unit, fetcher: fetcher, maxStaleness: maxStaleness)
        }
    }

    /// Gives a held context whose refresh was shed its retry time.
    private static func noteShed(
        _ node: inout ContextCache.Node, now: Duration, unit: Double, fetcher: ServiceFetcher, maxStaleness: Duration
    ) {
        if node.sheds < .max { node.sheds += 1 }
        let delay = fetcher.shedDelay(sheds: Int(node.sheds), unit: unit)
        node.retryAt = retryTime(now: now, delay: delay, confirmedAt: node.confirmedAt, maxStaleness: maxStaleness)
    }

    /// A held context's retry time: `now + delay`, clamped to its entry's expiry while the
    /// entry is servable (the backoff never outlasts what may still be served).
    static func retryTime(now: Duration, delay: Duration, confirmedAt: Duration, maxStaleness: Duration) -> Duration {
        let expiry = confirmedAt + maxStaleness
        return now < expiry ? min(now + delay, expiry) : now + delay
    }

    /// Starts the fetch of a flight as a tracked task. The task holds the fetcher, not the
    /// service: a service dropped without `close()` is freed (its `deinit` closes it, which
    /// cancels this task and refuses the queued ones). Also the stream's refresh waves' entry
    /// (FlagService+Streaming.swift).
    func run(_ start: Start, _ fitted: FittedContext) {
        if start.background { _ = hal_fetch_add(words + 4, 1) }
        if start.probe { _ = hal_fetch_add(words + 5, 1) }
        let flight = start.flight
        let previous = start.previous
        let fetcher = self.fetcher
        let priority: FetchPriority = previous == nil ? .cold : .refresh
        fetcher.began(priority)
        let tier = sharedTier
        let plan = tier == nil ? nil : SharedFetchPlan(options: options, streamLearning: streamLearning)
        let started = fetcher.track { [weak self] in
            let result: ServiceFetcher.Result
            if let tier, let plan {
                result = await plan.fetch(fitted, start, priority: priority, tier: tier, fetcher: fetcher)
            } else {
                result = await fetcher.fetch(
                    fitted, etag: previous?.etag, priority: priority, flight: flight, flagConfig: start.flagConfig,
                    probe: start.probe)
            }
            fetcher.ended(priority)
            guard let self else {
                flight.complete(.unavailable(.providerNotReady))
                return
            }
            flight.complete(self.apply(result, fitted.fingerprint, previous: previous, flight: flight))
            // An event found this fetch in flight: fetch again (apply removed the flight under
            // the shard lock the mark was set under, so no mark is lost).
            if let refetch = flight.takeRefetch() { await self.refreshHeld(fitted, flagConfig: refetch.flagConfig) }
        }
        if !started {
            fetcher.ended(priority)
            flight.complete(apply(.skipped(until: nil), fitted.fingerprint, previous: previous, flight: flight))
        }
    }

    /// Applies a fetch's result to the cache and ends the flight's entry there; returns what
    /// the flight's waiters get. Snapshots are built, measured and released outside the shard
    /// lock; the random draw of a backoff too.
    private func apply(
        _ result: ServiceFetcher.Result, _ fingerprint: String, previous: Snapshot?, flight: ContextFlight
    ) -> ContextFlight.Result {
        let now = clock.monotonicNow
        var fresh: Snapshot?
        var freshBytes = 0
        var confirmedAt = now
        var served: (flags: [ServedFlag], etag: String?, wall: Date)?
        switch result {
        case .updated(let response, let etag):
            streaming?.advertised(response.eventStreams)
            served = (response.flags, etag, clock.wallNow)
        case .shared(let entry):
            // Confirmed when the entry was: it is as old here as in the fleet's cache.
            let wall = clock.wallNow
            let age = Duration.milliseconds(max(0, SharedTier.milliseconds(wall) - entry.confirmedAt))
            confirmedAt = now - min(age, now)
            served = (entry.flags, entry.etag, Date(timeIntervalSince1970: Double(entry.confirmedAt) / 1000))
        default:
            break
        }
        if let served {
            var flags = served.flags
            let etag = served.etag
            let keysShared = keys.intern(&flags)
            let snapshot = Snapshot.make(
                flags: flags, source: .network, confirmedAt: served.wall, contextFingerprint: fingerprint, etag: etag,
                inheritingFrom: previous, sharing: tables.table(for: flags),
                details: options.sharesServedDetails
                    ? details.details(for: flags, keysShared: keysShared, stripe: fingerprint.hashValue) : nil)
            fresh = snapshot
            freshBytes = snapshot.estimatedBytes(keysShared: keysShared)
        }
        var previousBytes = 0
        if case .notModified = result, let previous { previousBytes = previous.estimatedBytes() }
        let overhead = ContextCache.entryOverhead
        let maxStaleness = options.maxStaleness
        let refreshAfter = options.refreshAfter
        let fatal = fetcher.isFatal
        let fetcher = self.fetcher
        let unit = Double.random(in: 0..<1)
        let budget = cache.budget
        var dropped: [Snapshot] = []
        var pending: (node: ContextCache.Node, needed: Int)?
        let home = cache.shardIndex(for: fingerprint)
        let outcome = cache.shards[home].withLock { s -> ContextFlight.Result in
            if s.flights[fingerprint] === flight { s.flights.removeValue(forKey: fingerprint) }
            let index = s.find(fingerprint)
            let node = index.map { s.nodes[Int($0)] }
            let record = s.failureRecords[fingerprint]
            func servable(_ n: ContextCache.Node?) -> Snapshot? {
                guard let n, let snapshot = n.snapshot, now - n.confirmedAt <= maxStaleness else { return nil }
                return snapshot
            }
            func store(_ n: ContextCache.Node) {
                s.failureRecords.removeValue(forKey: fingerprint)
                let change = s.upsert(n, budget: budget)
                dropped += change.dropped
                if change.needsRoom > 0 { pending = (n, change.needsRoom) }
            }
            /// A context left without values: its entry (expired or refused values) goes, and a
            /// failure record holds its code and backoff (never evicting an entry).
            func fail(_ code: FlagErrorCode, retryAt: Duration, failures: Int) {
                if let snapshot = s.drop(fingerprint, budget: budget) { dropped.append(snapshot) }
                s.recordFailure(fingerprint, FailureRecord(code: code, retryAt: retryAt, failures: failures))
            }
            switch result {
            case .updated, .shared:
                guard let fresh else { return .unavailable(.providerNotReady) }
                store(
                    ContextCache.Node(
                        key: fingerprint, snapshot: fresh, confirmedAt: confirmedAt, retryAt: .zero,
                        failures: 0, bytes: freshBytes + overhead, prev: -1, next: -1))
                return .values(fresh)
            case .notModified:
                if let i = index, let snapshot = s.nodes[Int(i)].snapshot {
                    s.nodes[Int(i)].confirmedAt = now
                    s.nodes[Int(i)].retryAt = .zero
                    s.nodes[Int(i)].failures = 0
                    s.nodes[Int(i)].probed = false
                    s.nodes[Int(i)].sheds = 0
                    s.failureRecords.removeValue(forKey: fingerprint)
                    return .values(snapshot)
                }
                guard let previous else { return .unavailable(.providerNotReady) }
                store(
                    ContextCache.Node(
                        key: fingerprint, snapshot: previous, confirmedAt: now,
                        retryAt: .zero, failures: 0, bytes: previousBytes + overhead, prev: -1, next: -1))
                return .values(previous)
            case .badRequest:
                // SPEC §5: 400 keeps serving held values; otherwise remembered as invalid.
                if let i = index, let snapshot = servable(node) {
                    s.nodes[Int(i)].retryAt = now + refreshAfter
                    return .values(snapshot)
                }
                fail(.invalidContext, retryAt: now + refreshAfter, failures: 0)
                return .unavailable(.invalidContext)
            case .forbidden:
                // This context was refused (SPEC §12): defaults until maxStaleness, then retried.
                fail(.providerFatal, retryAt: now + maxStaleness, failures: (record?.failures ?? 0) + 1)
                return .unavailable(.providerFatal)
            case .unauthorized:
                if let snapshot = servable(node) { return .values(snapshot) }
                return .unavailable(.providerFatal)
            case .skipped:
                // Nothing was sent (paused, dropped, closed, fatal, cancelled): nothing is
                // learnt about this context, so nothing is stored and nothing evicted.
                if let snapshot = servable(node) { return .values(snapshot) }
                return .unavailable(fatal ? .providerFatal : .providerNotReady)
            case .shed:
                // No room in the queue: a held context gets a retry time (one refresh task per
                // backoff step, not one per request); a shed probe may be sent again after it.
                if let i = index, s.nodes[Int(i)].snapshot != nil {
                    Self.noteShed(&s.nodes[Int(i)], now: now, unit: unit, fetcher: fetcher, maxStaleness: maxStaleness)
                    s.nodes[Int(i)].probed = false
                }
                if let snapshot = servable(node) { return .values(snapshot) }
                return .unavailable(.providerNotReady)
            case .failed(let retryAfter):
                // Retry-After is a floor of the context's own backoff, never a replacement. A
                // context whose values are held waits at most the recovery interval.
                if let i = index {
                    let failures = s.nodes[Int(i)].failures + 1
                    let delay = max(
                        retryAfter ?? .zero, fetcher.contextDelay(failures: failures, unit: unit, held: true))
                    s.nodes[Int(i)].failures = failures
                    s.nodes[Int(i)].sheds = 0
                    s.nodes[Int(i)].retryAt = Self.retryTime(
                        now: now, delay: delay, confirmedAt: s.nodes[Int(i)].confirmedAt, maxStaleness: maxStaleness)
                    if let snapshot = servable(s.nodes[Int(i)]) { return .values(snapshot) }
                    return .unavailable(.providerNotReady)
                }
                let failures = (record?.failures ?? 0) + 1
                let delay = max(retryAfter ?? .zero, fetcher.contextDelay(failures: failures, unit: unit))
                s.recordFailure(
                    fingerprint, FailureRecord(code: .providerNotReady, retryAt: now + delay, failures: failures))
                return .unavailable(.providerNotReady)
            }
        }
        if let pending {
            dropped += cache.storeMakingRoom(pending.node, home: home, needed: pending.needed).dropped
        }
        dropped.removeAll()  // evicted snapshots are released here, outside the locks
        return outcome
    }
}
