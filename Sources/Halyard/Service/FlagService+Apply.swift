import CHalyardAtomics
import Foundation

extension FlagService {
    /// Starts the fetch of a flight as a tracked task. The task holds the fetcher, not the
    /// service: a service dropped without `close()` is freed (its `deinit` closes it, which
    /// cancels this task and refuses the queued ones). Also the stream's refresh waves' entry
    /// (FlagService+Streaming.swift).
    func run(_ start: Start, _ fitted: FittedContext) {
        if start.background { _ = hal_fetch_add(words + 4, 1) }
        if start.probe { _ = hal_fetch_add(words + 5, 1) }
        streaming?.noteFetched(fitted)
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
            // A use recorded for a context not held that did not become an entry goes now.
            self.cache.settleStreamMiss(fitted.fingerprint)
            // An event found this fetch in flight: fetch again (apply removed the flight under
            // the shard lock the mark was set under, so no mark is lost).
            if let refetch = flight.takeRefetch() { await self.refreshHeld(fitted, flagConfig: refetch.flagConfig) }
        }
        if !started {
            fetcher.ended(priority)
            flight.complete(apply(.skipped(until: nil), fitted.fingerprint, previous: previous, flight: flight))
            cache.settleStreamMiss(fitted.fingerprint)
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
