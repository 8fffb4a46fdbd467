/// One consumer's pending changed keys for one context: a set that coalesces, so a slow
/// consumer gets the union of the changes it missed in its next element and the buffer never
/// holds more than one set (at most every flag key of the context).
///
/// The consumer's `next()` takes the pending set, or waits for one; ``deliver(_:)`` adds to
/// the set, or hands it to the waiting consumer; ``finish()`` ends the sequence once the
/// pending keys are taken.
final class ContextChangeBuffer: Sendable {
    private struct State {
        var pending: Set<String> = []
        var waiter: CheckedContinuation<Set<String>?, Never>?
        var finished = false
    }

    private let state = Locked(State())

    /// Adds `keys` to the pending set (or hands them to the waiting consumer). Ignored once
    /// finished or when empty.
    func deliver(_ keys: Set<String>) {
        guard !keys.isEmpty else { return }
        let waiter = state.withLock { s -> CheckedContinuation<Set<String>?, Never>? in
            guard !s.finished else { return nil }
            guard let waiter = s.waiter else {
                s.pending.formUnion(keys)
                return nil
            }
            s.waiter = nil
            return waiter
        }
        waiter?.resume(returning: keys)
    }

    /// Ends the sequence: the consumer gets what is pending, then `nil`. Idempotent.
    func finish() {
        let waiter = state.withLock { s -> CheckedContinuation<Set<String>?, Never>? in
            s.finished = true
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// Whether ``finish()`` was called.
    var isFinished: Bool { state.withLock { $0.finished } }

    /// The pending keys, waiting for some when there are none; `nil` once finished (or when
    /// the waiting task is cancelled, which finishes the buffer). One consumer at a time.
    func next() async -> Set<String>? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Set<String>?, Never>) in
                let ready = state.withLock { s -> Set<String>?? in
                    if !s.pending.isEmpty {
                        defer { s.pending = [] }
                        return .some(s.pending)
                    }
                    if s.finished { return .some(nil) }
                    s.waiter = continuation
                    return .none
                }
                if case .some(let answer) = ready { continuation.resume(returning: answer) }
            }
        } onCancel: {
            finish()
        }
    }
}
