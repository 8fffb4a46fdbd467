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

    public func sleep(for duration: Duration) async throws {
        try await Task.sleep(for: duration)
    }
}
