package import Foundation

/// The redirect rule every transport applies (SPEC §5, docs/protocol.md "Redirects"): a redirect
/// is followed only to the same origin (scheme, host, port), at most ``maxRedirects`` times, never
/// from https to http; anything else fails the request with
/// ``TransportError/redirectRefused(origin:reason:)`` before a byte is sent to the target.
///
/// Pure: the transports ask it at each 3xx and build the next request from its answer.
package enum RedirectPolicy {
    /// The most redirects one request follows; the next one is refused.
    package static let maxRedirects = 3

    /// What to do with a response.
    package enum Decision: Sendable {
        /// Not a redirect (no `Location`, or a status that is not 301, 302, 303, 307, 308):
        /// the response is the answer.
        case answer
        /// Send this request next (same origin).
        case follow(TransportRequest)
        /// Fail the request with this error.
        case refuse(TransportError)
    }

    /// The decision for `status` + `location` in answer to `request`, after `followed` redirects.
    ///
    /// 307 and 308 keep the method, headers and body. 303 becomes a `GET` without a body (a
    /// `HEAD` stays a `HEAD`), and so do 301 and 302 of a `POST` (what user agents do); the
    /// headers that describe the dropped body go with it.
    package static func decide(
        _ request: TransportRequest, status: Int, location: String?, followed: Int
    ) -> Decision {
        guard [301, 302, 303, 307, 308].contains(status), let location,
            let target = URL(string: location.trimmingCharacters(in: .whitespaces), relativeTo: request.url)?
                .absoluteURL
        else { return .answer }
        guard let to = Origin(target) else {
            // Not http(s), or no host: another origin whatever it is.
            let named = target.host.map { host in target.port.map { "\(host):\($0)" } ?? host } ?? "?"
            return .refuse(.redirectRefused(origin: named, reason: .otherOrigin))
        }
        let from = Origin(request.url)
        if from != to {
            let reason: RedirectRefusal = from?.scheme == "https" && to.scheme == "http" ? .insecure : .otherOrigin
            return .refuse(.redirectRefused(origin: to.hostPort, reason: reason))
        }
        if followed >= maxRedirects {
            return .refuse(.redirectRefused(origin: to.hostPort, reason: .tooManyRedirects))
        }
        var next = request
        next.url = target
        let method = request.method.uppercased()
        if status == 303 || ((status == 301 || status == 302) && method == "POST") {
            if method != "HEAD" { next.method = "GET" }
            next.body = Data()
            next.headers = next.headers.filter { name, _ in
                !["content-type", "content-encoding", "content-length"].contains(name.lowercased())
            }
        }
        return .follow(next)
    }

    /// Scheme, host and port (the default port of the scheme when the URL names none): what
    /// "same origin" compares, for requests, streams and the stream advertisement alike.
    package struct Origin: Hashable, Sendable {
        package var scheme: String
        package var host: String
        package var port: Int

        /// `nil` unless the URL is `http` or `https` with a host.
        package init?(_ url: URL) {
            guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
                let host = url.host?.lowercased(), !host.isEmpty
            else { return nil }
            self.scheme = scheme
            self.host = host
            port = url.port ?? (scheme == "https" ? 443 : 80)
        }

        /// `host:port`, with an IPv6 host in brackets: how a refusal names the target (never
        /// its path or query, which may carry credentials).
        package var hostPort: String {
            let bare = host.hasPrefix("[") ? host : (host.contains(":") ? "[\(host)]" : host)
            return "\(bare):\(port)"
        }
    }
}

extension RedirectPolicy {
    /// Opens a stream with `open`, following redirects by the same rule as requests: the
    /// transports never follow a redirect themselves when they open a stream. A refusal throws
    /// ``TransportError/redirectRefused(origin:reason:)`` and nothing is sent to the target.
    static func openStream(
        _ request: TransportRequest, open: (TransportRequest) async throws -> TransportStream
    ) async throws -> TransportStream {
        var current = request
        var followed = 0
        let deadline = ContinuousClock.now + request.timeout  // one head timeout for every hop
        while true {
            if followed > 0 {
                let left = deadline - ContinuousClock.now
                guard left > .zero else { throw TransportError.timedOut }
                current.timeout = left
            }
            let stream = try await open(current)
            switch decide(current, status: stream.status, location: stream.header("Location"), followed: followed) {
            case .answer:
                return stream
            case .follow(let next):
                stream.cancel()
                current = next
                try current.spendHeaderBudget(on: stream.headers, limit: request.maxResponseHeaderBytes)
                followed += 1
            case .refuse(let error):
                stream.cancel()
                throw error
            }
        }
    }
}
