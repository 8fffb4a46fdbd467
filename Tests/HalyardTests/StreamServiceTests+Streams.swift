import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// Issue 47: the service follows its stream URL as a client does (a refused URL is learned
/// again, a per-answer signature is not a new stream, a new key reconnects) and the bytes the
/// waves hold stay within the byte bound.
extension StreamServiceTests {
    @Test("a refused stream URL is learned again: one fetch without If-None-Match, then the new URL (issue 47 item 1)")
    func refusedStreamURLIsLearnedAgain() async throws {
        let clock = ManualClock()
        let refused = "http://127.0.0.1:9/ofrep/v1/sse?token=\(ScriptedStreamTransport.secret)"
        let channel = "http://127.0.0.1:9/ofrep/v1/channels/2/sse?token=moved"
        let transport = ScriptedStreamTransport(clock: clock, streamURL: refused)
        transport.setStreamAnswer(.status(401), forURL: refused)
        transport.holdOpens()
        let service = try FlagService(options: try Self.options(transport, clock))
        defer { service.close() }
        _ = await service.flags(for: try EvaluationContext(targetingKey: "u0").fitted())
        try await Wait.until("the open of the advertised URL") { transport.heldOpens == 1 }
        // The plane moved the stream meanwhile; the held context's refreshes would be 304s.
        transport.setStreamURL(channel)
        let before = transport.fetches.count
        transport.releaseOpens()
        // Before: the relearn fetch was a wave over no uses (nothing sent), so the service
        // retried the dead URL for ever.
        try await Wait.until("the stream at the newly advertised URL") {
            service.stats.stream.connected && transport.streamOpens.last?.url.absoluteString == channel
        }
        let relearn = try #require(transport.fetches.dropFirst(before).first, "no fetch after the 401")
        #expect(relearn.headers["If-None-Match"] == nil, "a conditional relearn fetch (a 304 has no advertisement)")
        #expect(transport.streamOpens.filter { $0.url.absoluteString == refused }.count == 1)
    }

    @Test("a re-learn the service could not send (paused) keeps the refused URL closed until one goes")
    func aHeldRelearnKeepsTheRefusedURLClosed() async throws {
        let clock = ManualClock()
        let refused = "http://127.0.0.1:9/ofrep/v1/sse?token=\(ScriptedStreamTransport.secret)"
        let channel = "http://127.0.0.1:9/ofrep/v1/channels/3/sse?token=moved"
        let transport = ScriptedStreamTransport(clock: clock, streamURL: refused)
        transport.setStreamAnswer(.status(401), forURL: refused)
        transport.holdOpens()
        var options = try Self.options(transport, clock)
        options.backoffAfterFailures = 1
        let service = try FlagService(options: options)
        defer { service.close() }
        _ = await service.flags(for: try EvaluationContext(targetingKey: "u0").fitted())
        try await Wait.until("the open of the advertised URL") { transport.heldOpens == 1 }
        // A 503 with Retry-After pauses the service (its fetch gate admits nothing) before the
        // stream's 401 arrives; then no context fails any more (the re-learn sends u1, the
        // context fetched last).
        transport.fail(bodyContaining: "u1", status: 503, headers: ["Retry-After": "60"])
        _ = await service.flags(for: try EvaluationContext(targetingKey: "u1").fitted())
        try await Wait.until("the 503's pause") { service.status == .error }
        transport.fail(bodyContaining: "no context has this", status: 503)
        transport.setStreamURL(channel)
        let fetchesBefore = transport.fetches.count
        transport.releaseOpens()
        try await Wait.until("the stream's 401") { service.stats.stream.failures >= 1 }
        // Ten reconnect times of the pause: the re-learn cannot go, so the refused URL must stay
        // closed. (Before: the re-learn that sent nothing was reported finished and the machine
        // reopened the refused URL at each reconnect time.) The clock moves to each reconnect
        // time only once the stream waits for it with no fetch of its own in flight.
        let refusedOpens = { transport.streamOpens.filter { $0.url.absoluteString == refused }.count }
        let driver = try #require(service.streaming?.driver)
        func nextReconnect() async throws -> Duration {
            var next: Duration = .zero
            try await Wait.until("the stream waiting to reconnect, no fetch in flight") {
                guard case .waiting(let until, _) = driver.phase, until > clock.monotonicNow,
                    driver.fetchSlot == .idle
                else { return false }
                next = until
                return true
            }
            return next
        }
        for _ in 0..<10 where clock.monotonicNow < .seconds(50) {
            clock.advance(by: try await nextReconnect() - clock.monotonicNow)
        }
        #expect(refusedOpens() == 1, "the refused URL was reopened before any re-learn was sent")
        #expect(transport.fetches.count == fetchesBefore, "a request was sent during the pause")
        #expect(service.status == .error)
        // At the first reconnect time after the pause the re-learn goes (unconditional) and the
        // new URL is followed, with no further clock movement.
        let pausedUntil = try #require(service.fetcher.gate(now: clock.monotonicNow).pausedUntil)
        // (A millisecond past the pause's end: the gate's copy of it is rounded to nanoseconds.)
        let wake = max(try await nextReconnect(), pausedUntil + .milliseconds(1))
        clock.advance(by: wake - clock.monotonicNow)
        try await Wait.until("the stream at the newly advertised URL") {
            service.stats.stream.connected && transport.streamOpens.last?.url.absoluteString == channel
        }
        let relearn = try #require(transport.fetches.dropFirst(fetchesBefore).first, "no re-learn after the pause")
        #expect(relearn.headers["If-None-Match"] == nil, "a conditional re-learn (a 304 has no advertisement)")
        #expect(relearn.at >= .seconds(60), "the re-learn went during the pause (Retry-After: 60)")
        #expect(refusedOpens() == 1, "the refused URL was reopened")
    }

    @Test("a stream URL signed per answer: no reconnect or wave per cold fetch; the next reconnect takes it")
    func perAnswerSignedURLKeepsTheStream() async throws {
        let clock = ManualClock()
        let transport = ScriptedStreamTransport(clock: clock)
        transport.signPerAnswer()
        let service = try FlagService(options: try Self.options(transport, clock))
        defer { service.close() }
        _ = await service.flags(for: try EvaluationContext(targetingKey: "opener").fitted())
        try await Self.connectWaveEnded(service, transport)
        let lastEventID = "evt-7"
        transport.push("id: \(lastEventID)\ndata: {\"type\":\"other\"}\n\n")
        try await Wait.until("the event's id") { service.stats.stream.ignoredEvents == 1 }
        for i in 0..<10 {
            _ = await service.flags(for: try EvaluationContext(targetingKey: "cold\(i)").fitted())
        }
        try await Wait.until("every cold fetch over") { service.stats.fetching.inFlight == 0 }
        // Before: each cold fetch's 200 (a new signature) closed the healthy stream and opened
        // another, whose connect wave marked every held context stale: 11 connects, 11 waves.
        #expect(service.stats.stream.connects == 1, "the healthy stream was reconnected per answer")
        #expect(service.stats.streaming.waves == 1)
        #expect(transport.openConnections == 1)
        // A reconnect (the server dropped the stream) goes to the URL of the latest answer, and
        // keeps the stream's Last-Event-ID (the same stream).
        let latest = try #require(transport.lastAdvertised)
        transport.drop()
        try await Wait.until("the reconnect") {
            if transport.streamOpens.count < 2 { clock.advance(by: .milliseconds(100)) }
            return transport.streamOpens.count == 2
        }
        #expect(transport.streamOpens.last?.url.absoluteString == latest)
        #expect(transport.streamOpens.last?.headers["Last-Event-ID"] == lastEventID)
        // Another path is another stream: it replaces the healthy one at once.
        try await Wait.until("the stream reconnected") { service.stats.stream.connected }
        transport.setStreamURL("http://127.0.0.1:9/ofrep/v1/channels/9/sse")
        _ = await service.flags(for: try EvaluationContext(targetingKey: "moved").fitted())
        try await Wait.until("the stream at the new path") {
            transport.streamOpens.last?.url.path == "/ofrep/v1/channels/9/sse" && transport.openConnections == 1
        }
    }

    @Test("setKey reconnects a stream that authenticates with the key, not one elsewhere (issue 47 item 7)")
    func setKeyReconnectsAnAuthenticatedStream() async throws {
        let clock = ManualClock()
        let transport = ScriptedStreamTransport(clock: clock)
        let service = try FlagService(options: try Self.options(transport, clock))
        defer { service.close() }
        _ = await service.flags(for: try EvaluationContext(targetingKey: "u0").fitted())
        try await Self.connectWaveEnded(service, transport)
        #expect(transport.streamOpens.last?.headers["Authorization"] == "Bearer srv-key")
        try await service.setKey("srv-rotated")
        // Before: the stream stayed authenticated with the replaced key until it dropped.
        try await Wait.until("the stream reopened with the new key") {
            transport.streamOpens.count == 2 && service.stats.stream.connected && transport.openConnections == 1
        }
        #expect(transport.streamOpens.last?.headers["Authorization"] == "Bearer srv-rotated")

        // A stream on another origin carries its own credential in its URL: not reconnected.
        let otherClock = ManualClock()
        let other = ScriptedStreamTransport(clock: otherClock)
        var options = try Self.options(other, otherClock)
        options.baseURL = try #require(URL(string: "http://127.0.0.1:8"))
        let elsewhere = try FlagService(options: options)
        defer { elsewhere.close() }
        _ = await elsewhere.flags(for: try EvaluationContext(targetingKey: "u0").fitted())
        try await Self.connectWaveEnded(elsewhere, other)
        try await elsewhere.setKey("srv-rotated")
        #expect(elsewhere.stats.stream.connects == 1)
        #expect(other.openConnections == 1)
    }

    @Test("a use recorded for a context whose cold fetch is refused gives its bytes back when it ends")
    func aRefusedColdContextGivesItsUseBack() async throws {
        let clock = ManualClock()
        let transport = ScriptedStreamTransport(clock: clock)
        transport.setBulkStatus(403, forBodyContaining: "refused-")
        let service = try FlagService(options: try Self.options(transport, clock))
        defer { service.close() }
        _ = await service.flags(for: try EvaluationContext(targetingKey: "opener").fitted())
        try await Self.connectWaveEnded(service, transport)
        for i in 0..<5 {
            let view = await service.flags(for: try EvaluationContext(targetingKey: "refused-\(i)").fitted())
            #expect(view.int("version", default: 0) == 0)
        }
        try await Wait.until("the refused fetches over") {
            service.stats.fetching.inFlight == 0 && service.stats.cache.failureRecords == 5
        }
        // Before: each refused context's use (and its reserved bytes) stayed until the next event.
        let stats = service.stats
        #expect(stats.streaming.usesHeld == 0)
        #expect(stats.streaming.useBytes == 0)
        #expect(stats.cache.bytesHeld == service.cache.totals().bytes, "\(stats.cache.bytesHeld) bytes held")
    }

    @Test("the contexts a wave holds stay in the byte budget until it is done with each (issue 47 item 7)")
    func aWavesContextsStayInTheBudget() async throws {
        let clock = ManualClock()
        let transport = ScriptedStreamTransport(clock: clock)
        let options = try Self.options(transport, clock)
        let cache = ContextCache(maxContexts: 1_000, maxBytes: 1 << 20, admission: false)
        let identity = ClientIdentity(baseURL: options.baseURL, key: options.key, appID: nil, installID: { "i" })
        let streaming = try #require(
            ServiceStreaming.make(options: options, identity: identity, transport: transport, cache: cache))
        defer { streaming.close() }
        let contexts = try (0..<20).map { try EvaluationContext(targetingKey: "u\($0)").fitted() }
        func record() {
            for context in contexts {
                cache.shard(for: context.fingerprint).withLock {
                    $0.noteStreamMiss(context, now: clock.monotonicNow, budget: cache.budget)
                }
            }
        }
        record()
        let recorded = contexts.reduce(0) { $0 + StreamUse.bytes(of: $1) }
        #expect(cache.bytesHeld == recorded)
        // The wave's refreshes wait until the test lets them go: the wave holds every context.
        let gate = Barrier(open: false)
        let started = Locked(0)
        let refresh: @Sendable (FittedContext, FlagConfigVersion?) async -> Void = { _, _ in
            started.withLock { $0 += 1 }
            await gate.pass()
        }
        await streaming.wave(.init(reason: .event), refresh: refresh)
        // Before: taking the uses gave their bytes back while the wave still held them (0 here),
        // so entries could fill the whole bound beside them.
        #expect(cache.bytesHeld == recorded, "the contexts the wave holds left the byte count")
        #expect(streaming.counters.heldBytes == recorded)
        // Recorded again and taken by a second wave while the first's refreshes hold them: both
        // copies are counted.
        try await Wait.until("the first wave's refreshes to start") { started.withLock { $0 } == contexts.count }
        record()
        await streaming.wave(.init(reason: .event), refresh: refresh)
        #expect(cache.bytesHeld == 2 * recorded)
        gate.open()
        try await Wait.until("the waves to give every byte back") {
            cache.bytesHeld == 0 && streaming.counters.heldBytes == 0
        }
    }
}
