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
    /// The longest `Retry-After` honoured by ``delay(failures:retryAfter:unit:)``.
    package var retryAfterCap: Duration = .seconds(3_600)

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
        let upper = max(maximum, lower)
        var c = lower
        var n = 1
        while n < failures && c < upper {
            c = c * 2
            n += 1
        }
        return min(c, upper)
    }

    /// The delay after `failures` consecutive failures, with `unit` uniform in [0, 1).
    package func delay(failures: Int, unit: Double) -> Duration {
        let top = ceiling(failures: failures)
        let lower = min(max(floor, .zero), top)
        let u = unit.isNaN ? 0 : min(max(unit, 0), 1)
        return lower + (top - lower) * u
    }

    /// ``delay(failures:unit:)``, or the server's `Retry-After` (capped at ``retryAfterCap``)
    /// when that is longer: `Retry-After` is a floor, never a replacement, so `0`, a past date
    /// (clock skew) or a tiny value never makes a failing caller retry faster than its backoff.
    package func delay(failures: Int, retryAfter: Duration?, unit: Double) -> Duration {
        let backoff = delay(failures: failures, unit: unit)
        guard let retryAfter else { return backoff }
        return max(min(max(retryAfter, .zero), retryAfterCap), backoff)
    }
}
