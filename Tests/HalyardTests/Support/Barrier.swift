import Halyard

/// A gate for test tasks: while closed, ``pass()`` waits; ``open()`` lets the waiting tasks and
/// every later one through until ``close()``. The test transports that hold requests until a
/// test lets them go are built on it.
final class Barrier: Sendable {
    private struct State {
        var open: Bool
        var waiting: [CheckedContinuation<Void, Never>] = []
    }
    private let state: Locked<State>

    /// A barrier, open or closed.
    init(open: Bool) { state = Locked(State(open: open)) }

    /// Tasks calling ``pass()`` from now on wait for ``open()``.
    func close() { state.withLock { $0.open = false } }

    /// Lets the waiting tasks and every later one through.
    func open() {
        let waiting = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.open = true
            defer { s.waiting.removeAll() }
            return s.waiting
        }
        for c in waiting { c.resume() }
    }

    /// Returns at once while open; otherwise when the barrier is next opened.
    func pass() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let passes = state.withLock { s -> Bool in
                if s.open { return true }
                s.waiting.append(c)
                return false
            }
            if passes { c.resume() }
        }
    }
}
