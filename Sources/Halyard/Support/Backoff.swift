import Foundation

/// Exponential backoff with jitter, for flag fetches and exposure uploads alike.
///
/// After the n-th consecutive failure the ceiling is `min(maximum, initial × 2^(n-1))` and the
/// delay is drawn uniformly from `[floor, ceiling]`. A `floor` of zero is full jitter; a floor
/// equal to `initial` keeps every delay within `[initial, maximum]`.
package struct Backoff: Sendable, Hashable {
    /// The first ceiling (1 s by default).
    package var initial: Duration
    /// The largest ceiling (5 min by default).
    package var maximum: Duration
    /// The shortest delay drawn.
    package var floor: Duration
    /// A backoff drawing delays from `[floor, ceiling]`; `floor` defaults to `initial`.
    package init(initial: Duration, maximum: Duration, floor: Duration? = nil) {
        self.initial = initial
        self.maximum = maximum
        self.floor = floor ?? max(initial, .milliseconds(1))
    }

    /// A full-jitter backoff (delays from `[0, ceiling]`) whose first ceiling is `base`.
    package init(base: Duration, maximum: Duration) {
        self.init(initial: base, maximum: maximum, floor: .zero)
    }

    /// The ceiling after `failures` consecutive failures (`failures >= 1`).
    package func ceiling(failures: Int) -> Duration {
        let lower = max(initial, .milliseconds(1))
        return Self.doubling(from: lower, steps: failures, cap: max(maximum, lower))
    }

    /// The doubling ceiling every backoff here shares: `base × 2^(steps-1)`, at most `cap`
    /// (`base` itself for `steps <= 1`, and when `base` is already at or past `cap`, `cap`).
    /// The client's backoff, the service's pause (``PauseState``) and the event stream's
    /// reconnect step all grow by it; they differ only in where they draw under it.
    package static func doubling(from base: Duration, steps: Int, cap: Duration) -> Duration {
        var ceiling = base
        var n = 1
        while n < steps && ceiling < cap && ceiling > .zero {
            ceiling = ceiling * 2
            n += 1
        }
        return min(ceiling, cap)
    }

    /// The delay after `failures` consecutive failures, with `unit` uniform in [0, 1).
    package func delay(failures: Int, unit: Double) -> Duration {
        let top = ceiling(failures: failures)
        let lower = min(max(floor, .zero), top)
        let u = unit.isNaN ? 0 : min(max(unit, 0), 1)
        return lower + (top - lower) * u
    }

    /// ``delay(failures:unit:)``, or the server's `Retry-After` when that is longer (capped at
    /// ``RetryAfter/maxDelay`` and spread over its window by the same `unit`:
    /// ``RetryAfter/jitteredFloor(_:unit:)``): `Retry-After` is a floor, never a replacement,
    /// so `0`, a past date (clock skew) or a tiny value never makes a failing caller retry
    /// faster than its backoff.
    package func delay(failures: Int, retryAfter: Duration?, unit: Double) -> Duration {
        let backoff = delay(failures: failures, unit: unit)
        guard let floor = RetryAfter.jitteredFloor(retryAfter, unit: unit) else { return backoff }
        return max(floor, backoff)
    }
}
