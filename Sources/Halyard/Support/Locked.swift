import Foundation

/// A value guarded by a lock, for the slow paths (publishing, listeners, queues) and the
/// service's shard tables.
///
/// Never on the read path. Never call out to user code while holding it: mutate, collect the
/// actions, unlock, then perform them. `NSLock` is used rather than `Synchronization.Mutex`
/// because `Mutex` needs macOS 15 / iOS 18 and the package supports macOS 13 / iOS 15.
///
/// The state lives behind a pointer this object owns, not in a stored `var`: a class's stored
/// `var` passed `inout` is checked for exclusive access at run time (`swift_beginAccess` and
/// `swift_endAccess`, ~120 instructions a call, measured on the service's warm path), and the
/// lock already makes the access exclusive.
package final class Locked<State> {
    private let lock = NSLock()
    private let state: UnsafeMutablePointer<State>

    package init(_ state: State) {
        self.state = UnsafeMutablePointer<State>.allocate(capacity: 1)
        self.state.initialize(to: state)
    }

    deinit {
        state.deinitialize(count: 1)
        state.deallocate()
    }

    /// Runs `body` with exclusive access to the state.
    @discardableResult
    package func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state.pointee)
    }
}

/// Sendable only when the state is: the lock makes access exclusive, but a non-Sendable state
/// could still escape through `withLock`'s result (as `NIOLockedValueBox` does it).
extension Locked: @unchecked Sendable where State: Sendable {}

extension Locked where State: Sendable {
    /// A copy of the current state.
    package var value: State { withLock { $0 } }
}
