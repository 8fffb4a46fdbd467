import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// The OTLP exporter's delivery rules (docs/exposures.md, "OTLP exporter"): the OTLP/HTTP
/// specification's retryable statuses, `Retry-After`, partial success, the request it sends —
/// against a scripted in-process transport (no network, injected clock).
@Suite struct OTLPDeliveryTests {
    /// Answers each request with the next scripted response (200 `{}` once the script is empty)
    /// and keeps every request.
    final class ScriptedTransport: FlagTransport, Sendable {
        enum Answer: Sendable {
            case response(TransportResponse)
            case failure(TransportError)
        }
        private let state = Locked((script: [Answer](), requests: [TransportRequest]()))

        init(_ script: [Answer] = []) { state.withLock { $0.script = script } }

        var requests: [TransportRequest] { state.withLock { $0.requests } }

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            let answer = state.withLock { s -> Answer? in
                s.requests.append(request)
                return s.script.isEmpty ? nil : s.script.removeFirst()
            }
            switch answer {
            case .response(let r)?:
                // As the real transports do: a body over the request's limit is refused.
                if r.body.count > request.maxResponseBytes {
                    throw TransportError.responseTooLarge(limit: request.maxResponseBytes)
                }
                return r
            case .failure(let e)?: throw e
            case nil: return TransportResponse(status: 200, body: Data("{}".utf8))
            }
        }
    }

    static let endpoint = URL(string: "https://otel.example:4318")!
    static let meta = ExposureMeta(sdk: "Halyard", version: "0.1.0", appId: "app", installId: "i")

    static func recorder(
        _ transport: ScriptedTransport, clock: ManualClock, log: (@Sendable (String) -> Void)? = nil,
        edit: (inout ExposureOptions) -> Void = { _ in }
    ) -> ExposureRecorder {
        var o = ExposureOptions()
        o.flushInterval = .zero
        o.initialBackoff = .milliseconds(10)
        o.maxBackoff = .milliseconds(100)
        o.exporter = .otlp(endpoint: endpoint, headers: ["Authorization": "Basic c2VjcmV0", "X-Tenant": "t1"])
        edit(&o)
        return ExposureRecorder(
            options: o, clock: clock, transport: transport, endpoint: URL(string: "https://flags.example")!,
            meta: meta, headers: ["Authorization": "Bearer control-plane-key", "X-Halyard-App-Id": "app"], log: log,
            startsTicker: false)
    }

    static func identityHolds(_ c: ExposureStats) -> Bool {
        c.recorded == c.deduplicated + c.sampledOut + c.sent + c.dropped + c.pending
    }

    static func record(_ r: ExposureRecorder, _ n: Int, from start: Int = 0) {
        for i in start..<(start + n) {
            r.recordExposure(key: "k\(i)", variant: "v", reason: .targetingMatch, contextFingerprint: "fp")
        }
    }

    @Test func classificationFollowsTheOTLPSpecification() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        func classify(_ status: Int, _ retryAfter: String? = nil, _ body: String = "") -> ExposureUploadOutcome {
            ExposureUploadOutcome.classifyOTLP(
                status: status, retryAfterHeader: retryAfter, body: Data(body.utf8), wallNow: now)
        }
        for status in [429, 502, 503, 504] { #expect(classify(status) == .retry(retryAfter: nil)) }
        #expect(classify(503, "7") == .retry(retryAfter: .seconds(7)))
        #expect(classify(429, "Thu, 15 Jan 2027 08:00:05 GMT") != .retry(retryAfter: nil))
        // Everything else is not retried: 500 and 408 too (unlike the SPEC §7 exporter).
        for status in [400, 401, 403, 404, 408, 413, 500, 501, 505, 301] {
            #expect(classify(status) == .rejected(status: status), "\(status)")
        }
        #expect(classify(200) == .delivered)
        #expect(classify(200, nil, "{}") == .delivered)
        #expect(classify(200, nil, "not json") == .delivered)
        #expect(classify(200, nil, #"{"partialSuccess":{}}"#) == .delivered)
        #expect(
            classify(200, nil, #"{"partialSuccess":{"rejectedLogRecords":"3","errorMessage":"bad"}}"#)
                == .partiallyDelivered(rejected: 3, errorMessage: "bad"))
        #expect(
            classify(202, nil, #"{"partialSuccess":{"rejectedLogRecords":5}}"#)
                == .partiallyDelivered(rejected: 5, errorMessage: nil))
        // A warning without rejections.
        #expect(
            classify(200, nil, #"{"partialSuccess":{"errorMessage":"slow down"}}"#)
                == .partiallyDelivered(rejected: 0, errorMessage: "slow down"))
        // The SPEC §7 exporter keeps its rules.
        #expect(
            ExposureUploadOutcome.classify(
                exporter: .halyard, status: 500, retryAfterHeader: nil, body: Data(), wallNow: now)
                == .retry(retryAfter: nil))
    }

    @Test func sendsOTLPToTheEndpointWithTheExporterHeadersOnly() async throws {
        let transport = ScriptedTransport()
        let clock = ManualClock()
        let r = Self.recorder(transport, clock: clock)
        Self.record(r, 3)
        let result = await r.flush()
        #expect(result.sentEvents == 3)
        let request = try #require(transport.requests.first)
        #expect(request.url.absoluteString == "https://otel.example:4318/v1/logs")
        #expect(request.method == "POST")
        #expect(request.headers["Content-Type"] == "application/json")
        #expect(request.headers["Content-Encoding"] == "gzip")
        #expect(request.headers["Authorization"] == "Basic c2VjcmV0")
        #expect(request.headers["X-Tenant"] == "t1")
        #expect(request.headers["Idempotency-Key"] == nil)
        #expect(request.headers["X-Halyard-App-Id"] == nil)
        let json = try Gzip.inflate(request.body, limit: 1 << 20)
        let doc = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        let records =
            ((doc["resourceLogs"] as? [[String: Any]])?.first?["scopeLogs"] as? [[String: Any]])?.first?[
                "logRecords"] as? [[String: Any]]
        #expect(records?.count == 3)
    }

    @Test func atMostOneThousandRecordsPerRequest() async throws {
        let transport = ScriptedTransport()
        let r = Self.recorder(transport, clock: ManualClock(), edit: { $0.batchSize = 5_000 })
        Self.record(r, 2_500)
        _ = await r.flush()
        #expect(transport.requests.count == 3)
        for request in transport.requests {
            let json = try Gzip.inflate(request.body, limit: 8 << 20)
            let count = String(decoding: json, as: UTF8.self).components(separatedBy: #""eventName""#).count - 1
            #expect(count <= 1_000)
        }
        #expect(r.counters.sent == 2_500)
    }

    @Test func retryableStatusesRequeueAndHonourRetryAfterOthersDrop() async throws {
        let transport = ScriptedTransport([
            .response(TransportResponse(status: 503)),
            .response(TransportResponse(status: 429, headers: ["Retry-After": "30"])),
            .failure(.network("reset")),
            .response(TransportResponse(status: 200)),  // the 10 requeued
            .response(TransportResponse(status: 500)),  // not retried under OTLP: dropped
        ])
        let clock = ManualClock()
        let r = Self.recorder(transport, clock: clock)
        Self.record(r, 10)
        var result = await r.flush()
        #expect(result.failedBatches == 1 && r.counters.pending == 10)
        clock.advance(by: try #require(result.retryAfter))
        result = await r.flush()
        // Retry-After: 30 is a floor spread over its window, [30 s, 33 s] (SPEC §5).
        let wait = try #require(result.retryAfter)
        #expect(wait >= .seconds(30) && wait <= .seconds(33), "\(wait)")
        clock.advance(by: wait)
        result = await r.flush()
        #expect(r.counters.pending == 10)
        clock.advance(by: try #require(result.retryAfter))
        result = await r.flush()
        #expect(result.sentEvents == 10)
        Self.record(r, 4, from: 10)
        result = await r.flush()
        #expect(result.droppedEvents == 4)
        let c = r.counters
        #expect(c.sent == 10 && c.dropped == 4 && c.rejected == 4 && c.failed == 4 && c.pending == 0)
        #expect(Self.identityHolds(c))
    }

    @Test func partialSuccessCountsRejectedAndLogsTheMessageOnce() async throws {
        let partial = TransportResponse(
            status: 200,
            body: Data(#"{"partialSuccess":{"rejectedLogRecords":"2","errorMessage":"attribute too long"}}"#.utf8))
        let overclaim = TransportResponse(
            status: 200, body: Data(#"{"partialSuccess":{"rejectedLogRecords":"99"}}"#.utf8))
        let transport = ScriptedTransport([.response(partial), .response(partial), .response(overclaim)])
        let logs = Locked([String]())
        let r = Self.recorder(transport, clock: ManualClock(), log: { line in logs.withLock { $0.append(line) } })
        Self.record(r, 5)
        _ = await r.flush()
        Self.record(r, 5, from: 5)
        _ = await r.flush()
        Self.record(r, 5, from: 10)
        let last = await r.flush()
        #expect(last.sentEvents == 0 && last.droppedEvents == 5)
        let c = r.counters
        #expect(c.recorded == 15)
        #expect(c.sent == 6)  // 3 + 3 + 0
        #expect(c.rejected == 9 && c.dropped == 9)  // 2 + 2 + all 5 (the count is capped at the batch)
        #expect(c.failed == 0)
        #expect(Self.identityHolds(c))
        let lines = logs.withLock { $0 }
        #expect(lines.count == 3)
        #expect(lines.filter { $0.contains("attribute too long") }.count == 1)
        #expect(lines.allSatisfy { !$0.contains("c2VjcmV0") && !$0.contains("control-plane-key") })
    }

    @Test func anInvalidExporterNeverSends() async throws {
        let transport = ScriptedTransport()
        let logs = Locked([String]())
        let r = Self.recorder(
            transport, clock: ManualClock(), log: { line in logs.withLock { $0.append(line) } },
            edit: {
                $0.exporter = .otlp(endpoint: URL(string: "http://collector.example:4318")!, headers: ["A": "secret"])
            })
        Self.record(r, 3)
        let result = await r.flush()
        #expect(transport.requests.isEmpty)
        #expect(result.droppedEvents == 3 && r.counters.rejected == 3)
        #expect(logs.withLock { $0 }.allSatisfy { !$0.contains("secret") })
    }

    @Test func clientCreationRefusesPlainHTTPToANonLoopbackCollector() throws {
        func make(_ endpoint: String) throws(FlagClientError) {
            var options = FlagClientOptions(baseURL: URL(string: "https://flags.example")!, key: "cli-1")
            options.transport = ScriptedTransport()
            options.pollInterval = .zero
            options.maxCachedContexts = 0
            options.exposures.exporter = .otlp(endpoint: URL(string: endpoint)!, headers: ["Authorization": "x"])
            let client = try FlagClient(options: options)
            client.close()
        }
        #expect(throws: FlagClientError.invalidExposureExporter(.insecureHTTPToNonLoopbackHost("collector.example"))) {
            try make("http://collector.example:4318")
        }
        #expect(throws: FlagClientError.invalidExposureExporter(.unsupportedScheme("ftp"))) {
            try make("ftp://collector.example")
        }
        #expect(throws: FlagClientError.invalidExposureExporter(.endpointNotAbsolute)) { try make("/v1/logs") }
        try make("https://collector.example:4318")
        try make("http://127.0.0.1:4318")
        try make("http://localhost:4318")
    }

    @Test func valueIsWrittenOnlyWithoutAVariant() async throws {
        let transport = ScriptedTransport()
        let r = Self.recorder(transport, clock: ManualClock())
        r.recordExposure(
            key: "a", variant: nil, reason: .staticValue, contextFingerprint: "f", value: .double(2.5), errorCode: nil)
        r.recordExposure(
            key: "b", variant: "on", reason: .staticValue, contextFingerprint: "f", value: .bool(true), errorCode: nil)
        _ = await r.flush()
        let request = try #require(transport.requests.first)
        let body = String(decoding: try Gzip.inflate(request.body, limit: 1 << 20), as: UTF8.self)
        #expect(body.contains(#"{"key":"feature_flag.result.value","value":{"doubleValue":2.5}}"#))
        #expect(body.components(separatedBy: "feature_flag.result.value").count == 2)

    }

    // MARK: - Responses (SPEC §13: read up to 4 MiB)

    static func html(_ bytes: Int) -> Data { Data(repeating: UInt8(ascii: "x"), count: bytes) }

    /// Issue 24: a 503 whose body was an HTML page over 64 KiB counted as delivered (the
    /// transport refused the body, and a refused body was taken for a delivery).
    @Test func a503WithALargeBodyIsRetriedNotDelivered() async throws {
        let transport = ScriptedTransport([.response(TransportResponse(status: 503, body: Self.html(100 << 10)))])
        let r = Self.recorder(transport, clock: ManualClock())
        Self.record(r, 4)
        let result = await r.flush()
        #expect(result.sentEvents == 0 && result.failedBatches == 1)
        let c = r.counters
        #expect(c.sent == 0 && c.pending == 4 && c.failed == 1)
        #expect(transport.requests.first?.maxResponseBytes == 4 << 20)
    }

    /// An answer over 4 MiB is a non-retryable failure: failed, its events dropped, never sent.
    @Test func anAnswerOverFourMiBFailsAndDropsTheBatch() async throws {
        let transport = ScriptedTransport([.response(TransportResponse(status: 200, body: Self.html((4 << 20) + 1)))])
        let logs = Locked([String]())
        let r = Self.recorder(transport, clock: ManualClock(), log: { line in logs.withLock { $0.append(line) } })
        Self.record(r, 3)
        let result = await r.flush()
        #expect(result.sentEvents == 0 && result.droppedEvents == 3 && result.failedBatches == 1)
        #expect(result.retryAfter == nil)
        let c = r.counters
        #expect(c.sent == 0 && c.dropped == 3 && c.failed == 1 && c.rejected == 0 && c.pending == 0)
        #expect(Self.identityHolds(c))
        #expect(transport.requests.count == 1)
        #expect(logs.withLock { $0 }.contains { $0.contains("over 4 MiB") })
    }

    /// Issue 24: a partial success with a long message (over the old 64 KiB limit) lost its
    /// rejected count.
    @Test func aLongPartialSuccessMessageKeepsItsRejectedCount() async throws {
        let message = String(repeating: "m", count: 100 << 10)
        let partial = TransportResponse(
            status: 200,
            body: Data(#"{"partialSuccess":{"rejectedLogRecords":"3","errorMessage":"\#(message)"}}"#.utf8))
        let transport = ScriptedTransport([.response(partial)])
        let logs = Locked([String]())
        let r = Self.recorder(transport, clock: ManualClock(), log: { line in logs.withLock { $0.append(line) } })
        Self.record(r, 5)
        _ = await r.flush()
        let c = r.counters
        #expect(c.sent == 2 && c.rejected == 3 && c.dropped == 3)
        #expect(Self.identityHolds(c))
        // The message is logged cut short, never whole.
        #expect(logs.withLock { $0 }.allSatisfy { $0.count < 1_000 })
    }

    /// A rejected batch's `google.rpc.Status` message is logged once per status code.
    @Test func aRejectionsStatusMessageIsLoggedOncePerStatus() async throws {
        func status(_ code: Int, _ message: String) -> ScriptedTransport.Answer {
            .response(TransportResponse(status: code, body: Data(#"{"code":3,"message":"\#(message)"}"#.utf8)))
        }
        let transport = ScriptedTransport([
            status(400, "invalid attribute"), status(400, "invalid attribute"), status(401, "no tenant"),
            status(400, "another message"),
        ])
        let logs = Locked([String]())
        let r = Self.recorder(transport, clock: ManualClock(), log: { line in logs.withLock { $0.append(line) } })
        for i in 0..<4 {
            Self.record(r, 1, from: i)
            _ = await r.flush()
        }
        let lines = logs.withLock { $0 }
        #expect(lines.count == 4)
        #expect(lines.filter { $0.contains("invalid attribute") }.count == 1)
        #expect(lines.filter { $0.contains("no tenant") }.count == 1)
        #expect(!lines.contains { $0.contains("another message") })
        #expect(lines.allSatisfy { $0.contains("rejected with HTTP 40") })
        #expect(r.counters.rejected == 4)
    }

    /// `feature_flag.version` and `feature_flag.set.id` come from the served flag's metadata.
    @Test func metadataVersionAndFlagSetBecomeAttributes() async throws {
        let transport = ScriptedTransport()
        let r = Self.recorder(transport, clock: ManualClock())
        r.recordExposure(
            key: "a", variant: "on", reason: .split, contextFingerprint: "f", value: nil, errorCode: nil,
            metadata: ["version": .number(7), "flagSetId": .string("checkout/prod"), "other": .bool(true)])
        r.recordExposure(
            key: "b", variant: "on", reason: .split, contextFingerprint: "f", value: nil, errorCode: nil,
            metadata: ["version": .string("v1.2")])
        _ = await r.flush()
        let request = try #require(transport.requests.first)
        let body = String(decoding: try Gzip.inflate(request.body, limit: 1 << 20), as: UTF8.self)
        #expect(
            body.contains(
                #"{"key":"feature_flag.version","value":{"stringValue":"7"}},{"key":"feature_flag.set.id","value":{"stringValue":"checkout/prod"}}"#
            ))
        #expect(body.contains(#"{"key":"feature_flag.version","value":{"stringValue":"v1.2"}}"#))
        #expect(body.components(separatedBy: "feature_flag.set.id").count == 2)
        #expect(!body.contains("other"))
    }

    /// docs/exposures.md states the size of a queued event (the memory bound of the buffer).
    @Test func aQueuedEventIsTheDocumentedSize() {
        #expect(MemoryLayout<ExposureEvent>.size == 136)
        #expect(MemoryLayout<ExposureEvent>.stride == 136)
    }
}
