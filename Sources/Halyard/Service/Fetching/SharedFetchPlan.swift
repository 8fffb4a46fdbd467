import Foundation

/// One flight's fetch through the fleet's shared cache (SPEC §15, docs/fleet.md, "A fetch,
/// step by step"), run in the flight's task, never on a read:
///
/// 1. **Look up** the context's entry. One confirmed within `refreshAfter` (and, for a
///    stream event's refresh, fetched for that event's flag set or confirmed after the event
///    arrived) answers the flight: no request. For a cold miss, an older entry still within
///    `maxStaleness` is served as a held entry is (the next read past `refreshAfter` refreshes
///    it through these same steps).
/// 2. **Lease**, once the flight holds a fetch slot: `SET lease token NX PX` (`requestTimeout`
///    + 1 s). The pod that takes it fetches from the control plane, writes the entry back (an
///    ordered write: never over a newer entry) and releases the lease (one round trip),
///    whatever the answer. A pod that finds the lease held gives its slot back and waits for
///    the entry (polling the lease, and the entry only once the lease is gone; 2 ms growing to
///    20 ms), up to the lease's lifetime; a cold miss's requests stop
///    waiting at `coldFetchTimeout` as always, while the flight goes on. If the lease lapses
///    with no entry, the pod tries for it once more, then fetches alone.
/// 3. Redis unavailable (breaker open, deadline, connection) at any step: the pod fetches
///    alone, exactly as without a shared cache.
struct SharedFetchPlan: Sendable {
    /// `refreshAfter` in whole milliseconds (saturating: entries carry wall milliseconds).
    let refreshAfterMilliseconds: Int64
    /// `maxStaleness` in whole milliseconds (saturating).
    let maxStalenessMilliseconds: Int64
    let clock: any HalyardClock
    let streamLearning: StreamLearning?

    /// The most a context served from the shared cache is due early on this pod: a tenth of
    /// `refreshAfter`, at most 30 s.
    let dueJitterMilliseconds: Int64

    init(options: FlagServiceOptions, streamLearning: StreamLearning?) {
        refreshAfterMilliseconds = options.refreshAfter.saturatingMilliseconds
        dueJitterMilliseconds = max(0, min(refreshAfterMilliseconds / 10, 30_000))
        maxStalenessMilliseconds = options.maxStaleness.saturatingMilliseconds
        clock = options.clock
        self.streamLearning = streamLearning
    }

    /// The first poll of a lease wait, and the longest gap between two.
    static let firstPoll: Duration = .milliseconds(2)
    static let maxPoll: Duration = .milliseconds(20)

    ///
    /// Every call of one fetch uses the names and MAC key current when it started, and an
    /// entry read under a key `setKey` has replaced since is not served (nor is an answer to
    /// a request sent with it applied or written: ``ServiceFetcher/Answer``).
    func fetch(
        _ fitted: FittedContext, _ start: FlagService.Start, priority: FetchPriority, tier: SharedTier,
        fetcher: ServiceFetcher
    ) async -> ServiceFetcher.Answer {
        let fingerprint = fitted.fingerprint
        let (keys, generation) = tier.current
        // The event's arrival on the wall clock (entries carry wall times: pods share no clock).
        let eventWall = start.eventAt.map { eventAt in
            SharedTier.milliseconds(clock.wallNow) - (clock.monotonicNow - eventAt).saturatingMilliseconds
        }

        // What this pod holds was confirmed then (wall milliseconds; values served from the
        // shared cache carry their entry's time).
        let heldConfirmedAt = start.previous?.confirmedAt.map { SharedTier.milliseconds($0) }

        func answers(_ entry: SharedEntry) -> Bool {
            let age = SharedTier.milliseconds(clock.wallNow) - entry.confirmedAt
            guard age <= refreshAfterMilliseconds else { return false }
            // A refresh is not answered by the very entry it holds (due early by its jitter):
            // it takes the lease and fetches for the fleet.
            if eventWall == nil, let held = heldConfirmedAt, entry.confirmedAt <= held { return false }
            guard let eventWall else { return true }
            if let version = start.flagConfig, entry.flagConfig == version { return true }
            return entry.confirmedAt >= eventWall
        }

        /// What a fetch in a slot came to: an answer, or the lease was found held (the slot
        /// is given back; the caller waits for the other pod's entry).
        enum InSlot {
            case answer(ServiceFetcher.Answer)
            case leaseHeld
        }

        /// Takes a fetch slot, then (`lease`) the context's lease, sends, writes the entry back
        /// and releases the lease. The lease is taken only once the slot is held, so its
        /// lifetime covers the request, not the wait for a slot; it is released whatever the
        /// answer (an error, a pause, a cancellation included).
        func fetchInSlot(lease: Bool) async -> InSlot {
            if let refused = await fetcher.takeSlot(priority, flight: start.flight, probe: start.probe) {
                return .answer(refused)
            }
            var token: [UInt8]?
            if lease {
                switch await tier.acquireLease(fingerprint, keys: keys) {
                case .held:
                    fetcher.releaseSlot()
                    return .leaseHeld
                case .acquired(let taken, let entry):
                    if let entry, answers(entry) {
                        // Written by another pod between this pod's look and its lease.
                        fetcher.releaseSlot()
                        await tier.releaseLease(taken, for: fingerprint, keys: keys)
                        return .answer(served(entry))
                    }
                    token = taken
                case .unavailable:
                    break  // fetch alone
                }
            }
            let answer = await fetcher.sendHoldingSlot(
                fitted, etag: start.previous?.etag, flagConfig: start.flagConfig, probe: start.probe)
            fetcher.releaseSlot()
            let result = answer.result
            // The entry is confirmed as of when its request was sent: an answer to a request
            // sent before a change event must never look newer than the event to another pod.
            let confirmed = SharedTier.milliseconds(answer.sent?.wallAt ?? clock.wallNow)
            var entry: SharedEntry?
            switch result {
            case .updated(let response, let etag):
                entry = SharedEntry(
                    flags: response.flags, etag: etag, confirmedAt: confirmed, flagConfig: start.flagConfig)
            case .notModified:
                if let previous = start.previous {
                    entry = SharedEntry(
                        flags: previous.flags, etag: previous.etag, confirmedAt: confirmed,
                        flagConfig: start.flagConfig)
                }
            default:
                break
            }
            if entry != nil || token != nil {
                await tier.store(
                    entry, for: fingerprint, sentWith: answer.sent?.keyGeneration, releasing: token, leaseKeys: keys)
            }
            return .answer(answer)
        }

        func fetchAlone() async -> ServiceFetcher.Answer {
            if case .answer(let answer) = await fetchInSlot(lease: false) { return answer }
            return .init(result: .skipped(until: nil))
        }

        func served(_ entry: SharedEntry) -> ServiceFetcher.Answer {
            // Read under a key `setKey` has replaced since: the old environment's values.
            guard fetcher.isCurrentKey(generation) else { return .init(result: .skipped(until: nil)) }
            tier.noteHit()
            fetcher.servedFromSharedCache()
            var entry = entry
            // Due a little earlier on this pod than on the others (docs/fleet.md, "Herds"), so
            // the fleet's pods do not all look the context up at the same moment.
            entry.dueEarlierMilliseconds = tier.drawDueEarlier(most: dueJitterMilliseconds)
            return .init(result: .shared(entry))
        }

        // A pod that has not yet learned the stream asks the control plane once.
        if let streamLearning, streamLearning.take() {
            let answer = await fetchAlone()
            if case .updated = answer.result {} else { streamLearning.giveBack() }
            return answer
        }

        switch await tier.lookup(fingerprint, keys: keys) {
        case .entry(let entry) where answers(entry):
            return served(entry)
        case .entry(let entry):
            tier.noteUnusable()
            let age = SharedTier.milliseconds(clock.wallNow) - entry.confirmedAt
            if start.previous == nil, age <= maxStalenessMilliseconds { return served(entry) }
        case .none:
            break
        case .unavailable:
            return await fetchAlone()
        }

        for _ in 0..<2 {
            switch await fetchInSlot(lease: true) {
            case .answer(let answer):
                return answer
            case .leaseHeld:
                let entry = await waitForEntry(fingerprint, tier: tier, keys: keys, answers: answers)
                tier.noteLeaseWait(served: entry != nil)
                if let entry { return served(entry) }
                if Task.isCancelled { return .init(result: .skipped(until: nil)) }
            }
        }
        return await fetchAlone()
    }

    /// Polls the lease until it is gone (then reads the entry, in the same script), Redis is
    /// unavailable or the lease's lifetime has passed: the entry is not downloaded while the
    /// lease is held.
    private func waitForEntry(
        _ fingerprint: String, tier: SharedTier, keys: SharedTier.Keys, answers: (SharedEntry) -> Bool
    ) async -> SharedEntry? {
        let deadline = clock.monotonicNow + tier.leaseDuration
        var pause = Self.firstPoll
        while clock.monotonicNow < deadline {
            do { try await clock.sleep(for: pause) } catch { return nil }
            pause = min(pause * 2, Self.maxPoll)
            let (lookup, held) = await tier.poll(fingerprint, keys: keys)
            switch lookup {
            case .entry(let entry) where answers(entry): return entry
            case .unavailable: return nil
            default: if !held { return nil }
            }
        }
        return nil
    }
}
