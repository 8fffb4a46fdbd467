import Foundation

/// Waits for work that does not itself stop when its task is cancelled (a flush bounded by its
/// own deadline): the work runs in a task of its own, and the waiter returns nil as soon as its
/// task is cancelled, leaving the work to end by itself.
enum CancellableWait {
    static func value<T: Sendable>(_ work: @escaping @Sendable () async -> T) async -> T? {
        let box = Box<T>()
        let task = Task { box.resume(await work()) }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in box.install(continuation) }
        } onCancel: {
            box.resume(nil)
            task.cancel()
        }
    }

    /// The one continuation, resumed once by whichever of the work and the cancellation ends
    /// first (either may come before the continuation is installed).
    private final class Box<T: Sendable>: @unchecked Sendable {
        private let lock = NSLock()
        private var continuation: CheckedContinuation<T?, Never>?
        private var early: T??

        func install(_ continuation: CheckedContinuation<T?, Never>) {
            lock.lock()
            if let early {
                lock.unlock()
                continuation.resume(returning: early)
                return
            }
            self.continuation = continuation
            lock.unlock()
        }

        func resume(_ value: T?) {
            lock.lock()
            if let continuation {
                self.continuation = nil
                early = .some(value)
                lock.unlock()
                continuation.resume(returning: value)
                return
            }
            if early == nil { early = .some(value) }
            lock.unlock()
        }
    }
}
