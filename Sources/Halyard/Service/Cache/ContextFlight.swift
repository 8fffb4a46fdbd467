/// One fetch in flight for one context, and the requests waiting for it: the single-flight
/// unit. However many `flags(for:)` calls miss the same context at once, they join one flight
/// (one request); each waits at most its own timeout.
final class ContextFlight: Sendable {
    /// What a flight ends with.
    enum Result: Sendable {
        /// Values to serve.
        case values(Snapshot)
        /// Nothing to serve, and why.
        case unavailable(FlagErrorCode)
    }

    private struct Waiter {
        var continuation: CheckedContinuation<Result?, Never>
        var timer: Task<Void, Never>?
    }

    private struct State {
        var result: Result?
        var waiters: [UInt64: Waiter] = [:]
        var nextID: UInt64 = 0
        /// Called once when the last waiter leaves before the result (the queued fetch is then
        /// dropped, docs/service.md, "Brownout").
        var onAbandon: (@Sendable () -> Void)?
        var abandoned = false
        /// A stream event arrived while the fetch was on its way (``markRefetch(_:event:)``).
        var refetch: Refetch?
    }

    /// A re-fetch owed after the flight: the event's flag configuration version, if any.
    struct Refetch: Sendable {
        var flagConfig: FlagConfigVersion?
    }

    /// Marks the flight: a refetch event found it in flight, so its answer may predate the
    /// change; the context is fetched again once it ends (SPEC §14, service mode). The `flagConfig*`
    /// values follow the stream's rule (`EventStreamMachine.Fetch.flagConfig(_:then:)`): an
    /// event's (`event`) replace the mark's, even with none; a connect's or a re-learn's wave
    /// (no values of its own) keeps those of an event already marked. Called under the
    /// context's shard lock, like the flight's removal.
    func markRefetch(_ flagConfig: FlagConfigVersion?, event: Bool = true) {
        state.withLock { s in
            let kept = event ? flagConfig : flagConfig ?? s.refetch?.flagConfig
            s.refetch = Refetch(flagConfig: kept)
        }
    }

    /// The re-fetch owed after this flight, once (nil when no event marked it).
    func takeRefetch() -> Refetch? {
        state.withLock { s in
            defer { s.refetch = nil }
            return s.refetch
        }
    }

    private let state = Locked(State())

    /// The number of requests waiting now.
    var waiterCount: Int { state.withLock { $0.waiters.count } }

    /// Waits for the flight's result, at most `timeout` on `clock`; nil when the time ran out.
    func wait(timeout: Duration, clock: any HalyardClock) async -> Result? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Result?, Never>) in
            let (id, ready) = state.withLock { s -> (UInt64, Result?) in
                if let result = s.result { return (0, result) }
                s.nextID += 1
                s.waiters[s.nextID] = Waiter(continuation: continuation, timer: nil)
                return (s.nextID, nil)
            }
            if let ready {
                continuation.resume(returning: ready)
                return
            }
            let timer = Task { [weak self] in
                // A sleep that throws ends the wait too: cancelled by `complete` (then the
                // waiter is gone and this does nothing) or a clock that failed (the waiter
                // must not wait forever).
                try? await clock.sleep(for: timeout)
                self?.timeOut(id)
            }
            let keep = state.withLock { s -> Bool in
                guard s.waiters[id] != nil else { return false }
                s.waiters[id]?.timer = timer
                return true
            }
            if !keep { timer.cancel() }
        }
    }

    private func timeOut(_ id: UInt64) {
        let (waiter, abandon) = state.withLock { s -> (Waiter?, (@Sendable () -> Void)?) in
            let waiter = s.waiters.removeValue(forKey: id)
            guard waiter != nil, s.waiters.isEmpty, s.result == nil, !s.abandoned else { return (waiter, nil) }
            s.abandoned = true
            defer { s.onAbandon = nil }
            return (waiter, s.onAbandon)
        }
        waiter?.continuation.resume(returning: nil)
        abandon?()
    }

    /// Whether every request that waited has left (timed out) before the result.
    var isAbandoned: Bool { state.withLock { $0.abandoned } }

    /// Calls `action` once when every waiter has left before the result: now if that has
    /// happened already, never once the flight completed. A flight nobody waited on (a
    /// `flagsIfCached` miss) is not abandoned: its fetch is what the caller asked for.
    func whenAbandoned(_ action: @escaping @Sendable () -> Void) {
        let now = state.withLock { s -> Bool in
            if s.result != nil { return false }
            if s.abandoned { return true }
            s.onAbandon = action
            return false
        }
        if now { action() }
    }

    /// Ends the flight: every waiter gets `result` (and so does any later `wait`).
    func complete(_ result: Result) {
        let waiters = state.withLock { s -> [Waiter] in
            s.result = result
            s.onAbandon = nil
            defer { s.waiters.removeAll() }
            return Array(s.waiters.values)
        }
        for waiter in waiters {
            waiter.timer?.cancel()
            waiter.continuation.resume(returning: result)
        }
    }
}
