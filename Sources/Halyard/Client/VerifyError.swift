/// Why ``FlagClient/verifyKey()`` (or ``FlagClient/verifyKey(options:)``) has no
/// ``InstallCheck``: the cases ``FlagClient/verify()`` returns `nil` for. An answer, whatever it
/// says (a refused key, a 5xx, a body that is not OFREP), is an ``InstallCheck`` with its
/// ``InstallCheck/outcome``, not an error.
public enum VerifyError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Nothing was sent: the client is offline or closed.
    case notRunning
    /// Nothing was sent: the current context (or ``FlagClientOptions/initialContext``) is
    /// invalid.
    case invalidContext(ContextError)
    /// Nothing was sent: the options are not valid (``FlagClient/verifyKey(options:)`` only;
    /// the errors of ``FlagClient/init(options:)``).
    case invalidOptions(FlagClientError)
    /// No answer within ``FlagClientOptions/requestTimeout`` (carried).
    case timedOut(Duration)
    /// No answer: the control plane could not be reached or the exchange failed (refused,
    /// reset, DNS, TLS, a refused redirect); the transport's description, which names neither
    /// the key nor the body.
    case unreachable(String)
    /// The task was cancelled before an answer came.
    case cancelled

    /// The error a transport threw, as a `VerifyError`.
    init(_ error: any Error, timeout: Duration) {
        switch error as? TransportError {
        case .timedOut?: self = .timedOut(timeout)
        case .network(let detail)?: self = .unreachable(detail.isEmpty ? "network error" : detail)
        case .cancelled?: self = .cancelled
        case .responseTooLarge(let limit)?: self = .unreachable("the response exceeded \(limit) bytes")
        case .redirectRefused(let origin, let reason)?:
            self = .unreachable("a redirect to \(origin) was refused (\(reason.rawValue))")
        case nil: self = .unreachable("network error")
        }
    }

    /// What happened, in words.
    public var description: String {
        switch self {
        case .notRunning: "the client is offline or closed: nothing was sent"
        case .invalidContext(let error): "the context is invalid: \(error)"
        case .invalidOptions(let error): "the options are invalid: \(error)"
        case .timedOut(let timeout): "the request timed out after \(timeout)"
        case .unreachable(let cause): cause
        case .cancelled: "the request was cancelled"
        }
    }

    /// The warning ``FlagClient/verify()`` logs for it, as it always has (nil: nothing logged).
    var logMessage: String? {
        switch self {
        case .notRunning, .invalidOptions: nil
        case .invalidContext(let error): "install check not sent: the context is invalid: \(error)"
        case .timedOut, .unreachable, .cancelled: "no answer to the install check: \(description)"
        }
    }
}
