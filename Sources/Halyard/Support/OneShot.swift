/// A value set once and handed to one waiting task: the first ``finish(_:)`` wins, and a waiter
/// that ``attach(_:)``es after it is resumed at once.
///
/// The transports complete a request from whichever comes first — the network callbacks, the
/// request's deadline or the caller's cancellation — and this is the one place that race is
/// decided. The continuation is resumed outside the lock.
package final class OneShot<Value: Sendable>: Sendable {
    private struct State: Sendable {
        var value: Value?
        var continuation: CheckedContinuation<Value, Never>?
    }

    private let state = Locked(State())

    package init() {}

    /// Whether the value is set.
    package var isFinished: Bool { state.withLock { $0.value != nil } }

    /// Installs the waiter; resumes it at once when the value is already set.
    package func attach(_ continuation: CheckedContinuation<Value, Never>) {
        let ready = state.withLock { s -> Value? in
            if let value = s.value { return value }
            s.continuation = continuation
            return nil
        }
        if let ready { continuation.resume(returning: ready) }
    }

    /// Sets the value once; returns whether this call set it (and so resumed the waiter).
    @discardableResult
    package func finish(_ value: Value) -> Bool {
        let (first, continuation) = state.withLock { s -> (Bool, CheckedContinuation<Value, Never>?) in
            if s.value != nil { return (false, nil) }
            s.value = value
            defer { s.continuation = nil }
            return (true, s.continuation)
        }
        continuation?.resume(returning: value)
        return first
    }
}
