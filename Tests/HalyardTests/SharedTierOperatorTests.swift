import Dispatch
import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// What an operator sees of the shared tier (docs/fleet.md, "What an operator sees"): each
/// counter `stats.sharedCache` gained — call latency percentiles (over the last minute),
/// queue depth, reconnects, failures by class (failover, auth, cluster, timeout, out of
/// memory) — against a real `redis-server` (or, for what one is hard to make answer at a
/// chosen moment, a scripted RESP server on 127.0.0.1); a configuration problem (auth,
/// Cluster) logged once however often it recurs, a failover or a full Redis once per episode;
/// and the per-pod jitter on when a context served from the shared cache counts as due. The
/// tests that need `redis-server` are skipped, with a message, where it is absent.
@Suite(.serialized) struct SharedTierOperatorTests {
    static let keys = SharedTier.Keys(baseURL: InMemoryControlPlane.baseURL, key: "srv-operator-test", appID: nil)

    /// A tier on `endpoint` (one connection), its records collected in `records`.
    static func tier(
        _ endpoint: RedisEndpoint, records: Locked<[HalyardLogRecord]>? = nil, callDeadline: Duration = .seconds(2),
        clock: any HalyardClock = SystemClock()
    ) -> SharedTier {
        var handler: HalyardLogRecordHandler?
        if let records {
            handler = { record in records.withLock { $0.append(record) } }
        }
        return SharedTier(
            client: RedisClient(endpoint: endpoint, timeout: callDeadline), keys: keys, leaseDuration: .seconds(60),
            entryLifetime: .seconds(600), clock: clock, logHandler: handler, callDeadline: callDeadline,
            slowCallThreshold: callDeadline)
    }

    static func entry(version: Int) -> SharedEntry {
        SharedEntry(
            flags: [ServedFlag(key: "version", value: .int(Int64(version)), variant: "v", reason: .staticValue)],
            etag: nil, confirmedAt: SharedTier.milliseconds(Date()), flagConfig: nil)
    }

    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// The records of `reason`.
    static func records(_ records: Locked<[HalyardLogRecord]>, reason: String) -> [HalyardLogRecord] {
        records.withLock { $0 }.filter { $0.metadata[HalyardLogRecord.Key.reason] == reason }
    }

    // MARK: - Counters

    @Test(.needsRedisServer) func callLatencyPercentilesComeFromTheConnectionsCalls() async throws {
        let redis = try RedisTestServer()
        let tier = Self.tier(redis.endpoint())
        defer { tier.close() }
        #expect(tier.stats.callLatencyP50 == nil && tier.stats.callLatencyP99 == nil, "no call yet")
        for id in 0..<20 {
            guard case .none = await tier.lookup("context-\(id)") else {
                Issue.record("a lookup of an empty Redis did not miss")
                return
            }
        }
        let stats = tier.stats
        let p50 = try #require(stats.callLatencyP50)
        let p99 = try #require(stats.callLatencyP99)
        #expect(p50 > .zero && p50 <= p99, "\(stats)")
        #expect(p99 <= .seconds(2), "a call ends by its deadline: \(stats)")
    }

    /// The percentiles cover the last minute, not the tier's life: three calls a scripted
    /// server answers after 200 ms, then fast ones. 40 s later (the tier's clock, injected) the
    /// slow calls still set the p99; 61 s after them they have left the window and it falls.
    @Test func callLatencyPercentilesCoverTheLastMinute() async throws {
        let server = try ScriptedRESPServer { _, index in
            ScriptedRESPServer.Answer(reply: "$-1\r\n", delay: index < 3 ? .milliseconds(200) : .zero)
        }
        defer { server.stop() }
        let clock = ManualClock()
        let tier = Self.tier(server.endpoint, clock: clock)
        defer { tier.close() }
        func lookups(_ count: Int) async {
            for id in 0..<count {
                guard case .none = await tier.lookup("context-\(id)") else {
                    Issue.record("a lookup of the scripted server did not miss")
                    return
                }
            }
        }
        await lookups(3)
        let slow = try #require(tier.stats.callLatencyP99)
        #expect(slow >= .milliseconds(200), "\(tier.stats)")
        clock.advance(by: .seconds(40))
        await lookups(5)
        let still = try #require(tier.stats.callLatencyP99)
        #expect(still >= .milliseconds(200), "40 s later the slow calls are in the window: \(tier.stats)")
        clock.advance(by: .seconds(21))
        await lookups(5)
        let recent = try #require(tier.stats.callLatencyP99)
        #expect(recent < .milliseconds(200), "61 s later only the fast calls are: \(tier.stats)")
        #expect(try #require(tier.stats.callLatencyP50) <= recent)
    }

    /// Redis stopped: one call in flight on the one connection, four more queued behind it.
    @Test(.needsRedisServer) func queueDepthCountsTheCallsWaitingForTheirTurn() async throws {
        let redis = try RedisTestServer()
        let tier = Self.tier(redis.endpoint(), callDeadline: .seconds(20))
        defer { tier.close() }
        _ = await tier.lookup("warm")  // connected
        redis.pause()
        defer { redis.resume() }
        let first = Task { _ = await tier.lookup("context-first") }
        try await Wait.until("the first call in flight", seconds: 20) { tier.client.stats.inFlight == 1 }
        let lookups = Task {
            await withTaskGroup(of: Void.self) { group in
                for id in 0..<4 { group.addTask { _ = await tier.lookup("context-\(id)") } }
            }
        }
        try await Wait.until("four calls queued behind the one in flight", seconds: 20) {
            tier.stats.queueDepth == 4
        }
        redis.resume()
        await first.value
        await lookups.value
        let stats = tier.stats
        #expect(stats.queueDepth == 0 && stats.peakQueueDepth >= 4, "\(stats)")
    }

    /// Calls that queue while the connection is busy share its next exchange (one pipeline, one
    /// round trip), and each still gets its own replies: Redis stopped with one call in flight,
    /// four reads of different keys queued behind it, two of them set.
    @Test(.needsRedisServer) func callsQueuedBehindABusyConnectionShareItsNextExchange() async throws {
        let redis = try RedisTestServer()
        let direct = redis.client()
        defer { direct.close() }
        try direct.set(Self.bytes("k1"), Self.bytes("one"), expiry: .seconds(60))
        try direct.set(Self.bytes("k3"), Self.bytes("three"), expiry: .seconds(60))
        let tier = Self.tier(redis.endpoint(), callDeadline: .seconds(20))
        defer { tier.close() }
        _ = await tier.call([.ping], writes: false)  // connected
        let before = tier.stats
        redis.pause()
        defer { redis.resume() }
        let first = Task { await tier.call([.get(Self.bytes("k0"))], writes: false) }
        try await Wait.until("the first call in flight", seconds: 20) { tier.client.stats.inFlight == 1 }
        let queued = Task {
            await withTaskGroup(of: (Int, [RedisValue]?).self) { group in
                for id in 0..<4 {
                    group.addTask { (id, await tier.call([.get(Self.bytes("k\(id)"))], writes: false)) }
                }
                var replies: [Int: [RedisValue]?] = [:]
                for await (id, reply) in group { replies[id] = reply }
                return replies
            }
        }
        try await Wait.until("four calls queued behind the one in flight", seconds: 20) {
            tier.stats.queueDepth == 4
        }
        redis.resume()
        let firstReply = await first.value
        let replies = await queued.value
        #expect(firstReply == [.bulk(nil)])
        #expect(replies[0] == [.bulk(nil)] && replies[2] == [.bulk(nil)], "\(replies)")
        #expect(replies[1] == [.bulk(Self.bytes("one"))] && replies[3] == [.bulk(Self.bytes("three"))], "\(replies)")
        let stats = tier.stats
        #expect(stats.calls - before.calls == 5, "\(stats)")
        #expect(stats.exchanges - before.exchanges == 2, "the four queued calls went in one exchange: \(stats)")
    }

    /// A slow exchange is one failure for the breaker, however many calls it carried: six calls
    /// queued while the lane was busy go out together, Redis stops for longer than the slow-call
    /// threshold while they wait for their replies. Counted per call as before, the six would be
    /// six failures in a row, and one slow moment under load would open the breaker.
    @Test(.needsRedisServer) func aSlowExchangeIsOneFailureForTheBreaker() async throws {
        let redis = try RedisTestServer()
        let tier = SharedTier(
            client: RedisClient(endpoint: redis.endpoint(), timeout: .seconds(20)), keys: Self.keys,
            leaseDuration: .seconds(60), entryLifetime: .seconds(600), clock: SystemClock(), logHandler: nil,
            callDeadline: .seconds(20), slowCallThreshold: .milliseconds(100))
        defer { tier.close() }
        _ = await tier.call([.ping], writes: false)  // connected
        // The warm call's drain may still be looking for more calls: wait until it gave the lane up.
        try await Wait.until("the lane idle", seconds: 20) { !tier.lanes[0].waiting.withLock { $0.draining } }
        let before = tier.stats
        let gate = DispatchSemaphore(value: 0)
        tier.lanes[0].queue.async { _ = gate.wait(timeout: .now() + 20) }  // the lane is busy
        let calls = Task {
            await withTaskGroup(of: [RedisValue]?.self) { group in
                for id in 0..<6 { group.addTask { await tier.call([.get(Self.bytes("k\(id)"))], writes: false) } }
                var answered = 0
                for await reply in group where reply != nil { answered += 1 }
                return answered
            }
        }
        try await Wait.until("six calls waiting for the lane", seconds: 20) {
            tier.lanes[0].waiting.withLock { $0.calls.count } == 6
        }
        redis.pause()
        defer { redis.resume() }
        gate.signal()
        try await Wait.until("the six calls in flight", seconds: 20) { tier.client.stats.inFlight == 1 }
        try await Task.sleep(for: .milliseconds(300))  // longer than the 100 ms threshold
        redis.resume()
        #expect(await calls.value == 6)
        let stats = tier.stats
        #expect(stats.exchanges - before.exchanges == 1 && stats.slowCalls == 6, "\(stats)")
        #expect(!stats.breakerOpen && stats.breakerOpenings == 0, "one slow exchange, one failure: \(stats)")
    }

    /// The server drops the tier's connection (`CLIENT KILL`): the next call fails on the dead
    /// connection, the one after connects again — one reconnect.
    @Test(.needsRedisServer) func reconnectsCountConnectionsOpenedAgain() async throws {
        let redis = try RedisTestServer()
        let tier = Self.tier(redis.endpoint())
        defer { tier.close() }
        _ = await tier.lookup("warm")
        #expect(tier.stats.reconnects == 0)
        let admin = redis.client()
        defer { admin.close() }
        _ = try admin.send(RedisCommand("CLIENT", ["KILL", "TYPE", "normal", "SKIPME", "yes"].map(Self.bytes)))
        try await Wait.untilAsync("a call on a new connection", seconds: 20) {
            if case .none = await tier.lookup("after") { return true }
            return false
        }
        #expect(tier.stats.reconnects == 1, "\(tier.stats)")
    }

    /// The primary turned replica (a failover's old primary): taking a lease (`SET NX`) gets
    /// `-READONLY`, a failover error; the connection is dropped, so the next call reconnects.
    @Test(.needsRedisServer) func failoverRepliesAreCountedAndReconnect() async throws {
        let redis = try RedisTestServer()
        let tier = Self.tier(redis.endpoint())
        defer { tier.close() }
        let admin = redis.client()
        defer { admin.close() }
        _ = try admin.send(RedisCommand("REPLICAOF", ["127.0.0.1", "1"].map(Self.bytes)))
        guard case .unavailable = await tier.acquireLease("context") else {
            Issue.record("a replica granted a lease")
            return
        }
        _ = await tier.lookup("context")  // reads still work, on a new connection
        let stats = tier.stats
        #expect(stats.failoverErrors == 1 && stats.reconnects == 1 && stats.errors == 1, "\(stats)")
    }

    /// Redis stopped: a call reaches its deadline on the connection (a timeout error).
    @Test(.needsRedisServer) func timeoutsAreCounted() async throws {
        let redis = try RedisTestServer()
        let tier = Self.tier(redis.endpoint(), callDeadline: .milliseconds(300))
        defer { tier.close() }
        _ = await tier.lookup("warm")
        redis.pause()
        defer { redis.resume() }
        guard case .unavailable = await tier.lookup("context") else {
            Issue.record("a stopped Redis answered")
            return
        }
        #expect(tier.stats.timeoutErrors == 1, "\(tier.stats)")
    }

    /// A full Redis (`maxmemory 1`, `noeviction`): the entry's write is refused with `-OOM`,
    /// counted; the connection is kept and reads go on.
    @Test(.needsRedisServer) func outOfMemoryWritesAreCounted() async throws {
        let redis = try RedisTestServer()
        let tier = Self.tier(redis.endpoint())
        defer { tier.close() }
        let admin = redis.client()
        defer { admin.close() }
        _ = try admin.send(RedisCommand("CONFIG", ["SET", "maxmemory-policy", "noeviction"].map(Self.bytes)))
        _ = try admin.send(RedisCommand("CONFIG", ["SET", "maxmemory", "1"].map(Self.bytes)))
        await tier.store(Self.entry(version: 1), for: "context", releasing: nil)
        _ = await tier.lookup("context")
        let stats = tier.stats
        #expect(stats.outOfMemoryErrors == 1 && stats.writes == 0 && stats.reconnects == 0, "\(stats)")
    }

    // MARK: - Configuration problems, logged once

    /// `-NOAUTH` (no password), `-WRONGPASS` (a wrong one, on connect) and `-NOPERM` (an ACL
    /// user without `SET`), each provoked twice on a tier of its own: counted twice, logged
    /// once as a configuration problem, without the user's name.
    @Test(.needsRedisServer) func authAndPermissionErrorsLogOnceAsAConfigurationProblem() async throws {
        let secret = "op-Secret-51"
        let redis = try RedisTestServer(password: secret)
        let admin = redis.client()
        defer { admin.close() }
        _ = try admin.send(
            RedisCommand("ACL", ["SETUSER", "looker", "on", ">looker-Pass-3", "~*", "+get", "+ping"].map(Self.bytes)))
        var anonymous = redis.endpoint()
        anonymous.password = nil
        let cases: [(code: String, endpoint: RedisEndpoint)] = [
            ("NOAUTH", anonymous),
            ("WRONGPASS", redis.endpoint(password: "wrong-Pass-99")),
            (
                "NOPERM",
                RedisEndpoint(
                    address: .tcp(host: "127.0.0.1", port: redis.port), user: "looker", password: "looker-Pass-3")
            ),
        ]
        for (code, endpoint) in cases {
            let records = Locked<[HalyardLogRecord]>([])
            let tier = Self.tier(endpoint, records: records)
            defer { tier.close() }
            for _ in 0..<2 {
                // A lease: a write, which the ACL user may not make.
                guard case .unavailable = await tier.acquireLease("context") else {
                    Issue.record("\(code): the lease was granted")
                    continue
                }
            }
            #expect(tier.stats.authErrors == 2, "\(code): \(tier.stats)")
            let logged = Self.records(records, reason: "configuration")
            #expect(logged.count == 1, "\(code): \(records.withLock { $0.map(\.message) })")
            #expect(logged.first?.level == .error)
            #expect(logged.first?.message.contains(code) == true, "\(code): \(logged.map(\.message))")
            #expect(logged.first?.metadata[HalyardLogRecord.Key.component] == "shared_cache")
            #expect(
                records.withLock { $0 }.allSatisfy { !$0.message.contains("looker") && !$0.message.contains(secret) })
        }
    }

    /// A Redis Cluster node's redirections (`-MOVED`, `-ASK`, `-CROSSSLOT`, from a scripted
    /// server), each twice: counted twice, logged once that Cluster is not supported.
    @Test func clusterRedirectionsLogOnceThatClusterIsNotSupported() async throws {
        for reply in ["MOVED 3999 127.0.0.1:6381", "ASK 3999 127.0.0.1:6381", "CROSSSLOT Keys in request don't hash"] {
            let server = try ScriptedRESPServer(answer: "-\(reply)\r\n")
            defer { server.stop() }
            let records = Locked<[HalyardLogRecord]>([])
            let tier = Self.tier(server.endpoint, records: records)
            defer { tier.close() }
            for _ in 0..<2 {
                guard case .unavailable = await tier.lookup("context") else {
                    Issue.record("\(reply): the lookup was answered")
                    continue
                }
            }
            let code = String(reply.prefix { $0 != " " })
            #expect(tier.stats.clusterErrors == 2, "\(code): \(tier.stats)")
            #expect(server.commands == ["GET", "GET"], "\(code): one connection, kept")
            let logged = Self.records(records, reason: "cluster_unsupported")
            #expect(logged.count == 1, "\(code): \(records.withLock { $0.map(\.message) })")
            #expect(logged.first?.message.contains(code) == true && logged.first?.level == .error)
        }
    }

    // MARK: - Failovers and a full Redis, logged once per episode

    /// The records of `reason`, checked for what every such line must be: a warning of the
    /// shared cache naming `code`, and never a key.
    static func episodeRecords(
        _ records: Locked<[HalyardLogRecord]>, reason: String, code: String
    ) -> [HalyardLogRecord] {
        let logged = Self.records(records, reason: reason)
        for record in logged {
            #expect(record.level == .warning && record.message.contains(code), "\(record.message)")
            #expect(record.metadata[HalyardLogRecord.Key.component] == "shared_cache")
            #expect(!record.message.contains(":v1:") && !record.message.contains("context-"), "\(record.message)")
        }
        return logged
    }

    /// A failover's old primary (a scripted server): leases (`SET NX`) refused with `-READONLY`
    /// twice (the second on a new connection: the first reply dropped it), a read answered,
    /// then a lease granted, then refused again. One warning per episode — the first failover
    /// reply since the tier's last accepted write — so two lines, not one per reply nor one per
    /// tier life.
    @Test func failoverRepliesLogOncePerEpisode() async throws {
        let server = try ScriptedRESPServer { command, index in
            switch command {
            case "SET":
                ScriptedRESPServer.Answer(
                    reply: index == 2 ? "+OK\r\n" : "-READONLY You can't write against a read only replica.\r\n")
            case "EVAL": ScriptedRESPServer.Answer(reply: ":1\r\n")
            default: ScriptedRESPServer.Answer(reply: "$-1\r\n")
            }
        }
        defer { server.stop() }
        let records = Locked<[HalyardLogRecord]>([])
        let tier = Self.tier(server.endpoint, records: records)
        defer { tier.close() }
        for step in 0..<4 {
            let lease = await tier.acquireLease("context-\(step)")
            switch (step, lease) {
            case (2, .acquired(let token, _)):
                await tier.releaseLease(token, for: "context-\(step)", keys: Self.keys)
            case (2, _): Issue.record("the granted lease was not taken: \(lease)")
            case (_, .unavailable): break
            default: Issue.record("step \(step): a refused lease was taken: \(lease)")
            }
            if step == 1 {
                guard case .none = await tier.lookup("context") else {
                    Issue.record("the read between the refusals was not answered")
                    return
                }
            }
        }
        let stats = tier.stats
        #expect(stats.failoverErrors == 3 && stats.reconnects == 2, "\(stats)")
        let logged = Self.episodeRecords(records, reason: "failover", code: "READONLY")
        #expect(logged.count == 2, "\(records.withLock { $0.map(\.message) })")
    }

    /// A full Redis (a scripted server answering `-OOM` to the entry writes, `EVAL`): two
    /// writes refused, a read answered, a write accepted, a write refused again. One warning
    /// per episode — the first `-OOM` since the tier's last accepted write — so two lines.
    @Test func outOfMemoryRepliesLogOncePerEpisode() async throws {
        let server = try ScriptedRESPServer { command, index in
            switch command {
            case "EVAL":
                ScriptedRESPServer.Answer(
                    reply: index == 2 ? ":1\r\n" : "-OOM command not allowed when used memory > 'maxmemory'.\r\n")
            default: ScriptedRESPServer.Answer(reply: "$-1\r\n")
            }
        }
        defer { server.stop() }
        let records = Locked<[HalyardLogRecord]>([])
        let tier = Self.tier(server.endpoint, records: records)
        defer { tier.close() }
        for step in 0..<4 {
            await tier.store(Self.entry(version: step), for: "context-\(step)", releasing: nil)
            if step == 1 {
                guard case .none = await tier.lookup("context") else {
                    Issue.record("the read between the refusals was not answered")
                    return
                }
            }
        }
        let stats = tier.stats
        #expect(stats.outOfMemoryErrors == 3 && stats.writes == 1 && stats.reconnects == 0, "\(stats)")
        let logged = Self.episodeRecords(records, reason: "out_of_memory", code: "OOM")
        #expect(logged.count == 2, "\(records.withLock { $0.map(\.message) })")
    }

    // MARK: - Herds

    /// A context served from the shared cache counts as due earlier on this pod by the draw
    /// (docs/fleet.md, "Herds"). With `refreshAfter` 30 s the most is 3 s: 28 s after the entry
    /// was written, the pod that drew 3 s refreshes the context on a read; a pod that drew 0
    /// does not. Without the jitter neither would.
    @Test(.needsRedisServer) func aContextServedFromTheSharedCacheIsDueEarlierByItsDraw() async throws {
        let redis = try RedisTestServer()
        let plane = SharedCacheServiceTests.plane()
        // Entries carry wall times and Redis refuses a write stamped ahead of its own clock:
        // the manual clock reaches the real time after its first minute (a value's age is
        // counted back from the monotonic now, so that must be past the draw).
        let clock = ManualClock(wallStart: Date() - 60)
        clock.advance(by: .seconds(60))
        func service(draw: Int64?) throws -> FlagService {
            let service = try SharedCacheServiceTests.service(plane, redis) {
                $0.clock = clock
                $0.refreshAfter = .seconds(30)
                $0.maxStaleness = .seconds(600)
            }
            if let draw { service.sharedTier?.setDueDraw { _ in draw } }
            return service
        }
        let writer = try service(draw: nil)
        defer { writer.close() }
        let context = serviceContext(7)
        #expect(await writer.flags(for: context).int("version", default: 0) == 1)
        #expect(plane.evaluationCount == 1)
        let early = try service(draw: .max)  // clamped to the most: 3 s
        defer { early.close() }
        let late = try service(draw: 0)
        defer { late.close() }
        for pod in [early, late] {
            #expect(await pod.flags(for: context).int("version", default: 0) == 1)
            #expect(pod.stats.sharedCache?.hits == 1, "served from the shared cache")
        }
        clock.advance(by: .seconds(28))
        for pod in [early, late] { _ = await pod.flags(for: context) }
        try await Wait.until("the pod that drew 3 s refreshes", seconds: 20) {
            early.stats.fetching.backgroundRefreshes == 1
        }
        #expect(late.stats.fetching.backgroundRefreshes == 0, "the pod that drew 0 is not due yet")
    }
}
