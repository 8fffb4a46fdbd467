import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// Event streams end to end (SPEC §14): a client or a service on each real transport, against
/// server.py's stream modes, on the real clock. The scripted suites (`StreamClientTests`,
/// `StreamServiceTests`) prove each rule on a manual clock; these prove the pieces meet over a
/// socket: the advertised stream is found, opened with the right headers, parsed as the server
/// writes it, and a change reaches a reader with no poll (polling is set to an hour).
///
/// Every wait is bounded (``Wait``); nothing asserts on elapsed time.
@Suite(.serialized) struct StreamLoopbackTests {
    static func flags(version: Int) -> [String: Any] {
        ["default": [["key": "version", "value": version, "reason": "STATIC"]]]
    }

    /// A server advertising its stream in `advertise` shape, answering in `mode`.
    static func server(advertise: String = "endpoint", mode: String = "flagd") async throws -> ControlPlaneServer {
        let server = try await ControlPlaneServer.launched(flags: flags(version: 1))
        try await server.configureStream(["advertise": advertise, "mode": mode, "keepAlive": 1.0])
        return server
    }

    /// A client of `server` on a new `kind` transport: polling every hour, the real clock.
    static func client(
        _ server: ControlPlaneServer, _ kind: TransportKind, logs: LogCollector? = nil,
        configure: (inout FlagClientOptions) -> Void = { _ in }
    ) throws -> FlagClient {
        var options = FlagClientOptions(baseURL: server.baseURL, key: "stream-loopback-key")
        options.transport = kind.make()
        options.installIDStorage = .fixed("install-stream-\(UUID().uuidString.prefix(8))")
        options.pollInterval = .seconds(3600)
        options.exposures.enabled = false
        options.maxCachedContexts = 0
        if let logs { options.logHandler = logs.handler }
        configure(&options)
        return try FlagClient(options: options)
    }

    /// Waits until `server` has `count` open streams and `stats()` says connected.
    static func connected(
        _ server: ControlPlaneServer, count: Int = 1, _ stats: @escaping @Sendable () -> EventStreamStats
    ) async throws {
        try await Wait.untilAsync("the stream to connect", seconds: 20) {
            let open = try await server.streamReport()["open"] as? Int ?? 0
            return open >= count && stats().connected
        }
    }

    /// Replaces the server's flags with `version`; `notify` sends `refetchEvaluation` to the
    /// open streams. Answers the event's etag.
    @discardableResult
    static func change(_ server: ControlPlaneServer, to version: Int, notify: Bool = true) async throws -> String {
        let answer = try await server.admin(
            "POST", "_admin/stream/change", json: ["flags": flags(version: version), "notify": notify])
        let doc = try JSONSerialization.jsonObject(with: answer) as? [String: Any]
        return try #require(doc?["etag"] as? String, "the change's etag")
    }

    /// A warm start streams (SPEC §14, "Through a process's life"): the second client on the
    /// first one's cache folder confirms the cached values with a 304, which advertises nothing;
    /// it then fetches once without If-None-Match, learns the stream, connects, and a change
    /// reaches it with polling at an hour. Before: one request, a 304, no stream ever.
    @Test(arguments: TransportKind.available)
    func aWarmStartFromTheDiskCacheStillLearnsTheStream(kind: TransportKind) async throws {
        let server = try await Self.server()
        defer { server.stop() }
        let directory = try CacheTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let onDisk: (inout FlagClientOptions) -> Void = { options in
            options.maxCachedContexts = 5
            options.cacheDirectory = directory
            options.installIDStorage = .fixed("install-warm-start")
        }
        let first = try Self.client(server, kind, configure: onDisk)
        #expect(await first.ready(timeout: .seconds(20)))
        try await CacheTests.waitForWrites(first)
        first.close()
        let streamsBefore = try await server.streamRequests().count

        let second = try Self.client(server, kind, configure: onDisk)
        defer { second.close() }
        #expect(await second.ready(timeout: .seconds(20)))
        #expect(second.stats.sync.notModified >= 1, "the warm start confirmed the cached values with a 304")
        try await Self.connected(server) { second.stats.stream }
        #expect(try await server.streamRequests().count > streamsBefore)
        try await Self.change(server, to: 2)
        try await Wait.until("the warm-started reader to see version 2", seconds: 20) {
            second.int("version", default: 0) == 2
        }
    }

    @Test(arguments: TransportKind.available)
    func aChangeReachesAReaderThroughAFlagdStream(kind: TransportKind) async throws {
        let server = try await Self.server()
        defer { server.stop() }
        let logs = LogCollector()
        let client = try Self.client(server, kind, logs: logs)
        defer { client.close() }
        #expect(await client.ready(timeout: .seconds(20)))
        try await Self.connected(server) { client.stats.stream }
        #expect(client.int("version", default: 0) == 1)
        let etag = try await Self.change(server, to: 2)
        try await Wait.until("the reader to see version 2", seconds: 20) { client.int("version", default: 0) == 2 }
        #expect(client.status == .ready)
        // Under load the connect re-fetch can be answered after the change, so the reader sees
        // version 2 before the event itself is parsed: wait for the event rather than look once.
        try await Wait.until("the stream's refetch event to be counted", seconds: 20) {
            client.stats.stream.refetchEvents >= 1
        }
        let streams = try await server.streamRequests()
        let headers = try #require(streams.first?["headers"] as? [String: String], "the stream request's headers")
        #expect(headers.first { $0.key.lowercased() == "accept" }?.value == "text/event-stream")
        #expect(headers.first { $0.key.lowercased() == "authorization" }?.value == "Bearer stream-loopback-key")
        // The event's fetch carries the event's etag as a query parameter; the start-up fetch
        // and the connect re-fetch carry none. (Under load the connect re-fetch may be answered
        // after the change, so the reader can see version 2 before the event's own fetch is
        // sent: wait for it rather than look once.)
        var bulk: [[String: Any]] = []
        try await Wait.untilAsync("the event's fetch, with its etag", seconds: 20) {
            bulk = try await server.streamReport()["bulk"] as? [[String: Any]] ?? []
            return bulk.contains { $0["flagConfigEtag"] as? String == etag }
        }
        #expect(bulk.first.map { $0["flagConfigEtag"] is NSNull || $0["flagConfigEtag"] == nil } == true)
        let url = server.streamURL().absoluteString
        #expect(!logs.all.contains { $0.contains(url) || $0.contains("/ofrep/v1/sse") }, "\(logs.all)")
    }

    @Test(arguments: TransportKind.available)
    func aFliptStreamIsFollowed(kind: TransportKind) async throws {
        // Flipt's shape: a full `url`, no `event:` or `id:` lines, 406 without the Accept header,
        // and a refetch right after connecting.
        let server = try await Self.server(advertise: "url", mode: "flipt")
        defer { server.stop() }
        let client = try Self.client(server, kind)
        defer { client.close() }
        #expect(await client.ready(timeout: .seconds(20)))
        try await Self.connected(server) { client.stats.stream }
        try await Self.change(server, to: 2)
        try await Wait.until("the reader to see version 2", seconds: 20) { client.int("version", default: 0) == 2 }
        let statuses = try await server.streamRequests().compactMap { $0["status"] as? Int }
        #expect(statuses.first == 200, "stream answers: \(statuses)")
    }

    @Test(arguments: TransportKind.available)
    func aDroppedStreamReconnectsAndItsConnectFetchSeesAMissedChange(kind: TransportKind) async throws {
        let server = try await Self.server()
        defer { server.stop() }
        let client = try Self.client(server, kind)
        defer { client.close() }
        #expect(await client.ready(timeout: .seconds(20)))
        try await Self.connected(server) { client.stats.stream }
        let connects = client.stats.stream.connects
        _ = try await server.admin("POST", "_admin/stream/drop")
        // Changed while no stream is open: no event reaches the client; the re-fetch that
        // follows every reconnect must pick it up.
        try await Self.change(server, to: 2, notify: false)
        try await Wait.until("the reconnect and its re-fetch", seconds: 30) {
            client.stats.stream.connects > connects && client.int("version", default: 0) == 2
        }
        #expect(client.stats.stream.failures >= 1)
        #expect(client.status == .ready)
    }

    @Test(arguments: TransportKind.available)
    func aStreamAnswering404LeavesTheClientPolling(kind: TransportKind) async throws {
        let server = try await Self.server(mode: "404")
        defer { server.stop() }
        let client = try Self.client(server, kind) { $0.pollInterval = .seconds(1) }
        defer { client.close() }
        #expect(await client.ready(timeout: .seconds(20)))
        try await Wait.until("the stream's failure", seconds: 20) { client.stats.stream.failures >= 1 }
        #expect(client.status == .ready, "a failed stream alone never changes the status")
        try await Self.change(server, to: 2, notify: false)
        try await Wait.until("a poll to see version 2", seconds: 20) { client.int("version", default: 0) == 2 }
        #expect(!client.stats.stream.connected)
    }

    @Test(arguments: TransportKind.available)
    func everyAdvertisedStreamIsFollowedUpToFour(kind: TransportKind) async throws {
        // Five advertised: the decoder keeps four, and the client opens one GET for each.
        let server = try await Self.server()
        defer { server.stop() }
        let extra = (1...4).map { ["type": "sse", "endpoint": ["requestUri": "/ofrep/v1/sse?stream=\($0)"]] }
        try await server.configureStream(["extraEntries": extra])
        let client = try Self.client(server, kind)
        defer { client.close() }
        #expect(await client.ready(timeout: .seconds(20)))
        try await Self.connected(server, count: 4) { client.stats.stream }
        try await Wait.until("four streams connected", seconds: 20) { client.stats.stream.connections >= 4 }
        try await Self.change(server, to: 2)
        try await Wait.until("the reader to see version 2", seconds: 20) { client.int("version", default: 0) == 2 }
        let queries = try await server.streamRequests().compactMap { $0["query"] as? String }
        #expect(Set(queries).count == 4, "stream requests: \(queries)")
        #expect(!queries.contains("stream=4"), "a fifth stream was opened")
        #expect(try await server.streamReport()["open"] as? Int == 4)
    }

    @Test(arguments: TransportKind.available)
    func aServiceRefreshesItsHeldContextsOnAChange(kind: TransportKind) async throws {
        let server = try await Self.server()
        defer { server.stop() }
        var options = FlagServiceOptions(baseURL: server.baseURL, key: "stream-loopback-key")
        options.transport = kind.make()
        options.exposures.enabled = false
        options.coldFetchTimeout = .seconds(10)  // each first read waits for server.py's answer
        options.refreshAfter = .seconds(3600)
        options.maxStaleness = .seconds(7200)
        let service = try FlagService(options: options)
        defer { service.close() }
        let contexts = try (0..<20).map { try EvaluationContext(targetingKey: "u\($0)").fitted() }
        for context in contexts {
            #expect(await service.flags(for: context).int("version", default: 0) == 1)
        }
        try await Self.connected(server) { service.stats.stream }
        // Uses are recorded for the waves only while the stream is connected: the contexts are
        // used again now (the connect wave marked them stale: each refreshes once, in the
        // background), so the event's wave refreshes them all.
        for context in contexts { _ = service.flagsIfCached(for: context) }
        // The connect wave and those refreshes must be over before the change: quiet for 300 ms,
        // nothing in flight.
        var bulkBefore = -1
        try await Wait.untilAsync("the connect wave to end", seconds: 20) {
            let count = (try await server.streamReport()["bulk"] as? [[String: Any]] ?? []).count
            defer { bulkBefore = count }
            guard count == bulkBefore, service.stats.streaming.waves >= 1, service.stats.fetching.inFlight == 0 else {
                try await Task.sleep(for: .milliseconds(300))
                return false
            }
            return true
        }
        let etag = try await Self.change(server, to: 2)
        try await Wait.until("every held context to see version 2", seconds: 30) {
            contexts.allSatisfy { service.flagsIfCached(for: $0).int("version", default: 0) == 2 }
        }
        #expect(service.stats.streaming.waves >= 1)
        // The event's wave forwards its etag on every refresh (SPEC §14: event-triggered
        // fetches carry the flagConfig parameters).
        let bulk = try await server.streamReport()["bulk"] as? [[String: Any]] ?? []
        let wave = bulk.dropFirst(bulkBefore)
        #expect(wave.count >= contexts.count, "the wave's requests: \(wave.count)")
        #expect(
            wave.allSatisfy { $0["flagConfigEtag"] as? String == etag },
            "etag \(etag): \(wave.map { $0["flagConfigEtag"] ?? "-" })")
        #expect(service.status == .ready)
    }
}
