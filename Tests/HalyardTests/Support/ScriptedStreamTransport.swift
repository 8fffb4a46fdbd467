import Foundation

@testable import Halyard

/// A deterministic, in-memory control plane that can stream (SPEC §14): the bulk endpoint
/// answers from a versioned flag set (ETag `"v<version>"`, 304 on a matching `If-None-Match`)
/// and advertises one event stream; `openStream` hands out connections a test pushes text to,
/// closes or fails. Every request is recorded.
final class ScriptedStreamTransport: StreamingTransport, Sendable {
    /// What the stream answers when opened.
    enum StreamAnswer: Sendable {
        case eventStream
        case status(Int, headers: [String: String] = [:])
        case refuse
        /// The transport refused a redirect to `origin` (SPEC §5).
        case redirectRefused(origin: String)
    }

    struct Recorded: Sendable {
        var method: String
        var url: URL
        var headers: [String: String]
        var at: Duration
        var body = ""
    }

    private struct Connection {
        var continuation: AsyncThrowingStream<Data, any Error>.Continuation
        var closed = false
    }

    private struct State {
        var version = 1
        var advertise = true
        var streamAnswer = StreamAnswer.eventStream
        var requests: [Recorded] = []
        var connections: [Connection] = []
        var held = false
        var streamURL: String?
        /// Held answers carry the version of the moment they were sent (an answer that
        /// predates a change made while it was on its way).
        var answersAsSent = false
        var inFlight = 0
        var maxInFlight = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
        var opensHeld = false
        var openWaiting: [CheckedContinuation<Void, Never>] = []
        /// Bulk requests whose body contains `match` are answered `status` at once (not held).
        var failing: (match: String, status: Int, headers: [String: String])?
        /// Stream answers for particular URLs (by `absoluteString`), over ``streamAnswer``.
        var answersByURL: [String: StreamAnswer] = [:]
        /// Whether each 200 advertises the stream URL with a fresh `sig` query item (a plane
        /// that signs its stream URLs per answer), and the last one given.
        var signsPerAnswer = false
        var signature = 0
        /// The stream URL the last 200 advertised.
        var lastAdvertised: String?
        /// Bulk statuses for requests whose body contains a marker (a refused context).
        var bulkStatuses: [String: Int] = [:]
    }

    /// The advertised stream's URL: it carries a secret, so tests can check it never leaks.
    static let secret = "tok3n-s3cr3t"
    private let initialStreamURL: String
    /// The stream URL the bulk answers advertise now.
    var streamURL: String { state.withLock { $0.streamURL ?? initialStreamURL } }
    /// Advertises `url` from now on (a rotated stream URL).
    func setStreamURL(_ url: String) { state.withLock { $0.streamURL = url } }
    let clock: any HalyardClock
    private let state = Locked(State())

    init(
        clock: any HalyardClock,
        streamURL: String = "http://127.0.0.1:9/ofrep/v1/sse?token=\(ScriptedStreamTransport.secret)"
    ) {
        self.clock = clock
        initialStreamURL = streamURL
    }

    // MARK: - Script

    /// Changes the flag set on the "server" (the next fetch sees version + 1).
    func change() { state.withLock { $0.version += 1 } }
    var version: Int { state.withLock { $0.version } }
    func setAdvertise(_ on: Bool) { state.withLock { $0.advertise = on } }
    func setStreamAnswer(_ answer: StreamAnswer) { state.withLock { $0.streamAnswer = answer } }
    /// Answers the bulk requests whose body contains `match` with `status` and `headers` at
    /// once, even while answers are held (one context refused or rate-limited).
    func fail(bodyContaining match: String, status: Int, headers: [String: String] = [:]) {
        state.withLock { $0.failing = (match, status, headers) }
    }
    /// What a stream opened at `url` answers (over ``setStreamAnswer(_:)``).
    func setStreamAnswer(_ answer: StreamAnswer, forURL url: String) {
        state.withLock { $0.answersByURL[url] = answer }
    }
    /// From now on every 200 advertises the stream URL with `sig=<n>` added to its query, `n`
    /// new each time (a plane that signs its stream URLs per answer).
    func signPerAnswer() { state.withLock { $0.signsPerAnswer = true } }
    /// The stream URL the last 200 advertised (nil before any).
    var lastAdvertised: String? { state.withLock { $0.lastAdvertised } }
    /// Bulk requests whose body contains `marker` are answered `status` with no body.
    func setBulkStatus(_ status: Int, forBodyContaining marker: String) {
        state.withLock { $0.bulkStatuses[marker] = status }
    }

    /// Sends raw event-stream text on the newest open connection.
    func push(_ text: String) {
        let c = state.withLock { $0.connections.last(where: { !$0.closed })?.continuation }
        c?.yield(Data(text.utf8))
    }

    /// A `refetchEvaluation` event on the newest open connection.
    func pushRefetch(etag: String? = nil) {
        var data = #"{"type":"refetchEvaluation""#
        if let etag { data += #","etag":"# + etag }
        push("data: " + data + "}\n\n")
    }

    /// Closes the newest open connection cleanly (the server dropped it).
    func drop() {
        let c = state.withLock { s -> AsyncThrowingStream<Data, any Error>.Continuation? in
            guard let i = s.connections.lastIndex(where: { !$0.closed }) else { return nil }
            s.connections[i].closed = true
            return s.connections[i].continuation
        }
        c?.finish()
    }

    /// Holds every bulk answer until ``release()`` (to see coalescing deterministically);
    /// `answeringAsSent`: each held answer carries the version of the moment it was sent.
    func hold(answeringAsSent: Bool = false) {
        state.withLock {
            $0.held = true
            $0.answersAsSent = answeringAsSent
        }
    }
    func release() {
        let waiting = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.held = false
            defer { s.waiting.removeAll() }
            return s.waiting
        }
        for c in waiting { c.resume() }
    }
    var heldFetches: Int { state.withLock { $0.waiting.count } }

    /// Holds every stream open (after recording it) until ``releaseOpens()``, cancellation or
    /// not: a connect already on the wire completes whatever its task does meanwhile.
    func holdOpens() { state.withLock { $0.opensHeld = true } }
    func releaseOpens() {
        let waiting = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.opensHeld = false
            defer { s.openWaiting.removeAll() }
            return s.openWaiting
        }
        for c in waiting { c.resume() }
    }
    var heldOpens: Int { state.withLock { $0.openWaiting.count } }

    // MARK: - Observations

    var requests: [Recorded] { state.withLock { $0.requests } }
    var fetches: [Recorded] { requests.filter { $0.method == "POST" } }
    var streamOpens: [Recorded] { requests.filter { $0.method == "GET" } }
    var maxInFlight: Int { state.withLock { $0.maxInFlight } }
    var openConnections: Int { state.withLock { $0.connections.filter { !$0.closed }.count } }

    // MARK: - Transport

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        state.withLock { s in
            s.requests.append(
                .init(
                    method: request.method, url: request.url, headers: request.headers, at: clock.monotonicNow,
                    body: String(decoding: request.body, as: UTF8.self)))
            s.inFlight += 1
            s.maxInFlight = max(s.maxInFlight, s.inFlight)
        }
        defer { state.withLock { $0.inFlight -= 1 } }
        if let failing = state.withLock({ $0.failing }),
            String(decoding: request.body, as: UTF8.self).contains(failing.match)
        {
            return TransportResponse(status: failing.status, headers: failing.headers)
        }
        let versionAtSend = state.withLock { $0.answersAsSent ? $0.version : nil }
        // Let concurrent requests overlap (a real server takes time too).
        await Task.yield()
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { s -> Bool in
                if s.held { s.waiting.append(c) }
                return !s.held
            }
            if resumeNow { c.resume() }
        }
        let body = String(decoding: request.body, as: UTF8.self)
        let refused = state.withLock { s in s.bulkStatuses.first { body.contains($0.key) }?.value }
        if let refused { return TransportResponse(status: refused, headers: [:]) }
        let (current, advertise, advertised) = state.withLock { s -> (Int, Bool, String) in
            var url = s.streamURL ?? initialStreamURL
            if s.signsPerAnswer {
                s.signature += 1
                url += (url.contains("?") ? "&" : "?") + "sig=\(s.signature)"
            }
            if s.advertise { s.lastAdvertised = url }
            return (s.version, s.advertise, url)
        }
        let version = versionAtSend ?? current
        let etag = "\"v\(version)\""
        if request.headers["If-None-Match"] == etag {
            return TransportResponse(status: 304, headers: ["ETag": etag])
        }
        var answer = #"{"flags":[{"key":"version","value":\#(version),"reason":"STATIC"}]"#
        if advertise { answer += #","eventStreams":[{"type":"sse","url":"\#(advertised)","inactivityDelaySec":120}]"# }
        answer += "}"
        return TransportResponse(
            status: 200, headers: ["ETag": etag, "Content-Type": "application/json"], body: Data(answer.utf8))
    }

    func openStream(_ request: TransportRequest, inactivityTimeout: Duration) async throws -> TransportStream {
        let answer = state.withLock { s -> StreamAnswer in
            s.requests.append(
                .init(method: request.method, url: request.url, headers: request.headers, at: clock.monotonicNow))
            return s.answersByURL[request.url.absoluteString] ?? s.streamAnswer
        }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { s -> Bool in
                if s.opensHeld { s.openWaiting.append(c) }
                return !s.opensHeld
            }
            if resumeNow { c.resume() }
        }
        switch answer {
        case .refuse:
            throw TransportError.network("connection refused")
        case .redirectRefused(let origin):
            throw TransportError.redirectRefused(origin: origin, reason: .otherOrigin)
        case .status(let status, let headers):
            let (stream, continuation) = AsyncThrowingStream<Data, any Error>.makeStream()
            continuation.finish()
            return TransportStream(status: status, headers: headers, chunks: stream, onCancel: {})
        case .eventStream:
            let (stream, continuation) = AsyncThrowingStream<Data, any Error>.makeStream()
            let index = state.withLock { s -> Int in
                s.connections.append(Connection(continuation: continuation))
                return s.connections.count - 1
            }
            let close: @Sendable () -> Void = { [weak self] in
                let c = self?.state.withLock { s -> AsyncThrowingStream<Data, any Error>.Continuation? in
                    guard !s.connections[index].closed else { return nil }
                    s.connections[index].closed = true
                    return s.connections[index].continuation
                }
                c?.finish()
            }
            continuation.onTermination = { _ in close() }
            return TransportStream(
                status: 200, headers: ["Content-Type": "text/event-stream"], chunks: stream, onCancel: close)
        }
    }
}
