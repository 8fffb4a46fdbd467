import Foundation

extension FlagService {
    /// How long an owed refetch waits before it looks again for room in the fetch gate.
    static let owedRefetchStep: Duration = .milliseconds(20)

    /// A change event arrived: every fetch in flight now is marked, whether or not its context
    /// is in the wave's uses (a refresh an earlier wave started, a background refresh): its
    /// answer may predate the change, so its context is fetched again when it ends
    /// (``refetchOwed(_:flagConfig:)``). Off the lookup path, one shard lock at a time.
    func markFlights(_ fetch: EventStreamMachine.Fetch) {
        let event = fetch.reason == .event
        for shard in cache.shards {
            shard.withLock { s in
                for flight in s.flights.values { flight.markRefetch(fetch.flagConfig, event: event) }
            }
        }
    }

    /// The refetch owed after a flight a change event marked (SPEC §12: "a refetch owed after
    /// such an answer is never dropped"). It waits for the end of a pause, for the context's
    /// own retry time and for room in the fetch gate, then refreshes the context in the
    /// background flight machinery; nothing when the context is no longer held, when another
    /// flight has started since (its request left after the event), or once the service is
    /// closed or fatal (no request then; the entry, confirmed as of a request sent before the
    /// event, is stale to it and refreshes on its first use after `setKey`).
    func refetchOwed(_ fitted: FittedContext, flagConfig: FlagConfigVersion?) async {
        enum Step {
            case done
            case start(Start)
            case wait(until: Duration?)
        }
        let fingerprint = fitted.fingerprint
        while !isClosed && !Task.isCancelled {
            let now = clock.monotonicNow
            let gate = fetcher.gate(now: now)
            if gate.closed || gate.fatal { return }
            let eventAt = streaming?.staleBefore
            let step = cache.shard(for: fingerprint).withLock { s -> Step in
                if s.flights[fingerprint] != nil { return .done }
                guard let i = s.find(fingerprint), let snapshot = s.nodes[Int(i)].snapshot else { return .done }
                let retryAt = s.nodes[Int(i)].retryAt
                if now < retryAt { return .wait(until: retryAt) }
                if let until = gate.pausedUntil { return .wait(until: until) }
                guard gate.admits(.refresh) else { return .wait(until: nil) }
                let flight = ContextFlight()
                s.flights[fingerprint] = flight
                return .start(
                    Start(
                        flight: flight, previous: snapshot, background: true, flagConfig: flagConfig,
                        eventAt: eventAt, owed: true))
            }
            switch step {
            case .done:
                return
            case .start(let start):
                run(start, fitted)
                return
            case .wait(let until):
                let delay = until.map { max($0 - now, .milliseconds(1)) } ?? Self.owedRefetchStep
                do { try await clock.sleep(for: delay) } catch { return }
            }
        }
    }
}
