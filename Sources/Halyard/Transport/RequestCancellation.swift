/// Ends one request sent through ``GuardedTransport`` from outside the task that awaits it:
/// service mode's `setKey` cancels the requests still on the wire with the replaced key so
/// (SPEC §12, "Key rotation"). The request then fails with ``TransportError/cancelled`` at once
/// and the transport's task is cancelled, exactly as when the caller's own task is cancelled,
/// but the caller's task goes on (its fetch sends again with the new key).
///
/// It costs no task of its own: the guard installs its cancel action (``whenCancelled(_:)``) in
/// the task every request already runs in, and ``cancel()`` runs that action.
package final class RequestCancellation: Sendable {
    private struct State: Sendable {
        var cancelled = false
        var action: (@Sendable () -> Void)?
    }

    private let state = Locked(State())

    package init() {}

    /// Whether ``cancel()`` was called.
    package var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Cancels the request: runs the action installed by ``whenCancelled(_:)`` (outside the
    /// lock), or the one installed later at once. Idempotent.
    package func cancel() {
        let action = state.withLock { s -> (@Sendable () -> Void)? in
            if s.cancelled { return nil }
            s.cancelled = true
            defer { s.action = nil }
            return s.action
        }
        action?()
    }

    /// Installs what ``cancel()`` does; runs it at once when already cancelled.
    package func whenCancelled(_ action: @escaping @Sendable () -> Void) {
        let cancelled = state.withLock { s -> Bool in
            if s.cancelled { return true }
            s.action = action
            return false
        }
        if cancelled { action() }
    }

    /// Drops the installed action (the request ended: nothing left to cancel).
    package func clear() { state.withLock { $0.action = nil } }
}
