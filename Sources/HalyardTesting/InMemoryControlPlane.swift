public import Foundation
public import Halyard

/// An in-memory control plane for application tests (docs/configuration.md): the real ``FlagClient`` talks
/// to it through the ``FlagTransport`` protocol, with no network and no disk.
///
/// ```swift
/// let plane = InMemoryControlPlane(values: ["checkout.new": true])
/// let client = try plane.makeClient()
/// _ = await client.ready(timeout: .seconds(1))
/// #expect(client.bool("checkout.new", default: false))
///
/// plane.setValue(false, for: "checkout.new")
/// await client.refresh()                      // the client sees changes on its next fetch
/// #expect(!client.bool("checkout.new", default: true))
/// ```
///
/// Values are served to every context as OFREP items with reason `STATIC`
/// (use ``setFlag(_:)`` for variants, reasons, error codes and metadata). Answers carry an ETag
/// and a fetch whose `If-None-Match` matches gets 304, like a real control plane.
public final class InMemoryControlPlane: FlagTransport, Sendable {
    /// A base URL for clients of this plane (never contacted).
    public static let baseURL = URL(string: "https://control-plane.halyard.invalid")!

    private struct State {
        var flags: [String: ServedFlag] = [:]
        var version = 1
        var holding = false
        var failStatus: Int?
        var held: [CheckedContinuation<Void, Never>] = []
        var contexts: [JSONValue] = []
        var requests: [TransportRequest] = []
        /// Exposure events uploaded (any request that is not an OFREP evaluation).
        var exposures: [JSONValue] = []
        var unauthorizedUploads = 0
        var latency: Duration = .zero
        var contextValues: (@Sendable (JSONValue) -> [String: JSONValue]?)?
        var recording = true
        var evaluations = 0
    }

    private let state: Locked<State>

    /// Creates a plane serving `values` (reason `STATIC`).
    public init(values: [String: JSONValue] = [:]) {
        var flags: [String: ServedFlag] = [:]
        for (key, value) in values { flags[key] = ServedFlag(key: key, value: value, reason: .staticValue) }
        state = Locked(State(flags: flags))
    }

    // MARK: - Values

    /// Serves `value` for `key` (reason `STATIC`) from the next fetch on.
    public func setValue(_ value: JSONValue, for key: String) {
        setFlag(ServedFlag(key: key, value: value, reason: .staticValue))
    }

    /// Serves a full served flag (variant, reason, error code, metadata) from the next fetch on.
    public func setFlag(_ flag: ServedFlag) {
        state.withLock { s in
            s.flags[flag.key] = flag
            s.version += 1
        }
    }

    /// Stops serving `key` from the next fetch on (reads then get `FLAG_NOT_FOUND`).
    public func removeValue(for key: String) {
        state.withLock { s in
            if s.flags.removeValue(forKey: key) != nil { s.version += 1 }
        }
    }

    /// Replaces every served value (reason `STATIC`) from the next fetch on.
    public func replaceValues(_ values: [String: JSONValue]) {
        state.withLock { s in
            s.flags = [:]
            for (key, value) in values { s.flags[key] = ServedFlag(key: key, value: value, reason: .staticValue) }
            s.version += 1
        }
    }

    /// Serves values computed from each request's context (its wire form: `targetingKey`,
    /// `kind` and the public attributes), reason `TARGETING_MATCH`, variant `"on"`/`"off"` for
    /// booleans, from the next fetch on; `nil` from `values` serves the shared values. Pass
    /// `nil` to go back to the shared values. For tests and benchmarks of `FlagService`, where
    /// every request carries its own context.
    public func setContextValues(_ values: (@Sendable (_ context: JSONValue) -> [String: JSONValue]?)?) {
        state.withLock { s in
            s.contextValues = values
            s.version += 1
        }
    }

    /// Makes every OFREP evaluation take `latency` (real time) before it is answered, like a
    /// control plane across a network; *default* zero.
    public func setLatency(_ latency: Duration) {
        state.withLock { $0.latency = latency }
    }

    /// Stops (or resumes) keeping ``requests`` and ``contextUpdates``, so a long benchmark does
    /// not grow them; ``evaluationCount`` still counts.
    public func setRecording(_ recording: Bool) {
        state.withLock { $0.recording = recording }
    }

    /// OFREP evaluations answered so far (also while recording is off).
    public var evaluationCount: Int { state.withLock { $0.evaluations } }

    // MARK: - Initialization control

    /// Makes fetches wait until ``completeInitialization()`` or ``failInitialization(status:)``
    /// (to test what an app shows before values arrive).
    public func holdInitialization() {
        state.withLock { s in
            s.holding = true
            s.failStatus = nil
        }
    }

    /// Releases held fetches: they are answered with the current values.
    public func completeInitialization() {
        release(failStatus: nil)
    }

    /// Releases held fetches with an HTTP `status` (for example 401, 500). Without a held fetch,
    /// the next fetch gets it. Later fetches are answered normally.
    public func failInitialization(status: Int) {
        release(failStatus: status)
    }

    private func release(failStatus: Int?) {
        let held = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.holding = false
            s.failStatus = failStatus
            defer { s.held.removeAll() }
            return s.held
        }
        for c in held { c.resume() }
    }

    // MARK: - What the client sent

    /// The contexts the client sent, in order: each is the wire form (one flat JSON object with
    /// `targetingKey`, `kind` and the public attributes).
    public var contextUpdates: [JSONValue] { state.withLock { $0.contexts } }

    /// Every request the client sent, in order.
    public var requests: [TransportRequest] { state.withLock { $0.requests } }

    /// The exposure events the client uploaded, in order (each an object with `kind`, `key`,
    /// `variant`, `reason`, `contextFingerprint`, `creationDate`, `count`).
    public var receivedExposures: [JSONValue] { state.withLock { $0.exposures } }

    /// Exposure uploads refused with 401 because they carried no `Authorization: Bearer <key>`.
    public var unauthorizedUploads: Int { state.withLock { $0.unauthorizedUploads } }

    // MARK: - Clients

    /// Options for a client of this plane: its transport, a fixed install id, no polling, and
    /// no disk (the on-device cache is off: `maxCachedContexts = 0`; turn it on with a
    /// `cacheStore` or `cacheDirectory` of the test's own).
    public func makeOptions(key: String = "test-key") -> FlagClientOptions {
        var options = FlagClientOptions(baseURL: Self.baseURL, key: key)
        options.transport = self
        options.installIDStorage = .fixed("halyard-testing")
        options.pollInterval = .zero
        options.maxCachedContexts = 0
        return options
    }

    /// A client of this plane for `context` (see ``makeOptions(key:)``).
    public func makeClient(context: EvaluationContext = .anonymous) throws(FlagClientError) -> FlagClient {
        var options = makeOptions()
        options.initialContext = context
        return try FlagClient(options: options)
    }

    /// Options for a ``FlagService`` of this plane: its transport, a fixed install id, a
    /// server key.
    public func makeServiceOptions(key: String = "srv-test-key") -> FlagServiceOptions {
        var options = FlagServiceOptions(baseURL: Self.baseURL, key: key)
        options.transport = self
        options.installID = "halyard-testing"
        return options
    }

    private func receiveExposures(_ request: TransportRequest) -> TransportResponse {
        // Like a real collector: an upload without credentials is refused and recorded nowhere.
        let authorization = request.headers.first { $0.key.lowercased() == "authorization" }?.value ?? ""
        guard authorization.hasPrefix("Bearer "),
            !authorization.dropFirst(7).trimmingCharacters(in: .whitespaces).isEmpty
        else {
            state.withLock { $0.unauthorizedUploads += 1 }
            return TransportResponse(status: 401)
        }
        let gzipped = request.headers.contains {
            $0.key.lowercased() == "content-encoding" && $0.value.lowercased() == "gzip"
        }
        guard let raw = gzipped ? OFREPWire.gunzip(request.body) : request.body,
            case .object(let document)? = OFREPWire.parse(raw), case .array(let events)? = document["events"]
        else {
            return TransportResponse(status: 400)
        }
        state.withLock { s in
            s.requests.append(request)
            s.exposures.append(contentsOf: events)
        }
        return TransportResponse(status: 202, headers: ["Content-Type": "application/json"], body: Data("{}".utf8))
    }

    /// The OFREP single-flag evaluation (`POST /ofrep/v1/evaluate/flags/{key}`): the item for
    /// `key` alone, or 404 `FLAG_NOT_FOUND`. Not used by Halyard; benchmarks use it for the
    /// per-read designs other SDKs use. Counted in ``evaluationCount``.
    private func evaluateOne(_ key: String, _ request: TransportRequest) async throws -> TransportResponse {
        let latency = state.withLock { s -> Duration in
            if s.recording { s.requests.append(request) }
            return s.latency
        }
        if latency > .zero { try await Task.sleep(for: latency) }
        return state.withLock { s -> TransportResponse in
            s.evaluations += 1
            guard case .object(let members)? = OFREPWire.parse(request.body), let context = members["context"] else {
                return TransportResponse(status: 400)
            }
            var flag = s.flags[key]
            if let values = s.contextValues, let perContext = values(context) {
                flag = perContext[key].map { value in
                    var variant: String?
                    if case .bool(let b) = value { variant = b ? "on" : "off" }
                    return ServedFlag(key: key, value: value, variant: variant, reason: .targetingMatch)
                }
            }
            guard let flag else {
                let body = JSONValue.object(["key": .string(key), "errorCode": .string("FLAG_NOT_FOUND")])
                return TransportResponse(status: 404, body: body.canonicalJSONData)
            }
            let items = OFREPWire.encodeResponse([flag])
            guard case .object(let document)? = OFREPWire.parse(items), case .array(let list)? = document["flags"],
                let item = list.first
            else { return TransportResponse(status: 500) }
            return TransportResponse(status: 200, body: item.canonicalJSONData)
        }
    }

    // MARK: - FlagTransport

    /// Answers one request: OFREP evaluations from the in-memory values; any other path is taken
    /// as an exposure upload (gzip or plain JSON `{"meta": ..., "events": [...]}`), whose events
    /// are appended to ``receivedExposures`` and answered 202 (400 when unreadable, 401 without
    /// an `Authorization: Bearer <key>` header, counted in ``unauthorizedUploads``).
    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        if let range = request.url.path.range(of: "/ofrep/v1/evaluate/flags/") {
            return try await evaluateOne(String(request.url.path[range.upperBound...]), request)
        }
        if !request.url.path.hasSuffix("/ofrep/v1/evaluate/flags") {
            return receiveExposures(request)
        }
        let (mustWait, latency) = state.withLock { s -> (Bool, Duration) in
            if s.recording { s.requests.append(request) }
            return (s.holding, s.latency)
        }
        if latency > .zero { try await Task.sleep(for: latency) }
        if mustWait {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { s -> Bool in
                    if !s.holding { return true }
                    s.held.append(c)
                    return false
                }
                if resumeNow { c.resume() }
            }
        }
        try Task.checkCancellation()
        return state.withLock { s -> TransportResponse in
            let context: JSONValue? = {
                guard case .object(let members)? = OFREPWire.parse(request.body) else { return nil }
                return members["context"]
            }()
            s.evaluations += 1
            if let context, s.recording { s.contexts.append(context) }
            if let status = s.failStatus {
                s.failStatus = nil
                return TransportResponse(status: status)
            }
            guard context != nil else { return TransportResponse(status: 400) }
            let etag = "\"v\(s.version)\""
            if request.headers["If-None-Match"] == etag {
                return TransportResponse(status: 304, headers: ["ETag": etag])
            }
            if let values = s.contextValues, let context, let perContext = values(context) {
                let flags = perContext.sorted { $0.key < $1.key }.map { key, value -> ServedFlag in
                    var variant: String?
                    if case .bool(let b) = value { variant = b ? "on" : "off" }
                    return ServedFlag(key: key, value: value, variant: variant, reason: .targetingMatch)
                }
                return TransportResponse(
                    status: 200, headers: ["ETag": etag], body: OFREPWire.encodeResponse(flags))
            }
            let flags = s.flags.values.sorted { $0.key < $1.key }
            return TransportResponse(status: 200, headers: ["ETag": etag], body: OFREPWire.encodeResponse(flags))
        }
    }
}
