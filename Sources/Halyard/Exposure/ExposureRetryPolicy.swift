package import Foundation

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
