import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// A transport that answers from a script (default 202) and keeps every request.
final class ScriptedExposureTransport: FlagTransport, Sendable {
    enum Reply: Sendable {
        case status(Int, [String: String])
        case failure(TransportError)
    }
    private let state = Locked<(script: [Reply], requests: [TransportRequest])>(([], []))

    func enqueue(_ replies: Reply...) { state.withLock { $0.script += replies } }
    var requests: [TransportRequest] { state.withLock { $0.requests } }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let reply = state.withLock { s -> Reply in
            s.requests.append(request)
            return s.script.isEmpty ? .status(202, [:]) : s.script.removeFirst()
        }
        switch reply {
        case .status(let code, let headers): return TransportResponse(status: code, headers: headers)
        case .failure(let error): throw error
        }
    }

    /// The events of one upload, decoded by the independent path (zlib inflate + Foundation JSON).
    static func events(of request: TransportRequest) -> [[String: Any]] {
        guard let json = try? Gzip.inflate([UInt8](request.body)),
            let object = try? JSONSerialization.jsonObject(with: Data(json)) as? [String: Any],
            let events = object["events"] as? [[String: Any]]
        else { return [] }
        return events
    }
}

@Suite struct ExposureRecorderTests {
    static let base = URL(string: "http://127.0.0.1:9/")!
    static let meta = ExposureMeta(sdk: "halyard-swift", version: "0.1.0", appId: "app-1", installId: "inst-1")
    static let fp = String(repeating: "0f", count: 20)

    static func recorder(
        _ transport: ScriptedExposureTransport, clock: ManualClock = ManualClock(),
        ticker: Bool = false, logSink: Locked<[String]>? = nil,
        _ edit: (inout ExposureOptions) -> Void = { _ in }
    ) -> ExposureRecorder {
        var o = ExposureOptions()
        o.initialBackoff = .seconds(1)
        o.maxBackoff = .seconds(8)
        edit(&o)
        var log: (@Sendable (String) -> Void)?
        if let logSink {
            log = { @Sendable (line: String) in logSink.withLock { $0.append(line) } }
        }
        return ExposureRecorder(
            options: o, clock: clock, transport: transport, endpoint: base, meta: meta,
            headers: ["Authorization": "Bearer secret"], log: log, startsTicker: ticker)
    }

    static func identityHolds(_ c: ExposureStats) -> Bool {
        c.recorded == c.deduplicated + c.sampledOut + c.sent + c.dropped + c.pending
    }

    @Test func deduplicatesPerWindowOnTheInjectedClock() async {
        let clock = ManualClock()
        let t = ScriptedExposureTransport()
        let r = Self.recorder(t, clock: clock)
        #expect(r.coarseNow() == 0)
        #expect(r.recordExposure(key: "a", variant: "on", reason: .targetingMatch, contextFingerprint: Self.fp) == 300)
        clock.advance(by: .seconds(299))
        #expect(r.recordExposure(key: "a", variant: "on", reason: .targetingMatch, contextFingerprint: Self.fp) == 300)
        #expect(r.coarseNow() == 299)  // the slow path refreshes the coarse clock
        // A new context (another fingerprint) is a new exposure; so is a new variant.
        #expect(r.recordExposure(key: "a", variant: "on", reason: .targetingMatch, contextFingerprint: "other") == 599)
        #expect(r.recordExposure(key: "a", variant: "off", reason: .targetingMatch, contextFingerprint: Self.fp) == 599)
        clock.advance(by: .milliseconds(1_000))
        #expect(r.recordExposure(key: "a", variant: "on", reason: .targetingMatch, contextFingerprint: Self.fp) == 600)
        let c = r.counters
        #expect(c.recorded == 5 && c.deduplicated == 1 && c.pending == 4)
        let result = await r.flush()
        #expect(result.sentEvents == 4 && result.sentBatches == 1 && result.pendingEvents == 0)
        #expect(Self.identityHolds(r.counters))
    }

    @Test func uploadCarriesTheSpecifiedBodyAndHeaders() async throws {
        let clock = ManualClock(wallStart: Date(timeIntervalSince1970: 1_800_000_000))
        let t = ScriptedExposureTransport()
        let r = Self.recorder(t, clock: clock) { $0.path = "/v1/exposures" }
        clock.advance(by: .seconds(12))
        r.recordExposure(key: "banner", variant: nil, reason: .defaultValue, contextFingerprint: Self.fp)
        r.recordExposure(
            key: "checkout", variant: "blue", reason: EvaluationReason(rawValue: "EXPERIMENT"),
            contextFingerprint: Self.fp)
        _ = await r.flush()
        let request = try #require(t.requests.first)
        #expect(request.method == "POST")
        #expect(request.url.absoluteString == "http://127.0.0.1:9/v1/exposures")
        #expect(request.headers["Content-Encoding"] == "gzip")
        #expect(request.headers["Content-Type"] == "application/json")
        #expect(request.headers["Authorization"] == "Bearer secret")
        #expect((request.headers["Idempotency-Key"] ?? "").count > 4)
        let json = try #require(try? Gzip.inflate([UInt8](request.body)))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json)) as? [String: Any])
        let meta = try #require(object["meta"] as? [String: String])
        #expect(meta == ["sdk": "halyard-swift", "version": "0.1.0", "appId": "app-1", "installId": "inst-1"])
        let events = try #require(object["events"] as? [[String: Any]])
        #expect(events.count == 2)
        #expect(events[0]["kind"] as? String == "exposure")
        #expect(events[0]["key"] as? String == "banner")
        #expect(events[0]["variant"] is NSNull)
        #expect(events[0]["reason"] as? String == "DEFAULT")
        #expect(events[0]["contextFingerprint"] as? String == Self.fp)
        #expect((events[0]["creationDate"] as? NSNumber)?.int64Value == 1_800_000_012)
        #expect((events[0]["count"] as? NSNumber)?.intValue == 1)
        #expect(events[1]["variant"] as? String == "blue")
        #expect(events[1]["reason"] as? String == "EXPERIMENT")
        #expect(
            Set(events[0].keys) == ["kind", "key", "variant", "reason", "contextFingerprint", "creationDate", "count"])
    }

    @Test func retriesReuseTheIdempotencyKeyAfterTheBackoff() async {
        let clock = ManualClock()
        let t = ScriptedExposureTransport()
        let r = Self.recorder(t, clock: clock)
        t.enqueue(.status(503, [:]), .failure(.timedOut))
        for i in 0..<3 { r.recordExposure(key: "k\(i)", variant: "v", reason: .split, contextFingerprint: Self.fp) }
        let first = await r.flush()
        #expect(first.sentEvents == 0 && first.failedBatches == 1 && first.pendingEvents == 3)
        let wait = first.retryAfter ?? .zero
        #expect(wait <= .seconds(1))
        // During the backoff nothing is sent.
        if wait > .zero {
            let deferred = await r.flush()
            #expect(deferred.failedBatches == 0 && deferred.retryAfter != nil)
            #expect(t.requests.count == 1)
        }
        clock.advance(by: .seconds(1))
        let second = await r.flush()  // times out: second failure, backoff up to 2 s
        #expect(second.failedBatches == 1)
        #expect((second.retryAfter ?? .zero) <= .seconds(2))
        clock.advance(by: .seconds(2))
        let third = await r.flush()
        #expect(third.sentEvents == 3 && third.sentBatches == 1)
        let keys = t.requests.map { $0.headers["Idempotency-Key"] }
        #expect(keys.count == 3 && Set(keys).count == 1)
        let c = r.counters
        #expect(c.sent == 3 && c.failed == 2 && c.pending == 0 && Self.identityHolds(c))
    }

    @Test func honoursRetryAfterDatesOnTheInjectedWallClock() async {
        let clock = ManualClock(wallStart: Date(timeIntervalSince1970: 1_445_412_400))  // 07:26:40 GMT
        let t = ScriptedExposureTransport()
        let r = Self.recorder(t, clock: clock)
        t.enqueue(.status(429, ["Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"]))
        r.recordExposure(key: "a", variant: "v", reason: .split, contextFingerprint: Self.fp)
        let first = await r.flush()
        // 80 s to the date, spread over its window [80 s, 88 s].
        let wait = first.retryAfter ?? .zero
        #expect(wait >= .seconds(80) && wait <= .seconds(88), "\(wait)")
        clock.advance(by: .seconds(79))
        _ = await r.flush()
        #expect(t.requests.count == 1)
        clock.advance(by: .seconds(9))
        let last = await r.flush()
        #expect(last.sentEvents == 1 && t.requests.count == 2)
    }

    @Test func nonRetryableStatusDropsTheBatchAndLogsWithoutSecrets() async {
        let logged = Locked<[String]>([])
        let t = ScriptedExposureTransport()
        let r = Self.recorder(t, logSink: logged) { $0.batchSize = 2 }
        t.enqueue(.status(400, [:]))
        for i in 0..<3 { r.recordExposure(key: "k\(i)", variant: "v", reason: .split, contextFingerprint: Self.fp) }
        let result = await r.flush()
        #expect(result.droppedEvents == 2 && result.sentEvents == 1 && result.failedBatches == 1)
        let c = r.counters
        #expect(c.dropped == 2 && c.rejected == 2 && c.sent == 1 && Self.identityHolds(c))
        let lines = logged.value
        #expect(lines.count == 1 && lines[0].contains("400") && !lines[0].contains("secret"))
    }

    @Test func reachingTheBatchSizeStartsAnUpload() async throws {
        let t = ScriptedExposureTransport()
        let r = Self.recorder(t) { $0.batchSize = 5 }
        for i in 0..<4 { r.recordExposure(key: "k\(i)", variant: "v", reason: .split, contextFingerprint: Self.fp) }
        r.recordExposure(key: "k4", variant: "v", reason: .split, contextFingerprint: Self.fp)
        try await Wait.until("the automatic upload") { r.counters.sent == 5 }
        // One upload of all five: none started before the fifth (no ticker, no flush here).
        #expect(t.requests.count == 1)
        #expect(t.requests.map { ScriptedExposureTransport.events(of: $0).count } == [5])
    }

    @Test func tickerAdvancesCoarseTimeAndFlushesPeriodically() async throws {
        let clock = ManualClock()
        let t = ScriptedExposureTransport()
        let r = Self.recorder(t, clock: clock, ticker: true) { $0.flushInterval = .seconds(5) }
        r.recordExposure(key: "a", variant: "v", reason: .split, contextFingerprint: Self.fp)
        for second in 1...4 {
            try await Wait.advance(clock, by: .seconds(1), "the ticker before second \(second)")
        }
        try await Wait.until("the ticker to sleep after second 4") { clock.sleeperCount == 1 }
        #expect(r.coarseNow() == 4)
        // The marker: an event recorded now goes out in the same upload as "a" unless an
        // upload already started before the flush interval.
        r.recordExposure(key: "b", variant: "v", reason: .split, contextFingerprint: Self.fp)
        clock.advance(by: .seconds(1))
        try await Wait.until("the periodic flush") { r.counters.sent == 2 }
        #expect(t.requests.map { ScriptedExposureTransport.events(of: $0).count } == [2])
        #expect(r.coarseNow() == 5)
        r.close()
        try await Wait.until("the ticker to stop") { clock.sleeperCount == 0 }
    }

    @Test func coarseClockNeverMovesBack() {
        let c = ExposureCoarseClock()
        #expect(c.advance(to: 10) == 10)
        #expect(c.advance(to: 3) == 10)
        #expect(c.now() == 10)
    }

    @Test func closeFlushesDetachedAndThenRecordsNothing() async throws {
        let t = ScriptedExposureTransport()
        let r = Self.recorder(t)
        for i in 0..<3 { r.recordExposure(key: "k\(i)", variant: "v", reason: .split, contextFingerprint: Self.fp) }
        r.close()
        r.close()
        #expect(r.recordExposure(key: "late", variant: "v", reason: .split, contextFingerprint: Self.fp) == .max)
        let final = try await Wait.result("the final flush") { await r.waitUntilClosed() }
        #expect(final?.sentEvents == 3)
        let c = r.counters
        #expect(c.recorded == 3 && c.sent == 3 && Self.identityHolds(c))
        #expect(t.requests.count == 1)
    }

    @Test func closeCountsWhatTheFinalFlushCouldNotSendAsDropped() async throws {
        let clock = ManualClock()
        let t = ScriptedExposureTransport()
        let r = Self.recorder(t, clock: clock)
        t.enqueue(.status(500, [:]), .failure(.network("reset")))
        for i in 0..<3 { r.recordExposure(key: "k\(i)", variant: "v", reason: .split, contextFingerprint: Self.fp) }
        _ = await r.flush()  // fails; backoff
        r.close()  // the final flush ignores the backoff, fails once more
        let final = try await Wait.result("the final flush") { await r.waitUntilClosed() }
        #expect(final?.droppedEvents == 3)
        let c = r.counters
        #expect(c.dropped == 3 && c.pending == 0 && c.failed == 2 && Self.identityHolds(c))
        #expect(t.requests.count == 2)
    }

    @Test func disabledAutomaticRecordingStillRecordsExplicitCalls() async {
        let t = ScriptedExposureTransport()
        let r = Self.recorder(t) { $0.enabled = false }
        #expect(!r.isEnabled)
        r.recordExposure(key: "a", variant: nil, reason: .staticValue, contextFingerprint: Self.fp)
        #expect(await r.flush().sentEvents == 1)
    }

    /// Starts `count` threads that run `body` at once (released together) and waits for all
    /// (at most 60 s).
    static func runThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) throws {
        let group = DispatchGroup()
        let start = DispatchSemaphore(value: 0)
        for index in 0..<count {
            group.enter()
            let worker = Thread {
                start.wait()
                body(index)
                group.leave()
            }
            worker.start()
        }
        for _ in 0..<count { start.signal() }
        try Wait.blocking(group, "\(count) recording threads", seconds: 60)
    }

    @Test func sixtyFourThreadsRecordingFirstExposuresLoseNothing() async throws {
        let threads = 64, perThread = 500
        let t = ScriptedExposureTransport()
        let r = Self.recorder(t) {
            $0.capacity = threads * perThread; $0.batchSize = 1_000
        }
        // Uploads may start while the threads run (batch size reached); all must add up.
        try Self.runThreads(threads) { thread in
            for i in 0..<perThread {
                r.recordExposure(key: "flag-\(i)", variant: "v", reason: .split, contextFingerprint: "ctx-\(thread)")
            }
        }
        _ = await r.flush()
        try await Wait.until("every event to be sent") { r.counters.pending == 0 }
        let c = r.counters
        #expect(c.recorded == threads * perThread)
        #expect(c.sent == threads * perThread && c.deduplicated == 0 && c.dropped == 0)
        var seen = Set<String>()
        var total = 0
        for request in t.requests {
            for event in ScriptedExposureTransport.events(of: request) {
                total += 1
                seen.insert("\(event["contextFingerprint"] as? String ?? "?")|\(event["key"] as? String ?? "?")")
            }
            #expect(ScriptedExposureTransport.events(of: request).count <= 1_000)
        }
        #expect(total == threads * perThread)  // no duplicates
        #expect(seen.count == threads * perThread)  // none lost
    }

    /// Issue 14: an answer refused for its size (the transport gives no status) is not a retry:
    /// the batch is not resent forever. Issue 24 (SPEC §13): nor is it a delivery — nothing says
    /// the batch arrived — it is a failure that drops the batch.
    @Test func anOversizedAnswerIsAFailureThatDropsTheBatch() async {
        let transport = ScriptedExposureTransport()
        transport.enqueue(.failure(.responseTooLarge(limit: 4 << 20)))
        let r = Self.recorder(transport)
        r.recordExposure(key: "k", variant: "on", reason: .split, contextFingerprint: Self.fp)
        let result = await r.flush()
        #expect(result.sentEvents == 0 && result.failedBatches == 1 && result.droppedEvents == 1)
        #expect(result.pendingEvents == 0)
        #expect(r.counters.sent == 0 && r.counters.failed == 1 && r.counters.dropped == 1)
        #expect(transport.requests.count == 1)
        #expect(transport.requests.first?.maxResponseBytes == 4 << 20)
    }

    /// Issue 14: the ticker runs only while there is work. Once the batch is sent and the
    /// de-duplication window handed to the read has ended, nothing sleeps on the clock; the next
    /// exposure starts it again.
    @Test func tickerGoesQuietWhenIdleAndRestarts() async throws {
        let transport = ScriptedExposureTransport()
        let clock = ManualClock()
        let r = Self.recorder(transport, clock: clock, ticker: true) {
            $0.dedupWindow = .seconds(2)
            $0.flushInterval = .seconds(1)
        }
        r.recordExposure(key: "k", variant: "on", reason: .split, contextFingerprint: Self.fp)
        try await Wait.until("the ticker to start") { clock.sleeperCount == 1 }
        var ticks = 0
        while clock.sleeperCount > 0, ticks < 20 {
            clock.advance(by: .seconds(1))
            ticks += 1
            try await Wait.until("tick \(ticks) to re-arm the ticker or end with the batch sent") {
                clock.sleeperCount == 1 || transport.requests.count == 1 && r.counters.pending == 0
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
        #expect(clock.sleeperCount == 0, "the ticker still runs after \(ticks) idle ticks")
        #expect(ticks <= 6)
        #expect(r.counters.sent == 1)
        r.recordExposure(key: "k2", variant: "on", reason: .split, contextFingerprint: Self.fp)
        try await Wait.until("the ticker to restart with the next exposure") { clock.sleeperCount == 1 }
        r.close()
    }
}
