import CHalyardAtomics
import Foundation

extension FlagService {
    /// Starts the fetch of a flight as a tracked task. The task holds the fetcher, not the
    /// service: a service dropped without `close()` is freed (its `deinit` closes it, which
    /// cancels this task and refuses the queued ones). Also the stream's refresh waves' entry
    /// (FlagService+Streaming.swift).
    func run(_ start: Start, _ fitted: FittedContext) {
        if start.background { _ = hal_fetch_add(word(.backgroundRefreshes), 1) }
        if start.probe { _ = hal_fetch_add(word(.probes), 1) }
        streaming?.noteFetched(fitted)
        let flight = start.flight
        let previous = start.previous
        let fetcher = self.fetcher
        let priority: FetchPriority = previous == nil ? .cold : .refresh
        fetcher.began(priority)
        let tier = sharedTier
        let plan = tier == nil ? nil : SharedFetchPlan(options: options, streamLearning: streamLearning)
        let started = fetcher.track { [weak self] in
            let answer: ServiceFetcher.Answer
            if let tier, let plan {
                answer = await plan.fetch(fitted, start, priority: priority, tier: tier, fetcher: fetcher)
            } else {
                answer = await fetcher.send(
                    fitted, etag: previous?.etag, priority: priority, flight: flight, flagConfig: start.flagConfig,
                    probe: start.probe)
            }
            fetcher.ended(priority)
            guard let self else {
                flight.complete(.unavailable(.providerNotReady))
                return
            }
            flight.complete(self.apply(answer, fitted.fingerprint, previous: previous, flight: flight))
            // A use recorded for a context not held that did not become an entry goes now.
            self.cache.settleStreamMiss(fitted.fingerprint)
            // An event found this fetch in flight: fetch again (apply removed the flight under
            // the shard lock the mark was set under, so no mark is lost). A refetch that was
            // owed and not sent (shed, or a pause began) is owed still: never dropped.
            if let refetch = flight.takeRefetch() {
                await self.refetchOwed(fitted, flagConfig: refetch.flagConfig)
            } else if start.owed, answer.sent == nil, answer.result.wasNotSent {
                await self.refetchOwed(fitted, flagConfig: start.flagConfig)
            }
        }
        if !started {
            fetcher.ended(priority)
            flight.complete(
                apply(.init(result: .skipped(until: nil)), fitted.fingerprint, previous: previous, flight: flight))
            cache.settleStreamMiss(fitted.fingerprint)
        }
    }

    /// Applies a fetch's result to the cache and ends the flight's entry there; returns what
    /// the flight's waiters get. Snapshots are built, measured and released outside the shard
    /// lock; the random draw of a backoff too.
    ///
    /// Values are confirmed as of when their request was SENT, not when the answer arrived
    /// (SPEC §12): an answer computed before a change whose event arrived while it was on its
    /// way is older than that event's stale mark, so the context is refreshed again.
    private func apply(
        _ answer: ServiceFetcher.Answer, _ fingerprint: String, previous: Snapshot?, flight: ContextFlight
    ) -> ContextFlight.Result {
        let result = answer.result
        let now = clock.monotonicNow
        var fresh: Snapshot?
        var freshBytes = 0
        let sentAt = min(answer.sent?.at ?? now, now)
        var confirmedAt = sentAt
        var served: (flags: [ServedFlag], etag: String?, wall: Date)?
        switch result {
        case .updated(let response, let etag):
            streaming?.advertised(response.eventStreams)
            served = (response.flags, etag, answer.sent?.wallAt ?? clock.wallNow)
        case .shared(let entry):
            // Confirmed when the entry was: it is as old here as in the fleet's cache.
            let wall = clock.wallNow
            // (Due a little earlier on this pod: `dueEarlierMilliseconds`, SharedFetchPlan.)
            let age = Duration.milliseconds(
                max(0, SharedTier.milliseconds(wall) - entry.confirmedAt + entry.dueEarlierMilliseconds))
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
        let policy = self.policy
        let fatal = fetcher.isFatal
        let unit = Double.random(in: 0..<1)
        let budget = cache.budget
        var dropped: [Snapshot] = []
        var pending: (node: ContextCache.Node, needed: Int)?
        /// New values stored, and the ones they replaced (for the change signal).
        var stored: (fresh: Snapshot, replaced: Snapshot?)?
        let home = cache.shardIndex(for: fingerprint)
        let outcome: ContextPolicy.Outcome
        switch result {
        case .updated, .shared: outcome = .updated
        case .notModified: outcome = .notModified
        case .badRequest: outcome = .badRequest
        case .forbidden: outcome = .forbidden
        case .unauthorized: outcome = .unauthorized
        case .skipped: outcome = .skipped
        case .shed: outcome = .shed
        case .failed(let retryAfter): outcome = .failed(retryAfter: retryAfter)
        }
        // The fetcher turned an answer to a replaced key into `.skipped` already: this one
        // was sent with the key in use.
        let generation = answer.sent?.keyGeneration ?? 0
        let delivered = cache.shards[home].withLock { s -> ContextFlight.Result in
            if s.flights[fingerprint] === flight { s.flights.removeValue(forKey: fingerprint) }
            let index = s.find(fingerprint)
            let held = index.flatMap { s.nodes[Int($0)].snapshot == nil ? nil : s.nodes[Int($0)].held }
            /// The entry's values while servable after the answer.
            func servable() -> Snapshot? {
                guard let i = index, let snapshot = s.nodes[Int(i)].snapshot,
                    policy.servable(s.nodes[Int(i)].held, now: now)
                else { return nil }
                return snapshot
            }
            let action = policy.answer(
                outcome, held: held, record: s.failureRecords[fingerprint], sentAt: confirmedAt,
                keyGeneration: generation, currentKey: generation, now: now, unit: unit)
            switch action {
            case .store(let facts):
                // New values, or the previous ones a 304 confirmed after the entry left.
                let snapshot: Snapshot
                let bytes: Int
                if let fresh {
                    (snapshot, bytes) = (fresh, freshBytes)
                } else if let previous {
                    (snapshot, bytes) = (previous, previousBytes)
                } else {
                    return .unavailable(.providerNotReady)
                }
                var node = ContextCache.Node(
                    key: fingerprint, snapshot: snapshot, confirmedAt: facts.confirmedAt, retryAt: .zero,
                    failures: 0, bytes: bytes + overhead, prev: -1, next: -1)
                node.held = facts
                if let fresh { stored = (fresh, index.flatMap { s.nodes[Int($0)].snapshot }) }
                s.failureRecords.removeValue(forKey: fingerprint)
                let change = s.upsert(node, budget: budget)
                dropped += change.dropped
                if change.needsRoom > 0 { pending = (node, change.needsRoom) }
                return .values(snapshot)
            case .update(let facts):
                if let i = index {
                    s.nodes[Int(i)].held = facts
                    if case .notModified = outcome { s.failureRecords.removeValue(forKey: fingerprint) }
                }
                if let snapshot = servable() { return .values(snapshot) }
                return .unavailable(.providerNotReady)
            case .fail(let record):
                // A context left without values: its entry (expired or refused values) goes, and
                // a failure record holds its code and backoff (never evicting an entry).
                if let snapshot = s.drop(fingerprint, budget: budget) { dropped.append(snapshot) }
                s.recordFailure(fingerprint, record)
                return .unavailable(record.code)
            case .none:
                // Nothing was learnt (nothing sent, a replaced key's answer, a 401): nothing is
                // stored and nothing evicted.
                if let snapshot = servable() { return .values(snapshot) }
                if case .unauthorized = outcome { return .unavailable(.providerFatal) }
                return .unavailable(fatal ? .providerFatal : .providerNotReady)
            }
        }
        if let pending {
            dropped += cache.storeMakingRoom(pending.node, home: home, needed: pending.needed).dropped
        }
        dropped.removeAll()  // evicted snapshots are released here, outside the locks
        if let stored { noteStored(stored.fresh, replacing: stored.replaced, for: fingerprint) }
        return delivered
    }
}
