/// The service-wide pause's growth (docs/service.md, "Recovery"): equal jitter with a floor.
///
/// The n-th pause in a row draws its delay from `[max(floor, ceiling / 2), ceiling]`, where the
/// ceiling is `floor × 2^(n-1)` capped at the recovery interval; a `Retry-After` is a floor of
/// it. Failures that arrive while a pause is in force (requests sent before it) extend nothing
/// and add no step. A success resets the step only once the service has run unpaused for as
/// long as it was last paused (its quiet time): one success among a 429 storm (a request sent
/// before the 429s, or one of many after the pause) leaves the next pause as long or longer.
struct PauseState: Sendable, Hashable {
    /// Pauses in a row (0: none since the last reset).
    private(set) var step = 0
    /// A success at or after this resets ``step``.
    private(set) var quietAfter: Duration = .zero

    /// A success at `now`.
    mutating func succeeded(now: Duration) {
        if now >= quietAfter { step = 0 }
    }

    /// A pause starts at `now` (or the one in force until `pausedUntil` is extended by a
    /// `retryAfter`): returns its delay, `unit` uniform in [0, 1).
    mutating func pause(
        now: Duration, pausedUntil: Duration, floor: Duration, cap: Duration, retryAfter: Duration?, unit: Double
    ) -> Duration {
        // The caller draws the jittered floor (`RetryAfter.jitteredFloor`); only the cap here.
        let server = min(max(retryAfter ?? .zero, .zero), RetryAfter.maxDelay)
        if now < pausedUntil {
            // A failure of a request sent before the pause: no new step.
            let delay = max(pausedUntil - now, server)
            quietAfter = max(quietAfter, now + delay * 2)
            return delay
        }
        step = min(step + 1, 62)
        let ceiling = Backoff.doubling(from: floor, steps: step, cap: max(cap, floor))
        let lower = min(max(floor, ceiling / 2), ceiling)
        let u = unit.isNaN ? 0 : min(max(unit, 0), 1)
        let delay = max(lower + (ceiling - lower) * u, server)
        quietAfter = now + delay * 2
        return delay
    }
}
