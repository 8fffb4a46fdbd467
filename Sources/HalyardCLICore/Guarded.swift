import Foundation

/// A value behind a lock, for the little state the command shares with callbacks (the client's
/// log handler, the SIGINT handler).
///
/// `@unchecked Sendable`: `value` is only touched while `lock` is held. (`NSLock.withLock` needs
/// macOS 14, so the lock is taken by hand.)
final class Guarded<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<R>(_ body: (inout Value) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}
