import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// An HTTP source over an in-process transport: the conditional `GET` (ETag sent, 304), the
/// headers, a refused document keeping the definitions, 5xx and 429 with `Retry-After`,
/// transport errors and backoff, close.
@Suite struct DefinitionsHTTPSourceTests {
    static func ok(_ value: Bool, etag: String?) -> DefinitionsScriptedTransport.Answer {
        .response(
            TransportResponse(
                status: 200, headers: etag.map { ["ETag": $0] } ?? [:],
                body: Data(DefinitionsFileSourceTests.document(value).utf8)))
    }

    static func status(_ code: Int, retryAfter: String? = nil) -> DefinitionsScriptedTransport.Answer {
        .response(TransportResponse(status: code, headers: retryAfter.map { ["Retry-After": $0] } ?? [:]))
    }

    static func feed(
        _ transport: DefinitionsScriptedTransport, clock: ManualClock, headers: [String: String] = [:]
    ) throws -> DefinitionsFeed {
        let url = try #require(URL(string: "https://flags.example.com/v1/flags.json?team=web"))
        return try DefinitionsFeed(
            source: .http(url, headers: headers), transport: transport, clock: clock, pollInterval: .seconds(30),
            pollJitter: 0, seed: 7)
    }

    @Test func theETagIsSentAndA304KeepsTheDefinitions() async throws {
        let transport = DefinitionsScriptedTransport([Self.ok(true, etag: "\"v1\""), Self.status(304)])
        let clock = ManualClock()
        let feed = try Self.feed(transport, clock: clock, headers: ["Authorization": "Bearer t"])
        defer { feed.close() }
        await feed.check()
        await feed.check()
        let requests = transport.requests
        #expect(requests.count == 2)
        #expect(requests.map(\.method) == ["GET", "GET"])
        #expect(requests.map { $0.headers["If-None-Match"] } == [nil, "\"v1\""])
        #expect(
            requests.allSatisfy {
                $0.headers["Authorization"] == "Bearer t" && $0.headers["Accept"] == "application/json"
            })
        #expect(requests.first?.maxResponseBytes == FlagDefinitions.parsingLimits.maxInputBytes)
        #expect(feed.stats.loads == 1 && feed.stats.notModified == 1)
        #expect(DefinitionsFileSourceTests.served(feed) == .bool(true))
        #expect(feed.nextCheck == .seconds(30))
    }

    @Test func aRefusedDocumentKeepsTheDefinitionsAndItsETagIsSentNext() async throws {
        let bad = DefinitionsScriptedTransport.Answer.response(
            TransportResponse(status: 200, headers: ["ETag": "\"bad\""], body: Data(#"{"flags": 1}"#.utf8)))
        let transport = DefinitionsScriptedTransport([Self.ok(true, etag: "\"v1\""), bad, Self.status(304)])
        let lines = DefinitionsFileSourceTests.Lines()
        let url = try #require(URL(string: "https://flags.example.com/flags.json"))
        let feed = try DefinitionsFeed(
            source: .http(url), transport: transport, clock: ManualClock(),
            logHandler: HalyardLogRecord.sink(logHandler: lines.handler, recordHandler: nil), seed: 1)
        defer { feed.close() }
        await feed.check()
        await feed.check()
        #expect(DefinitionsFileSourceTests.served(feed) == .bool(true))
        #expect(feed.stats.refusals == 1)
        guard case .invalidDefinitions(.invalid(let path, _)) = feed.stats.lastError else {
            Issue.record("lastError is \(String(describing: feed.stats.lastError))")
            return
        }
        #expect(path == "flags")
        #expect(lines.errors.count == 1)
        #expect(lines.errors.first?.contains("https://flags.example.com/flags.json") == true)
        await feed.check()
        #expect(transport.requests.last?.headers["If-None-Match"] == "\"bad\"")
        #expect(lines.errors.count == 1)
    }

    @Test(arguments: [(503, "120"), (429, "120"), (500, "Wed, 21 Oct 2026 07:30:00 GMT")])
    func aRetryAfterIsAFloorThatNoCheckPasses(code: Int, retryAfter: String) async throws {
        let transport = DefinitionsScriptedTransport([
            Self.ok(true, etag: "\"v1\""), Self.status(code, retryAfter: retryAfter), Self.status(304),
        ])
        // 07:27:30 GMT: the 500 comes at 07:28:00, two minutes before its HTTP-date.
        let clock = ManualClock(wallStart: Date(timeIntervalSince1970: 1_792_567_650))
        let feed = try Self.feed(transport, clock: clock)
        defer { feed.close() }
        await feed.check()
        clock.advance(by: .seconds(30))
        await feed.check()
        #expect(feed.stats.failures == 1 && feed.stats.lastError == .status(code))
        let floor = try #require(feed.retryNotBefore)
        // [RA, RA + max(1 s, RA / 10)] after the failure at 30 s.
        #expect(floor >= .seconds(150) && floor <= .seconds(162))
        #expect(try #require(feed.nextCheck) >= floor)
        // An explicit check before the floor sends nothing.
        clock.advance(by: .seconds(100))
        await feed.check()
        #expect(transport.requests.count == 2)
        clock.advance(by: .seconds(60))
        await feed.check()
        #expect(transport.requests.count == 3 && feed.stats.notModified == 1)
        #expect(feed.retryNotBefore == nil)
        #expect(DefinitionsFileSourceTests.served(feed) == .bool(true))
    }

    @Test func transportErrorsBackOffAndKeepTheDefinitions() async throws {
        let transport = DefinitionsScriptedTransport([
            Self.ok(true, etag: nil), .error(.network("refused")), .error(.timedOut), Self.status(404),
            Self.ok(false, etag: nil),
        ])
        let clock = ManualClock()
        let feed = try Self.feed(transport, clock: clock)
        defer { feed.close() }
        await feed.check()
        var delays: [Duration] = []
        for _ in 0..<3 {
            await feed.check()
            let next = try #require(feed.nextCheck)
            delays.append(next - clock.monotonicNow)
        }
        #expect(feed.stats.failures == 3)
        #expect(feed.stats.lastError == .status(404))
        #expect(delays[0] == .seconds(1))
        #expect(delays[1] >= .seconds(1) && delays[1] <= .seconds(2))
        #expect(delays[2] >= .seconds(1) && delays[2] <= .seconds(4))
        #expect(feed.retryNotBefore == nil)
        #expect(DefinitionsFileSourceTests.served(feed) == .bool(true))
        await feed.check()
        #expect(DefinitionsFileSourceTests.served(feed) == .bool(false))
        #expect(feed.stats.lastError == nil && feed.nextCheck == .seconds(30))
    }

    @Test func theLoopFollowsTheBackoffOnTheClock() async throws {
        let transport = DefinitionsScriptedTransport([.error(.network("down")), Self.ok(true, etag: "\"v\"")])
        let clock = ManualClock()
        let feed = try Self.feed(transport, clock: clock)
        feed.start()
        try await Wait.until("the first check") { feed.stats.failures == 1 }
        try await Wait.advance(clock, by: .seconds(1))
        try await Wait.until("the retry") { feed.stats.loads == 1 }
        try await Wait.advance(clock, by: .seconds(30))
        try await Wait.until("the poll") { feed.stats.loads == 2 || transport.requests.count == 3 }
        #expect(transport.requests.last?.headers["If-None-Match"] == "\"v\"")
        feed.close()
        try await Wait.until("the loop to stop") { clock.sleeperCount == 0 }
        let sent = transport.requests.count
        clock.advance(by: .seconds(600))
        await feed.check()
        #expect(transport.requests.count == sent)
    }
}
