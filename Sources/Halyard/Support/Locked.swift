import Foundation

/// A value guarded by a lock, for the slow paths (publishing, listeners, queues).
///
/// Never on the read path. Never call out to user code while holding it: mutate, collect the
/// actions, unlock, then perform them. `NSLock` is used rather than `Synchronization.Mutex`
/// because `Mutex` needs macOS 15 / iOS 18 and the package supports macOS 13 / iOS 15.
package final class Locked<State> {
    private let lock = NSLock()
    private var state: State

    package init(_ state: State) { self.state = state }

    /// Runs `body` with exclusive access to the state.
    @discardableResult
    package func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}

/// Sendable only when the state is: the lock makes access exclusive, but a non-Sendable state
/// could still escape through `withLock`'s result (as `NIOLockedValueBox` does it).
extension Locked: @unchecked Sendable where State: Sendable {}

extension Locked where State: Sendable {
    /// A copy of the current state.
    package var value: State { withLock { $0 } }
}
