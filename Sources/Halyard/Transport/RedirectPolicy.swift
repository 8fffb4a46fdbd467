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
    /// Sends `request` with `perform`, following redirects by ``decide(_:status:location:followed:)``
    /// within one deadline: the transports' `send` loop, written once. `perform` sends one hop and
    /// is given the deadline of the whole request (`timeout` from now, at least 1 ms), which every
    /// hop shares. A refusal throws ``TransportError/redirectRefused(origin:reason:)`` and nothing
    /// is sent to the target.
    static func send(
        _ request: TransportRequest,
        perform: (TransportRequest, ContinuousClock.Instant) async throws -> TransportResponse
    ) async throws -> TransportResponse {
        try await follow(request) { hop, deadline in
            let response = try await perform(hop, deadline)
            return (response, response.status, response.header("location"), response.headers)
        }
    }

    /// Opens a stream with `open`, following redirects by the same rule as requests: the
    /// transports never follow a redirect themselves when they open a stream. The request's
    /// `timeout` bounds the heads of all hops together (a followed hop is given what is left).
    /// A refusal throws ``TransportError/redirectRefused(origin:reason:)`` and nothing is sent
    /// to the target.
    static func openStream(
        _ request: TransportRequest, open: (TransportRequest) async throws -> TransportStream
    ) async throws -> TransportStream {
        try await follow(request) { hop, _ in
            let stream = try await open(hop)
            return (stream, stream.status, stream.header("location"), stream.headers)
        } discard: { stream in
            stream.cancel()
        }
    }

    /// The redirect loop of ``send(_:perform:)`` and ``openStream(_:open:)``, within one
    /// deadline (`timeout` from now, at least 1 ms): `hop` sends one request and returns its
    /// answer with the status and `Location` that ``decide(_:status:location:followed:)`` reads, and
    /// its header fields. A followed hop gets what is left of the deadline as its `timeout` (none
    /// left: ``TransportError/timedOut``) and what is left of the response header limit (the
    /// redirects' headers count towards it). An answer that is a redirect, followed or refused,
    /// goes to `discard` first (*default*: nothing to release).
    private static func follow<Answer>(
        _ request: TransportRequest,
        hop: (TransportRequest, ContinuousClock.Instant) async throws -> (
            answer: Answer, status: Int, location: String?, headers: [String: String]
        ),
        discard: (Answer) -> Void = { _ in }
    ) async throws -> Answer {
        let deadline = ContinuousClock.now + max(request.timeout, .milliseconds(1))
        var current = request
        var followed = 0
        while true {
            if followed > 0 {
                let left = deadline - ContinuousClock.now
                guard left > .zero else { throw TransportError.timedOut }
                current.timeout = left
            }
            let (answer, status, location, headers) = try await hop(current, deadline)
            switch decide(current, status: status, location: location, followed: followed) {
            case .answer:
                return answer
            case .follow(let next):
                discard(answer)
                current = next
                try current.spendHeaderBudget(on: headers, limit: request.maxResponseHeaderBytes)
                followed += 1
            case .refuse(let error):
                discard(answer)
                throw error
            }
        }
    }
}
