/// A `Retry-After` as every caller honours it (SPEC §5, docs/protocol.md "Retry-After"): capped
/// at ``RetryAfter/maxDelay``, and a floor that keeps its jitter. The retry falls uniformly in
/// ``window(_:)``, `[RA, RA + max(1 s, RA / 10)]`, so a fleet given one HTTP-date (or one
/// delay by a restarting server) does not come back at one instant. The client's refresh, its
/// event streams, a service's pause and failure records and the exposure uploads all draw it
/// here; each still takes the later of this and its own backoff (a floor, never a
/// replacement).
extension RetryAfter {
    /// The least spread of the window after a `Retry-After`.
    package static let minimumSpread: Duration = .seconds(1)

    /// The window the retry after a `Retry-After` of `delay` falls in: `delay` capped at
    /// ``maxDelay``, then `[RA, RA + max(1 s, RA / 10)]`. `nil` for no delay, zero or a
    /// negative one (a past date, clock skew): there is no floor, the backoff alone applies.
    package static func window(_ delay: Duration?) -> ClosedRange<Duration>? {
        guard let delay, delay > .zero else { return nil }
        let floor = min(delay, maxDelay)
        return floor...(floor + max(minimumSpread, floor / 10))
    }

    /// The delay to wait after a `Retry-After` of `delay`: uniform in ``window(_:)`` by `unit`
    /// (uniform in [0, 1), drawn by the caller from its injected random source); `nil` when
    /// there is no floor.
    package static func jitteredFloor(_ delay: Duration?, unit: Double) -> Duration? {
        guard let window = window(delay) else { return nil }
        let u = unit.isNaN ? 0 : min(max(unit, 0), 1)
        return window.lowerBound + (window.upperBound - window.lowerBound) * u
    }
}
