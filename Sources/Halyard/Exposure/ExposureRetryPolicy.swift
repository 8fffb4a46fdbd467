import Foundation

/// How one upload attempt ended, as the exposure pipeline sees it.
package enum ExposureUploadOutcome: Sendable, Hashable {
    /// A 2xx response: the batch was delivered.
    case delivered
    /// A retryable failure (5xx, 408, 429 or a transport error); `retryAfter` is the delay the
    /// server asked for, when it sent a usable `Retry-After`.
    case retry(retryAfter: Duration?)
    /// A non-retryable status: the batch is dropped.
    case rejected(status: Int)

    /// Classifies an HTTP response.
    package static func classify(status: Int, retryAfterHeader: String?, wallNow: Date) -> ExposureUploadOutcome {
        switch status {
        case 200..<300:
            return .delivered
        case 408, 429, 500..<600:
            let delay = retryAfterHeader.flatMap { RetryAfter.parse($0, now: wallNow) }
            return .retry(retryAfter: delay)
        default:
            return .rejected(status: status)
        }
    }
}

/// Exponential backoff with full jitter for exposure uploads.
package struct ExposureBackoff: Sendable, Hashable {
    /// The first delay's upper bound.
    package var base: Duration
    /// The largest delay's upper bound.
    package var maximum: Duration
    /// The longest `Retry-After` honoured; longer requests wait this long.
    package var retryAfterCap: Duration = .seconds(3_600)

    /// Creates a policy.
    package init(base: Duration, maximum: Duration) {
        self.base = base
        self.maximum = maximum
    }

    /// The delay before attempt number `failures + 1`, after `failures` (≥ 1) consecutive
    /// failures: uniformly in `[0, min(maximum, base · 2^(failures-1))]` via `unit` in `[0, 1)`,
    /// or the server's `Retry-After` (capped) when it gave one.
    package func delay(failures: Int, retryAfter: Duration?, unit: Double) -> Duration {
        if let retryAfter {
            return min(max(retryAfter, .zero), retryAfterCap)
        }
        let exponent = min(max(failures - 1, 0), 40)
        var ceiling = base
        for _ in 0..<exponent {
            ceiling = ceiling * 2
            if ceiling >= maximum { ceiling = maximum; break }
        }
        ceiling = min(ceiling, maximum)
        let u = unit.isNaN ? 0 : min(max(unit, 0), 1)
        return ceiling * u
    }
}
