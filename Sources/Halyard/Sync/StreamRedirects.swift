import Foundation

/// §5's redirect rule for event streams, the same on every transport: the transports never follow
/// a redirect themselves when they open a stream; this follows it only to the same origin
/// (scheme, host, port — so never from https to http), at most ``maxHops`` hops. Otherwise the
/// open fails with ``TransportError/network(_:)`` whose text names the target's origin only
/// (never its path or query, which may carry credentials), and nothing is sent there.
enum StreamRedirects {
    /// The most redirects followed for one open.
    static let maxHops = 3

    /// The statuses that redirect (with a `Location`).
    static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    /// Opens `request` with `open`, following redirects by the rule above.
    static func follow(
        _ request: TransportRequest, open: (TransportRequest) async throws -> TransportStream
    ) async throws -> TransportStream {
        var current = request
        var hops = 0
        while true {
            let stream = try await open(current)
            guard redirectStatuses.contains(stream.status), let location = stream.header("Location") else {
                return stream
            }
            stream.cancel()
            guard let target = URL(string: location, relativeTo: current.url)?.absoluteURL else {
                throw TransportError.network("stream redirect without a usable Location refused")
            }
            let origin = Self.origin(target)
            guard let from = EventStreamOrigin(current.url), let to = EventStreamOrigin(target), from == to else {
                if current.url.scheme?.lowercased() == "https", target.scheme?.lowercased() != "https" {
                    throw TransportError.network("stream redirect from https to http refused (to \(origin))")
                }
                throw TransportError.network("stream redirect to another origin refused (to \(origin))")
            }
            hops += 1
            guard hops <= maxHops else {
                throw TransportError.network("stream redirected more than \(maxHops) times (refused)")
            }
            current.url = target
        }
    }

    /// `scheme://host:port` of a URL, for messages (never its path or query).
    static func origin(_ url: URL) -> String {
        guard let key = EventStreamOrigin(url) else { return "an unusable URL" }
        let host = key.host.contains(":") ? "[\(key.host)]" : key.host
        return "\(key.scheme)://\(host):\(key.port)"
    }

    /// The headers a stream request is sent with: the caller's, plus `Accept: text/event-stream`
    /// and `Cache-Control: no-cache` unless it names its own, and no content coding (the chunks
    /// are handed over as they arrive, undecoded).
    static func headers(_ headers: [String: String]) -> [String: String] {
        var result = headers
        let names = Set(headers.keys.map { $0.lowercased() })
        if !names.contains("accept") { result["Accept"] = "text/event-stream" }
        if !names.contains("cache-control") { result["Cache-Control"] = "no-cache" }
        for name in headers.keys where name.lowercased() == "accept-encoding" { result.removeValue(forKey: name) }
        result["Accept-Encoding"] = "identity"
        return result
    }
}

/// A stream's response head as a transport received it (header names lowercased).
struct StreamHead: Sendable {
    var status: Int
    var headers: [String: String]
}
