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
                do { try await clock.sleep(for: timeout) } catch { return }
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
        let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
        waiter?.continuation.resume(returning: nil)
    }

    /// Ends the flight: every waiter gets `result` (and so does any later `wait`).
    func complete(_ result: Result) {
        let waiters = state.withLock { s -> [Waiter] in
            s.result = result
            defer { s.waiters.removeAll() }
            return Array(s.waiters.values)
        }
        for waiter in waiters {
            waiter.timer?.cancel()
            waiter.continuation.resume(returning: result)
        }
    }
}
