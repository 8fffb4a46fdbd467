import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// The status policy and every fault against the loopback control plane (server.py), through
/// the real transports (the wire and fault tests run against each). Time-based behaviour runs on a ManualClock: the tests move time
/// and assert on order and counts, never on wall-clock durations. Every wait is bounded (``Wait``):
/// a broken status policy fails here with a message instead of hanging the run.
@Suite(.serialized) struct RefreshIntegrationTests {
    // MARK: - Wire

    @Test(arguments: TransportKind.available)
    func requestsFollowTheOFREPWireFormat(kind: TransportKind) async throws {
        let h = try await SyncHarness.make(
            context: EvaluationContext(targetingKey: "u9", attributes: ["plan": "pro"]), transport: kind)
        defer { h.close() }
        try await h.started()
        #expect(h.client.status == .ready)
        #expect(h.client.bool("a", default: false))
        try await h.client.refreshOrFail()
        let requests = try await h.requests()
        try #require(
            requests.count == 2,
            "requests: \(requests.map { "\($0.path) If-None-Match=\($0.header("If-None-Match") ?? "-")" })")
        let first = requests[0]
        #expect(first.path == "/ofrep/v1/evaluate/flags")
        #expect(first.header("Authorization") == "Bearer cli-integration-key")
        #expect(first.header("Content-Type") == "application/json")
        #expect(first.header("Accept-Encoding") == "gzip")
        #expect(first.header("User-Agent")?.hasPrefix("Halyard-Swift/") == true)
        #expect(first.header("X-Halyard-App-Id") == "app-1")
        #expect(first.header("X-Halyard-Install-Id") == h.installID)
        #expect(first.header("If-None-Match") == nil)
        #expect(first.body == #"{"context":{"kind":"user","plan":"pro","targetingKey":"u9"}}"#)
        #expect(requests[1].header("If-None-Match") != nil)
        #expect(h.client.stats.sync.notModified == 1)
        #expect(h.client.stats.sync.responsesByStatus == [200: 1, 304: 1])
    }

    @Test func identifyFetchesTheNewContextWithoutIfNoneMatch() async throws {
        let h = try await SyncHarness.make()
        defer { h.close() }
        let recorder = EventRecorder(h.client)
        defer { recorder.stop() }
        try await h.started()
        #expect(h.client.bool("a", default: false))
        #expect(
            try await Wait.result("identify(u1)") { await h.client.identify(EvaluationContext(targetingKey: "u1")) })
        #expect(h.client.bool("a", default: true) == false)
        #expect(h.client.string("only-u1", default: "") == "x")
        #expect(h.client.status == .ready)
        let requests = try await h.requests()
        #expect(requests.last?.header("If-None-Match") == nil)
        try await Wait.until("a contextChanged event") { recorder.all.contains(.contextChanged) }
        let events = recorder.all
        // Exactly the keys whose result changed: a (value/variant/reason) and only-u1 (added).
        #expect(events.compactMap(\.changedKeys).last == ["a", "only-u1"])
        let tail = events.filter { $0 == .reconciling || $0 == .contextChanged || $0.changedKeys != nil }
        #expect(tail.suffix(3) == [.reconciling, .configurationChanged(["a", "only-u1"]), .contextChanged])
    }

    @Test(arguments: TransportKind.available)
    func gzipBodiesAreDecoded(kind: TransportKind) async throws {
        let h = try await SyncHarness.make(transport: kind)
        defer { h.close() }
        try await h.server.script([["action": "gzip"]])
        try await h.client.refreshOrFail()
        #expect(h.client.status == .ready)
        #expect(h.client.int("n", default: 0) == 3)
    }

    // MARK: - Status policy

    @Test func status400IsAnErrorEventAndKeepsServing() async throws {
        let h = try await SyncHarness.make()
        defer { h.close() }
        try await h.started()
        let recorder = EventRecorder(h.client)
        defer { recorder.stop() }
        try await h.server.script([["action": "status", "status": 400]])
        try await h.client.refreshOrFail()
        #expect(h.client.status == .error)
        #expect(h.client.bool("a", default: false))
        try await Wait.until("an INVALID_CONTEXT error event") {
            recorder.all.contains { $0.errorCode == .invalidContext }
        }
        try await h.client.refreshOrFail()
        #expect(h.client.status == .ready)
    }

    @Test func status401AtStartIsFatalAndStopsBackgroundRefresh() async throws {
        let h = try await SyncHarness.make(startFaults: [["action": "status", "status": 401]]) {
            $0.pollInterval = .seconds(30)
        }
        defer { h.close() }
        try await Wait.until("the start-up fetch to end") {
            h.transport.exchanges.count == 1 && h.client.status != .notReady
        }
        #expect(h.client.status == .fatal)
        #expect(h.client.boolDetail("a", default: false).errorCode == .providerFatal)
        // Fatal: ready answers false at once, without waiting on the (manual) clock.
        #expect(
            try await Wait.result("ready(timeout:) on a fatal client") { await h.client.ready(timeout: .seconds(5)) }
                == false)
        // Nothing is armed on the clock, so no amount of time can send a request...
        #expect(try h.engine.nextWake == nil)
        #expect(h.clock.sleeperCount == 0, "a timer is armed after 401")
        h.clock.advance(by: .seconds(3600))
        // ...and a context change resumes: its request is the second the server ever sees.
        #expect(
            try await Wait.result("identify(u1) after 401") {
                await h.client.identify(EvaluationContext(targetingKey: "u1"))
            })
        #expect(h.client.status == .ready)
        let requests = try await h.requests()
        #expect(requests.map(\.fault) == ["status", nil])
        #expect(requests.last?.body.contains(#""targetingKey":"u1""#) == true)
    }

    /// A key change's fetch goes without `If-None-Match`; a 304 to it is a bad answer, and
    /// `setKey` still returns (the request is over).
    @Test func unsolicited304StillEndsTheCall() async throws {
        let h = try await SyncHarness.make()
        defer { h.close() }
        try await h.started()
        try await h.server.script([["action": "status", "status": 304]])
        let client = h.client
        try await Wait.result("setKey answered by an unsolicited 304") { try? await client.setKey("key-two") }
        #expect(h.client.status == .ready)  // the values are confirmed, a failed fetch is not stale yet
        #expect(try h.engine.stats.consecutiveFailures == 1)
    }

    @Test func status403WhileServingIsAnErrorAndKeepsValues() async throws {
        let h = try await SyncHarness.make { $0.pollInterval = .seconds(30) }
        defer { h.close() }
        try await h.started()
        try await h.server.script([["action": "status", "status": 403]])
        try await Wait.advance(h.clock, by: .seconds(60), "the poll timer")  // the poll fires
        try await Wait.until("status .error after 403") { h.client.status == .error }
        #expect(h.client.bool("a", default: false))
        #expect(try h.engine.nextWake == nil)
        try await Wait.until("the poll's exchange to complete") { h.transport.inFlight == 0 }
        #expect(h.clock.sleeperCount == 0, "a timer is armed after 403")
        h.clock.advance(by: .seconds(3600))
        // An explicit refresh still sends (the stop is on background refresh only): it is the
        // third request, so the hour of manual time sent nothing.
        try await h.client.refreshOrFail()
        #expect(try await h.requests().count == 3)
        #expect(h.transport.exchanges.map(\.status).prefix(2) == [200, 403])
    }

    @Test(arguments: ["delay-seconds", "http-date", "iso-8601"])
    func status429BlocksRequestsUntilRetryAfter(format: String) async throws {
        let h = try await SyncHarness.make()
        defer { h.close() }
        try await h.started()
        let due = h.clock.wallNow.addingTimeInterval(120)
        let header: String
        switch format {
        case "delay-seconds": header = "120"
        case "http-date":
            let f = DateFormatter()
            f.locale = Locale(identifier: "en_US_POSIX")
            f.timeZone = TimeZone(identifier: "GMT")
            f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
            header = f.string(from: due)
        default:
            header = ISO8601DateFormatter().string(from: due)
        }
        // The first refresh joins the start-up fetch, or (on a loaded machine, when that fetch
        // already finished) sends a second request: count from here.
        let before = h.transport.exchanges.count
        try await h.server.script([["action": "status", "status": 429, "headers": ["Retry-After": header]]])
        try await h.client.refreshOrFail()
        let t429 = h.clock.monotonicNow
        #expect(h.client.bool("a", default: false))  // keeps serving
        for _ in 0..<4 {
            h.clock.advance(by: .seconds(29))
            try await h.client.refreshOrFail()
            try await h.client.refreshIfStaleOrFail()
        }
        #expect(h.clock.monotonicNow - t429 == .seconds(116))
        #expect(h.transport.exchanges.count == before + 1)
        // The retry falls in the Retry-After's window, [120 s, 132 s]: past it, it has gone.
        h.clock.advance(by: .seconds(17))
        try await h.client.refreshOrFail()
        try await Wait.until("the request after Retry-After") { h.transport.exchanges.count == before + 2 }
        let last = try #require(h.transport.exchanges.last)
        #expect(last.sentAt >= t429 + .seconds(120))
        #expect(h.client.status == .ready)
    }

    @Test func serverErrorsKeepServingAndBackOff() async throws {
        let h = try await SyncHarness.make()
        defer { h.close() }
        try await h.started()
        try await h.server.script([["action": "status", "status": 503, "count": 3]])
        var failureTimes: [Duration] = []
        for _ in 0..<3 {
            try await h.client.refreshOrFail()
            failureTimes.append(h.clock.monotonicNow)
            #expect(h.client.bool("a", default: false))
            #expect(h.client.status == .ready)
            let wake = try #require(try h.engine.nextWake)
            #expect(wake - h.clock.monotonicNow > .zero)  // full jitter from the first retry
            #expect(wake - h.clock.monotonicNow <= .seconds(4))
            try await h.client.refreshOrFail()  // backing off: nothing sent
            h.clock.advance(by: wake - h.clock.monotonicNow)
        }
        try await h.client.refreshOrFail()
        try await Wait.until("a successful fetch after the backoff") { h.client.stats.sync.consecutiveFailures == 0 }
        #expect(h.client.stats.sync.responsesByStatus[503] == 3)
        #expect(h.client.stats.sync.deferredRefreshes >= 3)
    }

    @Test func failedStartWithNothingConfirmedIsAnError() async throws {
        let h = try await SyncHarness.make(startFaults: [["action": "status", "status": 500]])
        defer { h.close() }
        try await h.started()
        #expect(h.client.status == .error)
        #expect(h.client.boolDetail("a", default: false).errorCode == .providerNotReady)
    }

    // MARK: - Faults

    /// Runs one fault after a good start and checks the values are kept, never replaced.
    private func expectFaultKeepsValues(
        _ fault: [String: Any], timeout: Duration = .seconds(2), kind: TransportKind,
        check: (SyncStats) -> Bool
    ) async throws {
        let h = try await SyncHarness.make(transport: kind) {
            $0.requestTimeout = timeout; $0.maxResponseBytes = 64 * 1024
        }
        defer { h.close() }
        try await h.started()
        #expect(h.client.status == .ready)
        let before = h.client.store.generation
        try await h.server.script([fault])
        h.clock.advance(by: .seconds(30))
        try await h.client.refreshOrFail()
        let stats = h.client.stats.sync
        #expect(check(stats), "fault \(fault): \(stats)")
        #expect(h.client.store.generation == before)  // nothing applied
        #expect(h.client.bool("a", default: false))
        #expect(h.client.int("n", default: 0) == 3)
        #expect(stats.consecutiveFailures == 1)
        // Recovery: a fetch after the backoff applies normally (libcurl may need one more attempt
        // after a reset).
        for _ in 0..<3 where h.client.stats.sync.consecutiveFailures > 0 {
            h.clock.advance(by: .seconds(400))
            try await h.client.refreshOrFail()
        }
        #expect(h.client.stats.sync.consecutiveFailures == 0)
        #expect(h.client.status == .ready)
    }

    @Test(arguments: TransportKind.available)
    func delayBeyondTheTimeoutIsATimeout(kind: TransportKind) async throws {
        try await expectFaultKeepsValues(["action": "delay", "seconds": 2.5], timeout: .seconds(1), kind: kind) {
            $0.timeouts == 1
        }
    }

    @Test(arguments: TransportKind.available)
    func slowDripBeyondTheTimeoutIsATimeout(kind: TransportKind) async throws {
        try await expectFaultKeepsValues(
            ["action": "drip", "interval": 0.1, "chunks": 25], timeout: .seconds(1), kind: kind
        ) {
            $0.timeouts == 1
        }
    }

    @Test(arguments: TransportKind.available)
    func connectionResetIsANetworkError(kind: TransportKind) async throws {
        // libcurl may retry a reset keep-alive request by itself and stall until the timeout
        // (URLSession); CurlTransport, which talks to libcurl directly, recovers from one reset of
        // a reused connection that way: the fault resets that retry too (docs/protocol.md,
        // "Transports").
        let count = kind == .curl ? 2 : 1
        try await expectFaultKeepsValues(["action": "reset", "count": count], timeout: .seconds(1), kind: kind) {
            $0.networkErrors + $0.timeouts == 1
        }
    }

    @Test(arguments: TransportKind.available)
    func truncatedBodyIsNeverApplied(kind: TransportKind) async throws {
        try await expectFaultKeepsValues(["action": "truncate", "bytes": 20], timeout: .seconds(1), kind: kind) {
            $0.networkErrors + $0.timeouts + $0.invalidBodies == 1
        }
    }

    @Test(arguments: TransportKind.available)
    func malformedBodyIsNeverApplied(kind: TransportKind) async throws {
        try await expectFaultKeepsValues(["action": "malformed"], kind: kind) { $0.invalidBodies == 1 }
        try await expectFaultKeepsValues(["action": "malformed", "body": "{\"flags\": {}}"], kind: kind) {
            $0.invalidBodies == 1
        }
        try await expectFaultKeepsValues(["action": "malformed", "body": "<html>oops</html>"], kind: kind) {
            $0.invalidBodies == 1
        }
    }

    @Test(arguments: TransportKind.available)
    func oversizedBodyWithContentLengthIsRefused(kind: TransportKind) async throws {
        try await expectFaultKeepsValues(["action": "oversize", "bytes": 200_000], kind: kind) {
            $0.oversizedResponses == 1
        }
    }

    @Test(arguments: TransportKind.available)
    func oversizedBodyWithoutContentLengthIsRefused(kind: TransportKind) async throws {
        try await expectFaultKeepsValues(["action": "oversize", "bytes": 200_000, "declareLength": false], kind: kind) {
            $0.oversizedResponses == 1
        }
    }

    // MARK: - Exposure endpoint pass-through

    @Test(arguments: TransportKind.available)
    func exposureRequestsReachTheExposureModuleAndPathFaultsApply(kind: TransportKind) async throws {
        let server = try await ControlPlaneServer.launched()
        defer { server.stop() }
        try await server.script([["path": "/v1/exposures", "action": "status", "status": 503]])
        let document =
            #"{"events":[{"contextFingerprint":"f","count":1,"creationDate":1800000000,"key":"a","kind":"exposure","reason":"STATIC","variant":null}],"meta":{"appId":"app","installId":"i","sdk":"Halyard","version":"0.1.0"}}"#
        let request = TransportRequest(
            url: server.baseURL.appendingPathComponent("v1/exposures"),
            headers: ["Content-Type": "application/json", "Content-Encoding": "gzip", "Idempotency-Key": "batch-1"],
            body: Gzip.compress(Data(document.utf8)), timeout: .seconds(5))
        let transport = kind.make()
        let faulted = try await transport.send(request)
        #expect(faulted.status == 503)
        let accepted = try await transport.send(request)
        #expect(accepted.status == 202)
        let replay = try await transport.send(request)
        #expect(replay.status == 200)
        // The flag endpoint is not affected by a path-filtered fault.
        let requests = try await server.requests()
        #expect(requests.map(\.fault) == ["status", nil, nil])
    }

    // MARK: - Coalescing and steady state

    @Test func tenThousandConcurrentRefreshesSendOneRequest() async throws {
        let h = try await SyncHarness.make()
        defer { h.close() }
        try await h.started()
        try await h.server.script([["action": "delay", "seconds": 0.3]])
        let coalescedBefore = h.client.stats.sync.coalescedRefreshes
        try await Wait.result("10,000 concurrent refresh() calls", seconds: 60) {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<10_000 {
                    group.addTask { await h.client.refresh() }
                }
            }
        }
        #expect(h.transport.exchanges.count == 2)
        #expect(try await h.requests().count == 2)
        #expect(h.client.stats.sync.coalescedRefreshes - coalescedBefore == 9_999)
    }

    @Test func steadyStatePollsOncePerIntervalWith304() async throws {
        let h = try await SyncHarness.make { $0.pollInterval = .seconds(30) }
        defer { h.close() }
        let engine = try h.engine
        try await Wait.until("ready with a poll armed") { h.client.status == .ready && engine.nextWake != nil }
        for round in 1...10 {
            let wake = try #require(engine.nextWake)
            let delay = wake - h.clock.monotonicNow
            #expect(delay >= .seconds(27) && delay <= .seconds(33))
            try await Wait.advance(h.clock, by: delay, "poll timer \(round)")
            try await Wait.until("poll \(round) to complete") {
                h.transport.exchanges.count == round + 1 && h.transport.inFlight == 0
            }
            try await Wait.until("the poll after \(round) to be armed") {
                engine.nextWake.map { $0 > h.clock.monotonicNow } ?? false
            }
        }
        let statuses = h.transport.exchanges.map(\.status)
        #expect(statuses == [200] + Array(repeating: 304, count: 10))
        // A change on the server is picked up by the next poll.
        try await h.server.setFlags(["default": [["key": "a", "value": false, "reason": "STATIC"]]])
        let next = try #require(engine.nextWake)
        try await Wait.advance(h.clock, by: next - h.clock.monotonicNow, "the next poll timer")
        try await Wait.until("the changed value") { !h.client.bool("a", default: true) }
    }
}
