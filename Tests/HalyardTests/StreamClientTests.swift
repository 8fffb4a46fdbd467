import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// Log lines, collected.
final class LogCollector: Sendable {
    private let lines = Locked<[String]>([])
    var all: [String] { lines.withLock { $0 } }
    var handler: HalyardLogHandler { { [self] _, message in lines.withLock { $0.append(message) } } }
    /// The same collection for the internal components that take records.
    var recordHandler: HalyardLogRecordHandler { { [self] record in lines.withLock { $0.append(record.message) } } }
}

/// A client on a ``ScriptedStreamTransport`` and a manual clock.
struct StreamClientHarness {
    let clock = ManualClock()
    let transport: ScriptedStreamTransport
    let logs = LogCollector()
    let client: FlagClient

    init(
        baseURL: String = "http://127.0.0.1:9", streamURL: String? = nil,
        answer: ScriptedStreamTransport.StreamAnswer = .eventStream,
        configure: (inout FlagClientOptions) -> Void = { _ in }
    ) throws {
        let clock = self.clock
        let transport =
            streamURL.map { ScriptedStreamTransport(clock: clock, streamURL: $0) }
            ?? ScriptedStreamTransport(clock: clock)
        self.transport = transport
        transport.setStreamAnswer(answer)
        var options = FlagClientOptions(baseURL: try #require(URL(string: baseURL)), key: "cli-stream-key")
        options.transport = transport
        options.clock = clock
        options.installIDStorage = .fixed("install-1")
        options.pollInterval = .seconds(3600)
        options.exposures.enabled = false
        options.maxCachedContexts = 0
        options.logHandler = logs.handler
        configure(&options)
        client = try FlagClient(options: options)
    }

    var version: Int { client.int("version", default: 0) }
    var stream: EventStreamStats { client.stats.stream }

    /// Waits until the stream is connected and its connect fetch is over.
    func connected(fetches: Int = 2) async throws {
        try await Wait.until("the stream to connect and re-fetch") {
            stream.connected && transport.fetches.count >= fetches && client.stats.sync.streamFetches >= fetches - 1
                && version > 0 && !(client.sync?.engine.stats.requestsSent ?? 0 > transport.fetches.count)
        }
        try await Wait.until("the connect fetch to be answered") {
            client.stats.sync.responsesByStatus.values.reduce(0, +) >= fetches
        }
    }
}

@Suite("Event streams: the client (scripted stream)")
struct StreamClientTests {
    @Test("a change on the server is seen by a reader with no poll (poll interval 1 h)")
    func changeSeenWithoutPoll() async throws {
        let h = try StreamClientHarness()
        defer { h.client.close() }
        try await h.connected()
        #expect(h.version == 1)
        #expect(h.transport.streamOpens.first?.headers["Accept"] == "text/event-stream")
        h.transport.change()
        h.transport.pushRefetch()
        try await Wait.until("the reader to see version 2") { h.version == 2 }
        #expect(h.clock.monotonicNow == .zero, "no time passed: no poll could have run")
        #expect(h.client.status == .ready)
    }

    @Test("the connect re-fetch has no flagConfig parameters; an event's are forwarded percent-encoded")
    func flagConfigOnEventFetchesOnly() async throws {
        let h = try StreamClientHarness()
        defer { h.client.close() }
        try await h.connected()
        #expect(h.transport.fetches.allSatisfy { $0.url.query == nil })
        #expect(h.transport.fetches.last?.headers["If-None-Match"] == "\"v1\"")
        h.transport.pushRefetch(etag: #""\"v2+x\"""#)
        try await Wait.until("the event's fetch") { h.transport.fetches.count == 3 }
        #expect(h.transport.fetches.last?.url.query == "flagConfigEtag=%22v2%2Bx%22")
    }

    @Test("ten events in a burst cause at most two fetches")
    func burstCoalesced() async throws {
        let h = try StreamClientHarness()
        defer { h.client.close() }
        try await h.connected()
        let before = h.transport.fetches.count
        h.transport.hold()
        for i in 1...10 { h.transport.pushRefetch(etag: "\(i)") }
        try await Wait.until("ten events received") { h.stream.refetchEvents == 10 }
        try await Wait.until("the first event's fetch, held") { h.transport.heldFetches == 1 }
        #expect(h.transport.fetches.count == before + 1)
        h.transport.release()
        try await Wait.until("the first event's fetch answered") {
            h.client.stats.sync.responsesByStatus.values.reduce(0, +) == before + 1
        }
        // The pending one waits for the rate limit: 200 ms after the first event's fetch.
        #expect(h.transport.fetches.count == before + 1)
        h.clock.advance(by: .milliseconds(200))
        try await Wait.until("the pending fetch") { h.transport.fetches.count == before + 2 }
        try await Wait.until("both answered") {
            h.client.stats.sync.responsesByStatus.values.reduce(0, +) == before + 2
        }
        #expect(h.stream.coalescedEvents == 8)
        #expect(h.transport.fetches.last?.url.query == "flagConfigEtag=10")
        #expect(h.transport.fetches.count == before + 2)
    }

    @Test("a dropped stream reconnects with backoff and re-fetches")
    func droppedReconnects() async throws {
        let h = try StreamClientHarness()
        defer { h.client.close() }
        try await h.connected()
        h.transport.change()
        h.transport.drop()
        try await Wait.until("the drop to be seen") { !h.stream.connected && h.stream.failures == 1 }
        #expect(h.transport.streamOpens.count == 1, "no reconnect before the backoff delay")
        h.clock.advance(by: .seconds(1))
        try await Wait.until("the reconnect") { h.transport.streamOpens.count == 2 && h.stream.connected }
        #expect(try #require(h.transport.streamOpens.last).at >= .milliseconds(500))
        try await Wait.until("the re-fetch to see the change made while disconnected") { h.version == 2 }
        #expect(h.client.status == .ready)
    }

    @Test("connections that end by themselves leave no task behind (before: one per reconnect until close)")
    func endedConnectionsLeaveNoTask() async throws {
        let h = try StreamClientHarness()
        defer { h.client.close() }
        try await h.connected()
        let driver = try #require(h.client.sync?.streams?.first, "the client's stream driver")
        for round in 1...5 {
            h.transport.drop()
            try await Wait.until("drop \(round) to be seen") { !h.stream.connected && h.stream.connections == round }
            try await Wait.until("the ended connection's task to leave (\(driver.connectionTasks) held)") {
                driver.connectionTasks == 0
            }
            h.clock.advance(by: .seconds(60))
            try await Wait.until("reconnect \(round)") {
                h.stream.connected && h.transport.streamOpens.count == round + 1
            }
        }
        #expect(driver.connectionTasks <= 1, "\(driver.connectionTasks) connection tasks held for one connection")
    }

    @Test("a 429 with Retry-After on the stream URL is not reconnected before it (before: 4 reconnects in 20 s)")
    func streamRetryAfterHonoured() async throws {
        let h = try StreamClientHarness(answer: .status(429, headers: ["Retry-After": "600"]))
        defer { h.client.close() }
        try await Wait.until("the 429 to be seen") { h.stream.failures == 1 }
        for _ in 0..<20 {
            h.clock.advance(by: .seconds(1))
            await Task.yield()
        }
        #expect(h.transport.streamOpens.count == 1, "reconnected within 20 s of a Retry-After of 600 s")
        h.transport.setStreamAnswer(.eventStream)
        h.clock.advance(by: .seconds(641))  // past the Retry-After's window, [600 s, 660 s]
        try await Wait.until("the reconnect once the Retry-After passed") { h.transport.streamOpens.count == 2 }
        #expect(try #require(h.transport.streamOpens.last).at >= .seconds(600))
    }

    @Test("a refused stream redirect is logged once, naming the target's origin only")
    func refusedStreamRedirectLoggedOnce() async throws {
        let h = try StreamClientHarness(answer: .redirectRefused(origin: "other.example:443"))
        defer { h.client.close() }
        try await Wait.until("the refusal to be seen") { h.stream.failures == 1 }
        h.clock.advance(by: .seconds(2))
        try await Wait.until("a second refused attempt") { h.stream.failures == 2 }
        let lines = h.logs.all.filter { $0.contains("other.example:443") }
        #expect(lines.count == 1, "\(h.logs.all)")
        #expect(lines.first?.contains("not followed") == true)
    }

    @Test("the stream URL never appears in a log line, the stats or an event")
    func urlNeverLogged() async throws {
        let h = try StreamClientHarness()
        let events = EventRecorder(h.client)
        defer { h.client.close() }
        try await h.connected()
        h.transport.push(String(repeating: "x", count: 70 << 10))  // garbage: a line over the limit
        try await Wait.until("the garbage to fail the stream") { h.stream.failures >= 1 }
        h.transport.setStreamAnswer(.status(404))
        h.clock.advance(by: .seconds(2))
        try await Wait.until("the 404") { h.transport.streamOpens.count >= 2 && h.stream.failures >= 2 }
        h.transport.setStreamAnswer(.refuse)
        h.clock.advance(by: .seconds(4))
        try await Wait.until("the refusal") { h.transport.streamOpens.count >= 3 && h.stream.failures >= 3 }
        #expect(!h.logs.all.isEmpty)
        let leaks = h.logs.all.filter { $0.contains(ScriptedStreamTransport.secret) || $0.contains("/ofrep/v1/sse") }
        #expect(leaks.isEmpty)
        #expect(!"\(h.client.stats)".contains(ScriptedStreamTransport.secret))
        #expect(!"\(events.all)".contains(ScriptedStreamTransport.secret))
    }

    @Test("404 on the stream → polling at the normal interval; a healthy stream → safety interval; status untouched")
    func notFoundFallsBackToPolling() async throws {
        let h = try StreamClientHarness(answer: .status(404)) { $0.pollInterval = .seconds(30) }
        defer { h.client.close() }
        try await Wait.until("the 404") { h.stream.failures >= 1 }
        let engine = try #require(h.client.sync?.engine)
        #expect(engine.pollInterval == .seconds(30))
        #expect(h.client.status == .ready)
        let healthy = try StreamClientHarness { $0.pollInterval = .seconds(30) }
        defer { healthy.client.close() }
        try await healthy.connected()
        #expect(try #require(healthy.client.sync?.engine).pollInterval == .seconds(300))
        // The 404 client polls at ~30 s.
        let polls = h.transport.fetches.count
        h.clock.advance(by: .seconds(34))
        try await Wait.until("a poll at the normal interval") { h.transport.fetches.count > polls }
        #expect(h.client.status == .ready)
    }

    @Test("a stream withdrawn while its open is on the way leaves no connection when the open completes")
    func withdrawnWhileOpeningLeavesNoConnection() async throws {
        let h = try StreamClientHarness()
        defer { h.client.close() }
        h.transport.holdOpens()
        #expect(await h.client.ready(timeout: .seconds(30)))
        try await Wait.until("the stream open to be on its way") { h.transport.heldOpens == 1 }
        // The next 200 advertises no stream: the machine withdraws it while the open is held.
        h.transport.setAdvertise(false)
        h.transport.change()
        await h.client.refresh()
        #expect(h.version == 2)
        h.transport.releaseOpens()
        try await Wait.until("the completed open to be closed (\(h.transport.openConnections) open)") {
            h.transport.streamOpens.count == 1 && h.transport.openConnections == 0
        }
        try await Task.sleep(for: .milliseconds(50))
        #expect(h.transport.openConnections == 0, "a connection nobody follows stayed open")
        #expect(!h.stream.connected)
        #expect(h.transport.streamOpens.count == 1, "no reconnect after a withdrawal")
    }

    @Test("a stream suspended while its open is on the way leaves no connection when the open completes")
    func suspendedWhileOpeningLeavesNoConnection() async throws {
        let h = try StreamClientHarness { $0.streamInactivityDelay = .seconds(1) }
        defer { h.client.close() }
        h.transport.holdOpens()
        #expect(await h.client.ready(timeout: .seconds(30)))
        try await Wait.until("the stream open to be on its way") { h.transport.heldOpens == 1 }
        h.client.setActive(false)
        h.clock.advance(by: .seconds(2))
        try await Task.sleep(for: .milliseconds(20))
        h.transport.releaseOpens()
        try await Wait.until("the completed open to be closed (\(h.transport.openConnections) open)") {
            h.transport.streamOpens.count == 1 && h.transport.openConnections == 0
        }
        try await Task.sleep(for: .milliseconds(50))
        #expect(h.transport.openConnections == 0, "a connection nobody follows stayed open")
        #expect(!h.stream.connected)
    }

    @Test("setActive(false) closes the stream after the delay; setActive(true) re-fetches without If-None-Match")
    func activeInactive() async throws {
        let h = try StreamClientHarness { $0.streamInactivityDelay = .seconds(10) }
        defer { h.client.close() }
        try await h.connected()
        h.client.setActive(false)
        h.clock.advance(by: .seconds(9))
        try await Task.sleep(for: .milliseconds(20))
        #expect(h.transport.openConnections == 1)
        h.clock.advance(by: .seconds(1))
        try await Wait.until("the stream to close") { h.transport.openConnections == 0 }
        let fetches = h.transport.fetches.count
        h.client.setActive(true)
        try await Wait.until("the reconnect and the unconditional fetch") {
            h.transport.streamOpens.count == 2 && h.transport.fetches.count > fetches
        }
        let activated = h.transport.fetches[fetches]
        #expect(activated.headers["If-None-Match"] == nil)
        #expect(activated.url.query == nil)
    }

    @Test("Authorization goes to a stream on the control plane's origin only")
    func credentialsSameOriginOnly() async throws {
        let same = try StreamClientHarness()
        defer { same.client.close() }
        try await same.connected()
        #expect(same.transport.streamOpens.first?.headers["Authorization"] == "Bearer cli-stream-key")
        let other = try StreamClientHarness(baseURL: "http://127.0.0.1:8")
        defer { other.client.close() }
        try await Wait.until("the foreign stream to open") { other.transport.streamOpens.count == 1 }
        let headers = try #require(other.transport.streamOpens.first).headers
        #expect(headers["Authorization"] == nil)
        #expect(headers.keys.allSatisfy { !$0.lowercased().hasPrefix("x-halyard") })
    }

    @Test(".polling never opens a stream; .none neither streams nor polls")
    func changeDetectionModes() async throws {
        let polling = try StreamClientHarness { $0.changeDetection = .polling }
        defer { polling.client.close() }
        try await Wait.until("the start fetch") { polling.version == 1 }
        #expect(polling.client.sync?.streams == nil)
        #expect(polling.transport.streamOpens.isEmpty)
        let none = try StreamClientHarness { $0.changeDetection = .none }
        defer { none.client.close() }
        try await Wait.until("the start fetch") { none.version == 1 }
        #expect(none.client.sync?.streams == nil)
        #expect(try #require(none.client.sync?.engine).nextWake == nil)
        #expect(none.transport.streamOpens.isEmpty)
    }
}
