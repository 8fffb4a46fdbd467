#if os(Linux)
    import Dispatch
    import Foundation

    /// A task sleep on a Dispatch timer, freed the moment it is cancelled: ``SystemClock``'s
    /// ``SystemClock/sleep(for:)`` on Linux.
    ///
    /// Why not `Task.sleep`: a cancelled `Task.sleep` keeps its allocation (the sleeping job and a
    /// Dispatch timer of the runtime's) until the instant it would have woken. Halyard cancels most
    /// of its sleeps long before they end: the wait in `ready(timeout:)` once values arrive, a
    /// driver's next wake when the machine reschedules it, the exposure ticker on `close()`. With
    /// `Task.sleep` every client created and closed within the timeout of its `ready` left about
    /// 0.9 KiB allocated until then (measured with heaptrack: `Task._sleep` and
    /// `dispatch_source_create` allocations, linear in the number of clients; docs/benchmarks-transport.md).
    ///
    /// The contract, as `Task.sleep`'s: returns once `duration` has passed on the monotonic clock;
    /// throws `CancellationError` at once if the task is cancelled before or during the sleep (then
    /// the timer is cancelled and released before this returns to the executor's queue). A
    /// non-positive `duration` returns at once (after the cancellation check).
    enum TimerSleep {
        /// The shared state of one sleep: whichever of the timer and the cancellation comes first
        /// resumes the continuation; the other does nothing.
        private final class Sleeper: @unchecked Sendable {
            // Guarded by `lock`.
            private let lock = NSLock()
            private var continuation: CheckedContinuation<Void, any Error>?
            private var timer: (any DispatchSourceTimer)?
            private var cancelled = false
            private var finished = false

            /// Starts the timer for `c`, or resumes it at once if cancellation came first.
            func start(_ c: CheckedContinuation<Void, any Error>, after interval: DispatchTimeInterval) {
                lock.lock()
                if cancelled {
                    finished = true
                    lock.unlock()
                    c.resume(throwing: CancellationError())
                    return
                }
                continuation = c
                let source = DispatchSource.makeTimerSource(queue: .global())
                timer = source
                source.setEventHandler { [self] in finish(throwing: nil) }
                source.schedule(deadline: .now() + interval)
                source.activate()
                lock.unlock()
            }

            /// The task was cancelled: ends the sleep now, with `CancellationError`.
            func cancel() {
                lock.lock()
                cancelled = true
                lock.unlock()
                finish(throwing: CancellationError())
            }

            private func finish(throwing error: (any Error)?) {
                lock.lock()
                guard !finished, let c = continuation else {
                    lock.unlock()
                    return
                }
                finished = true
                continuation = nil
                let source = timer
                timer = nil
                lock.unlock()
                // The handler holds `self`; cancelling the source releases the handler and the source.
                source?.setEventHandler {}
                source?.cancel()
                if let error { c.resume(throwing: error) } else { c.resume() }
            }
        }

        /// Suspends the caller for `duration` (see the type's contract).
        static func sleep(for duration: Duration) async throws {
            try Task.checkCancellation()
            guard duration > .zero else { return }
            let interval = DispatchTimeInterval.nanoseconds(Int(clamping: duration.saturatingNanoseconds))
            let sleeper = Sleeper()
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                    sleeper.start(c, after: interval)
                }
            } onCancel: {
                sleeper.cancel()
            }
        }
    }
#endif
