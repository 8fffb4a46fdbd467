public import Foundation

/// The source of time for everything in Halyard that waits or timestamps: polling, backoff,
/// `Retry-After`, staleness, exposure windows and batch timestamps.
///
/// Inject a ``ManualClock`` in tests to make them deterministic.
public protocol HalyardClock: Sendable {
    /// Monotonic time since an arbitrary, fixed origin. Never goes backwards.
    var monotonicNow: Duration { get }
    /// Wall-clock time, for `Retry-After` HTTP dates, cache ages and event timestamps.
    var wallNow: Date { get }
    /// Suspends the caller until `monotonicNow` has advanced by `duration` (or the task is cancelled).
    func sleep(for duration: Duration) async throws
}

/// The real clock: `ContinuousClock` for monotonic time, `Date()` for wall time.
public struct SystemClock: HalyardClock {
    private static let origin = ContinuousClock.now

    /// Creates the system clock.
    public init() {}

    public var monotonicNow: Duration { ContinuousClock.now - Self.origin }
    public var wallNow: Date { Date() }

    /// On Linux, sleeps on a Dispatch timer that is freed as soon as the task is cancelled (a
    /// cancelled `Task.sleep` keeps its memory until the time it would have woken; see
    /// `TimerSleep`). Elsewhere `Task.sleep`, whose continuous clock keeps counting while an
    /// Apple device sleeps (Dispatch's uptime clock does not).
    public func sleep(for duration: Duration) async throws {
        #if os(Linux)
            try await TimerSleep.sleep(for: duration)
        #else
            try await TimerSleep.sleep(for: duration)
        #endif
    }
}
