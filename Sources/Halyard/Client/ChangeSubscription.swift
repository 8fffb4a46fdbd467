/// A registration made with `onChange`; keep it and call ``cancel()`` to stop the calls.
///
/// Dropping the subscription does not cancel it (like `NotificationCenter` observers); call
/// ``cancel()`` explicitly.
public final class ChangeSubscription: Sendable {
    private let onCancel: @Sendable () -> Void

    init(onCancel: @escaping @Sendable () -> Void) { self.onCancel = onCancel }

    /// Stops further calls to the handler; calls already started finish. Idempotent.
    public func cancel() { onCancel() }
}
