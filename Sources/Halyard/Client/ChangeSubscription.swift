/// A registration made with `onChange`; keep it and call ``cancel()`` to stop the calls.
///
/// It keeps running until ``cancel()``: dropping the subscription does not cancel it (there is
/// no `deinit` hook, like `NotificationCenter` observers), and closing the client only stops
/// the changes from coming. Where the subscription's lifetime is a scope, use
/// ``FlagClient/withChanges(bufferingPolicy:isolation:_:)``, which ends it when its body
/// returns or throws.
public final class ChangeSubscription: Sendable {
    private let onCancel: @Sendable () -> Void

    init(onCancel: @escaping @Sendable () -> Void) { self.onCancel = onCancel }

    /// Stops further calls to the handler; calls already started finish. Idempotent.
    public func cancel() { onCancel() }
}
