public import Foundation

/// One HTTP request Halyard wants sent: the OFREP bulk evaluation or an exposure upload.
public struct TransportRequest: Sendable {
    /// The HTTP method (`"POST"`).
    public var method: String
    /// The absolute URL.
    public var url: URL
    /// Header fields to send, by name.
    public var headers: [String: String]
    /// The request body.
    public var body: Data
    /// How long the whole exchange may take before it fails with ``TransportError/timedOut``.
    public var timeout: Duration
    /// Response bodies longer than this fail with ``TransportError/responseTooLarge(limit:)``.
    public var maxResponseBytes: Int
    /// Response header fields above this many bytes in all (every response of the exchange:
    /// interim ones and redirects included) fail with ``TransportError/responseTooLarge(limit:)``;
    /// *default* 64 KiB.
    public var maxResponseHeaderBytes: Int

    /// Creates a request.
    public init(
        method: String = "POST",
        url: URL,
        headers: [String: String] = [:],
        body: Data = Data(),
        timeout: Duration = .seconds(10),
        maxResponseBytes: Int = 8 << 20,
        maxResponseHeaderBytes: Int = 64 << 10
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.maxResponseBytes = maxResponseBytes
        self.maxResponseHeaderBytes = maxResponseHeaderBytes
    }
}

/// An HTTP response as a transport received it.
public struct TransportResponse: Sendable {
    /// The HTTP status code.
    public var status: Int
    /// Header fields by lowercased name.
    public var headers: [String: String]
    /// The (decompressed) body.
    public var body: Data

    /// Creates a response; header names are lowercased.
    public init(status: Int, headers: [String: String] = [:], body: Data = Data()) {
        self.status = status
        var lowered: [String: String] = [:]
        for (name, value) in headers { lowered[name.lowercased()] = value }
        self.headers = lowered
        self.body = body
    }

    /// The value of a header field, by case-insensitive name.
    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// Why a transport could not produce a response.
///
/// Frozen: a custom ``FlagTransport`` throws these, and the client's status policy switches over
/// them exhaustively; a new case would be a new major version (docs/public-api.md). Details
/// beyond the case go in its text (``network(_:)``).
public enum TransportError: Error, Sendable, Hashable {
    /// The request did not complete within its timeout.
    case timedOut
    /// The connection failed (refused, reset, DNS, TLS...), with a description.
    case network(String)
    /// The request was cancelled.
    case cancelled
    /// The response body exceeded ``TransportRequest/maxResponseBytes``, or its header fields
    /// exceeded ``TransportRequest/maxResponseHeaderBytes`` (`limit` is the one exceeded).
    case responseTooLarge(limit: Int)
    /// A redirect was not followed (docs/protocol.md, "Redirects": same origin only, at most 3,
    /// never https → http): nothing was sent to the target. `origin` is the target's `host:port`
    /// (never its path or query).
    case redirectRefused(origin: String, reason: RedirectRefusal)
}

/// Why a redirect was not followed.
public enum RedirectRefusal: String, Sendable, Hashable, CaseIterable {
    /// The target's scheme, host or port differs from the request's.
    case otherOrigin = "another origin"
    /// The target is plain http and the request was https.
    case insecure = "https to http"
    /// The request was already redirected 3 times (the most a request follows).
    case tooManyRedirects = "too many redirects"
}

/// How Halyard talks HTTP. The default is a `URLSession` transport; tests and the
/// `HalyardTesting` product use in-memory ones.
///
/// Implementations throw ``TransportError`` for failures that produced no HTTP response;
/// any HTTP status, including 4xx and 5xx, is a response, not an error.
public protocol FlagTransport: Sendable {
    /// Sends one request and returns the response.
    func send(_ request: TransportRequest) async throws -> TransportResponse
}
