import Foundation
import HalyardTesting

@testable import Halyard

/// The propagation checker's control plane (docs/testing.md, "The propagation checker"): an
/// OFREP bulk endpoint and an event-stream endpoint in memory, serving two environments. Each
/// key belongs to one environment, so a value read after a key rotation says which key's
/// answer produced it. Driven by the workload: ``change(env:flag:)``, ``publish(env:changeID:)``
/// (late, twice, out of order or never: the workload decides), fault windows answering 429/503
/// with `Retry-After` (seconds or an HTTP date), stream URL rotations and outages, revoked keys
/// (401), per-answer stream tokens. Every request is recorded in the ``PropagationHistory``
/// with who sent it, with which key, for which context (a bulk request's targeting key), what
/// was answered and which change each served value carries. Each reader talks to it through its
/// own ``Endpoint``.
final class SimulatedControlPlane: Sendable {
    static let flagCount = 4
    static let baseURL = URL(string: "http://127.0.0.1:9")!
    /// `Retry-After` is honoured up to this (SPEC §5).
    static let retryAfterCap: Duration = .seconds(3600)

    /// A window of bulk faults: each request in it fails with this probability.
    struct BulkFaults: Sendable {
        var until: Duration
        var probability: Double
    }

    /// A window in which every stream open answers 503 with `Retry-After: <date>`.
    struct StreamOutage: Sendable {
        var until: Duration
        var date: Date
        var floor: Duration
        /// This reader is told to come back in 600 s instead (a long `Retry-After`).
        var longReader: Int?
    }

    private struct Key {
        var env: Int
        var generation: Int
        var revoked = false
    }

    private struct Connection {
        var reader: Int
        var env: Int
        var continuation: AsyncThrowingStream<Data, any Error>.Continuation
        var closed = false
    }

    private struct State {
        var random: SplitMix64
        /// env → the change id each flag's value carries.
        var values: [Int: [Int]] = [1: Array(repeating: 0, count: flagCount), 2: Array(repeating: 0, count: flagCount)]
        var version: [Int: Int] = [1: 0, 2: 0]
        var nextChange = 1
        var keys: [String: Key] = [:]
        var streamGeneration = 1
        var perAnswerToken = false
        var token = 0
        var bulkFaults: BulkFaults?
        var outage: StreamOutage?
        var connections: [Int: Connection] = [:]
        var nextConnection = 0
    }

    let history: PropagationHistory
    private let state: Locked<State>

    init(history: PropagationHistory, seed: UInt64, perAnswerToken: Bool) {
        self.history = history
        var s = State(random: SplitMix64(seed: seed ^ 0x5EED_0F_C0DE))
        s.perAnswerToken = perAnswerToken
        state = Locked(s)
    }

    // MARK: - Script

    /// Registers `key` as belonging to `env` (its generation is what the history records).
    func addKey(_ key: String, env: Int, generation: Int) {
        state.withLock { $0.keys[key] = Key(env: env, generation: generation) }
    }

    /// Refuses `key` from now on (401); streams it opened stay open (auth is checked at connect).
    func revoke(_ key: String) {
        state.withLock { $0.keys[key]?.revoked = true }
    }

    /// Gives `flag` of `env` a new value; returns the change id.
    @discardableResult
    func change(env: Int, flag: Int) -> Int {
        let t = history.now
        let id = state.withLock { s -> Int in
            let id = s.nextChange
            s.nextChange += 1
            s.values[env]?[flag] = id
            s.version[env] = id
            return id
        }
        history.recordChange(.init(id: id, env: env, flag: flag, at: t))
        return id
    }

    /// Writes a `refetchEvaluation` event for `changeID` to every open stream of `env`.
    func publish(env: Int, changeID: Int) {
        let text = #"data: {"type":"refetchEvaluation","etag":"\"e\#(env)-v\#(changeID)\""}"# + "\n\n"
        let t = history.now
        let targets = state.withLock { s in
            s.connections.values.filter { !$0.closed && $0.env == env }.map { ($0.reader, $0.continuation) }
        }
        for (_, continuation) in targets { continuation.yield(Data(text.utf8)) }
        history.recordPublication(.init(env: env, changeID: changeID, at: t, deliveredTo: targets.map(\.0)))
    }

    func setBulkFaults(_ faults: BulkFaults?) { state.withLock { $0.bulkFaults = faults } }

    /// Closes every stream; with `rotate`, the advertised URL moves and the old one answers 401.
    func dropStreams(rotate: Bool, outage: StreamOutage?) {
        let open = state.withLock { s -> [AsyncThrowingStream<Data, any Error>.Continuation] in
            if rotate { s.streamGeneration += 1 }
            s.outage = outage
            var result: [AsyncThrowingStream<Data, any Error>.Continuation] = []
            for (id, c) in s.connections where !c.closed {
                s.connections[id]?.closed = true
                result.append(c.continuation)
            }
            return result
        }
        history.recordDisruption(rotate ? "stream URL rotated, streams closed" : "streams closed")
        for c in open { c.finish() }
    }

    /// Ends every stream (the run is over).
    func shutDown() {
        let open = state.withLock { s in s.connections.values.filter { !$0.closed }.map(\.continuation) }
        for c in open { c.finish() }
    }

    // MARK: - Wire helpers

    private static func bearer(_ request: TransportRequest) -> String {
        let value = request.headers.first { $0.key.lowercased() == "authorization" }?.value ?? ""
        return value.hasPrefix("Bearer ") ? String(value.dropFirst(7)) : value
    }

    private static func header(_ request: TransportRequest, _ name: String) -> String? {
        request.headers.first { $0.key.lowercased() == name.lowercased() }?.value
    }

    private static func targetingKey(_ body: Data) -> String {
        guard case .object(let b)? = OFREPWire.parse(body), case .object(let c)? = b["context"],
            case .string(let k)? = c["targetingKey"]
        else { return "" }
        return k
    }

    static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }

    private func streamURL(_ s: inout State) -> String {
        var url = "http://127.0.0.1:9/sse/\(s.streamGeneration)"
        if s.perAnswerToken {
            s.token += 1
            url += "?token=t\(s.token)"
        } else {
            url += "?token=fixed"
        }
        return url
    }

    // MARK: - Bulk endpoint

    func bulk(reader: Int, _ request: TransportRequest) async throws -> TransportResponse {
        let key = Self.bearer(request)
        let conditional = Self.header(request, "If-None-Match")
        let t = history.now
        var record = PropagationHistory.Request(
            reader: reader, kind: .bulk, keyGeneration: nil, env: nil, sentAt: t, conditional: conditional != nil,
            target: Self.targetingKey(request.body))
        let (response, latency, floorAfter) = state.withLock {
            s -> (TransportResponse, Duration, (delay: Duration?, date: Date?)) in
            // Mostly quick, a quarter slow: a slow answer outlives the 200 ms spacing of a
            // service's event waves, so a second change's event arrives while it travels.
            let latency: Duration =
                s.random.chance(0.75) ? .milliseconds(1 + s.random.below(60)) : .milliseconds(100 + s.random.below(300))
            guard let k = s.keys[key] else { return (TransportResponse(status: 401), latency, (nil, nil)) }
            record.keyGeneration = k.generation
            record.env = k.env
            if k.revoked { return (TransportResponse(status: 401), latency, (nil, nil)) }
            if let faults = s.bulkFaults, t < faults.until, s.random.unit() < faults.probability {
                let status = s.random.unit() < 0.5 ? 429 : 503
                if s.random.unit() < 0.5 {
                    let seconds = s.random.unit() < 0.5 ? 1 : 2
                    return (
                        TransportResponse(status: status, headers: ["Retry-After": "\(seconds)"]), latency,
                        (.seconds(seconds), nil)
                    )
                }
                // An HTTP date has whole seconds: the floor is the date as written.
                let date = Date(
                    timeIntervalSince1970: (Date().timeIntervalSince1970 + 1 + s.random.unit()).rounded(.down))
                return (
                    TransportResponse(status: status, headers: ["Retry-After": Self.httpDate(date)]), latency,
                    (nil, date)
                )
            }
            let version = s.version[k.env] ?? 0
            let etag = "\"e\(k.env)-v\(version)\""
            if conditional == etag {
                return (TransportResponse(status: 304, headers: ["ETag": etag]), latency, (nil, nil))
            }
            let served = s.values[k.env] ?? []
            record.served = served
            record.advertised = s.streamGeneration
            var flags: [String] = []
            for (flag, change) in served.enumerated() {
                flags.append(
                    #"{"key":"f\#(flag)","value":\#(PropagationValue.make(env: k.env, change: change)),"reason":"STATIC"}"#
                )
            }
            let body =
                #"{"flags":[\#(flags.joined(separator: ","))],"eventStreams":[{"type":"sse","url":"\#(streamURL(&s))","inactivityDelaySec":120}]}"#
            return (
                TransportResponse(
                    status: 200, headers: ["ETag": etag, "Content-Type": "application/json"], body: Data(body.utf8)),
                latency, (nil, nil)
            )
        }
        record.status = response.status
        record.retryAfterText = response.header("Retry-After")
        let index = history.recordRequest(record)
        // The answer was computed when the request arrived; it travels back meanwhile (an answer
        // that crosses a change carries the value before it).
        do {
            try await Task.sleep(for: latency)
        } catch {
            history.update(index) { $0.note = "cancelled" }
            throw error
        }
        let answered = history.now
        history.update(index) { r in
            r.answeredAt = answered
            if let delay = floorAfter.delay { r.retryFloor = answered + min(delay, Self.retryAfterCap) }
            if let date = floorAfter.date {
                let delay = Duration.seconds(max(0, date.timeIntervalSinceNow))
                r.retryFloor = answered + min(delay, Self.retryAfterCap)
            }
        }
        return response
    }

    // MARK: - Stream endpoint

    func openStream(reader: Int, _ request: TransportRequest) async throws -> TransportStream {
        let key = Self.bearer(request)
        let t = history.now
        let path = request.url.path
        let generation = Int(path.split(separator: "/").last ?? "") ?? -1
        var record = PropagationHistory.Request(reader: reader, kind: .stream, sentAt: t, target: path)
        record.advertised = generation
        let (stream, continuation) = AsyncThrowingStream<Data, any Error>.makeStream()
        let (status, headers, floor, connection) = state.withLock {
            s -> (Int, [String: String], Duration?, Int?) in
            guard let k = s.keys[key] else { return (401, [:], nil, nil) }
            record.keyGeneration = k.generation
            record.env = k.env
            if k.revoked { return (401, [:], nil, nil) }
            if generation != s.streamGeneration { return (401, [:], nil, nil) }
            if let outage = s.outage {
                if outage.longReader == reader, t < outage.floor + .seconds(600) {
                    return (503, ["Retry-After": "600"], t + .seconds(600), nil)
                }
                if t < outage.until {
                    return (503, ["Retry-After": Self.httpDate(outage.date)], outage.floor, nil)
                }
            }
            let id = s.nextConnection
            s.nextConnection += 1
            s.connections[id] = Connection(reader: reader, env: k.env, continuation: continuation)
            return (200, ["Content-Type": "text/event-stream"], nil, id)
        }
        record.status = status
        record.answeredAt = t
        record.retryFloor = floor
        record.retryAfterText = headers["Retry-After"]
        _ = history.recordRequest(record)
        guard let connection else {
            continuation.finish()
            return TransportStream(status: status, headers: headers, chunks: stream, onCancel: {})
        }
        let close: @Sendable () -> Void = { [weak self] in
            let c = self?.state.withLock { s -> AsyncThrowingStream<Data, any Error>.Continuation? in
                guard let c = s.connections[connection], !c.closed else { return nil }
                s.connections[connection]?.closed = true
                return c.continuation
            }
            c?.finish()
        }
        continuation.onTermination = { _ in close() }
        return TransportStream(status: status, headers: headers, chunks: stream, onCancel: close)
    }

    /// One reader's view of the plane (its transport): requests are attributed to it.
    struct Endpoint: StreamingTransport {
        let plane: SimulatedControlPlane
        let reader: Int

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            guard request.url.path.hasSuffix("/ofrep/v1/evaluate/flags") else {
                return TransportResponse(status: 202, body: Data("{}".utf8))
            }
            return try await plane.bulk(reader: reader, request)
        }

        func openStream(_ request: TransportRequest, inactivityTimeout: Duration) async throws -> TransportStream {
            try await plane.openStream(reader: reader, request)
        }
    }
}
