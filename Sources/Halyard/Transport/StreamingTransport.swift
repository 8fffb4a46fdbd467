public import Foundation

/// A transport that can hold a long-lived `GET` open: the event stream of SPEC §14. Both
/// default transports (``CurlTransport`` on Linux, ``URLSessionTransport``) conform.
///
/// The redirect rule of §5 applies: a redirect is followed only to the same origin, at most
/// 3 hops, never from https to http; otherwise the open fails.
public protocol StreamingTransport: FlagTransport {
    /// Opens the stream and returns once the response head arrived.
    ///
    /// - ``TransportRequest/timeout`` bounds the time until the head (connect, TLS, status line
    ///   and headers) → ``TransportError/timedOut``. After the head there is no total timeout.
    /// - `inactivityTimeout` without any body byte closes the stream: its chunks then throw
    ///   ``TransportError/timedOut``.
    /// - A non-2xx status is returned as the head (its body is not delivered: the stream's
    ///   chunks end at once), not thrown.
    /// - Cancelling the task that iterates the chunks, or calling ``TransportStream/cancel()``,
    ///   closes the connection at once.
    func openStream(_ request: TransportRequest, inactivityTimeout: Duration) async throws -> TransportStream
}

/// An open stream: the response head, then the body's chunks as they arrive.
public final class TransportStream: Sendable {
    /// The HTTP status code.
    public let status: Int
    /// Header fields by lowercased name.
    public let headers: [String: String]
    /// The body's chunks in arrival order. Ends when the server closes the stream or after
    /// ``cancel()``; throws a ``TransportError`` when the connection fails or goes inactive.
    public let chunks: AsyncThrowingStream<Data, any Error>
    private let onCancel: OneShot<Bool>
    private let closeAction: @Sendable () -> Void

    /// Creates a stream; `onCancel` runs once, on the first ``cancel()``.
    public init(
        status: Int, headers: [String: String], chunks: AsyncThrowingStream<Data, any Error>,
        onCancel: @escaping @Sendable () -> Void
    ) {
        self.status = status
        var lowered: [String: String] = [:]
        for (name, value) in headers { lowered[name.lowercased()] = value }
        self.headers = lowered
        self.chunks = chunks
        self.onCancel = OneShot()
        self.closeAction = onCancel
    }

    /// The value of a header field, by case-insensitive name.
    public func header(_ name: String) -> String? { headers[name.lowercased()] }

    /// Closes the connection at once (idempotent); the chunks then end.
    public func cancel() {
        if onCancel.finish(true) { closeAction() }
    }
}

/// The headers a stream request is sent with: the caller's, plus `Accept: text/event-stream`
/// and `Cache-Control: no-cache` unless it names its own, and no content coding (the chunks are
/// handed over as they arrive, undecoded).
func streamRequestHeaders(_ headers: [String: String]) -> [String: String] {
    var result = headers
    let names = Set(headers.keys.map { $0.lowercased() })
    if !names.contains("accept") { result["Accept"] = "text/event-stream" }
    if !names.contains("cache-control") { result["Cache-Control"] = "no-cache" }
    for name in headers.keys where name.lowercased() == "accept-encoding" { result.removeValue(forKey: name) }
    result["Accept-Encoding"] = "identity"
    return result
}

/// A stream's response head as a transport received it (header names lowercased).
struct StreamHead: Sendable {
    var status: Int
    var headers: [String: String]
}
