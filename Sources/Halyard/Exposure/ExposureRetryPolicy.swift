package import Foundation

/// How one upload attempt ended, as the exposure pipeline sees it.
package enum ExposureUploadOutcome: Sendable, Hashable {
    /// A 2xx response: the batch was delivered.
    case delivered
    /// A 2xx OTLP response whose `partialSuccess` says the receiver refused `rejected` of the
    /// records (the rest were delivered), with its `errorMessage` when it sent one.
    case partiallyDelivered(rejected: Int, errorMessage: String?)
    /// A retryable failure (5xx, 408, 429 or a transport error); `retryAfter` is the delay the
    /// server asked for, when it sent a usable `Retry-After`.
    case retry(retryAfter: Duration?)
    /// A non-retryable status: the batch is dropped.
    case rejected(status: Int)
    /// An answer longer than ``ExposureRecorder/maxResponseBytes`` (its status unread): a
    /// non-retryable failure, the batch is dropped (not counted as sent, not as rejected).
    case responseTooLarge
    /// A redirect the transport refused to follow (another origin, https → http, too many hops):
    /// nothing was sent there, and a retry would be refused the same way, so the batch is
    /// dropped (not counted as sent, not as rejected) rather than retried.
    case redirectRefused

    /// Classifies an HTTP response to an upload sent by `exporter`.
    package static func classify(
        exporter: ExposureExporter, status: Int, retryAfterHeader: String?, body: Data, wallNow: Date
    ) -> ExposureUploadOutcome {
        switch exporter {
        case .halyard:
            return classify(status: status, retryAfterHeader: retryAfterHeader, wallNow: wallNow)
        case .otlp, .otlpConfigured:
            return classifyOTLP(status: status, retryAfterHeader: retryAfterHeader, body: body, wallNow: wallNow)
        }
    }

    /// Classifies an OTLP/HTTP export response (the OTLP specification's rules): 2xx is
    /// delivered, partially when its body holds a `partialSuccess` with `rejectedLogRecords`
    /// above zero or an `errorMessage`; 429, 502, 503 and 504 are retried (honouring
    /// `Retry-After`); every other status is not retried.
    package static func classifyOTLP(status: Int, retryAfterHeader: String?, body: Data, wallNow: Date)
        -> ExposureUploadOutcome
    {
        switch status {
        case 200..<300:
            return partialSuccess(body) ?? .delivered
        case 429, 502, 503, 504:
            let delay = retryAfterHeader.flatMap { RetryAfter.parse($0, now: wallNow) }
            return .retry(retryAfter: delay)
        default:
            return .rejected(status: status)
        }
    }

    /// The `partialSuccess` of an `ExportLogsServiceResponse` in the protobuf JSON mapping
    /// (`rejectedLogRecords` as a string or a number, `errorMessage`); nil when the body is
    /// empty, not JSON, or reports nothing.
    static func partialSuccess(_ body: Data) -> ExposureUploadOutcome? {
        guard !body.isEmpty, let doc = try? JSONValue(parsing: body, limits: .ofrepResponse),
            case .object(let top) = doc, case .object(let partial)? = top["partialSuccess"]
        else { return nil }
        var rejected = 0
        switch partial["rejectedLogRecords"] {
        case .int(let n)?: rejected = Int(clamping: n)
        case .string(let s)?: rejected = Int(s) ?? 0
        case .double(let d)? where d.isFinite: rejected = Int(clamping: Int64(max(0, min(d, 1e15))))
        default: break
        }
        var message: String?
        if case .string(let m)? = partial["errorMessage"], !m.isEmpty { message = m }
        if rejected <= 0 && message == nil { return nil }
        return .partiallyDelivered(rejected: max(0, rejected), errorMessage: message)
    }

    /// The `message` of a `google.rpc.Status` in the protobuf JSON mapping (an OTLP receiver's
    /// body on a failure), cut to 512 characters; nil when the body is not such an object.
    package static func statusMessage(_ body: Data) -> String? {
        guard !body.isEmpty, let doc = try? JSONValue(parsing: body, limits: .ofrepResponse),
            case .object(let top) = doc, case .string(let message)? = top["message"], !message.isEmpty
        else { return nil }
        return String(message.prefix(512))
    }

    /// Classifies an HTTP response (the SPEC §7 exporter).
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
