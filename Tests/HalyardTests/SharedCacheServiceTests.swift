import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// Services sharing one real `redis-server` (SPEC §15, docs/fleet.md): the fleet fetches a
/// context once, a Redis that stops, dies or comes back never takes values away, and entries
/// that are corrupt, foreign or too large are never served. Two services in one process stand
/// for two pods; the control plane is the in-memory one (its evaluation count is the number
/// of control-plane requests) or, for streams, server.py. Skipped where `redis-server` is
/// absent; `.ci/run` installs it and fails if these were skipped.
@Suite(.serialized) struct SharedCacheServiceTests {
    static let sdkKey = "srv-shared-test-key"

    /// A service of `plane` sharing `redis`, polling only (no stream to learn).
    static func service(
        _ plane: InMemoryControlPlane, _ redis: RedisTestServer, key: String = sdkKey, logs: LogCollector? = nil,
        configure: (inout FlagServiceOptions) -> Void = { _ in }
    ) throws -> FlagService {
        var options = plane.makeServiceOptions(key: key)
        options.sharedCache = Self.cache(redis)
        options.changeDetection = .polling
        options.exposures.enabled = false
        // Bounded, and long enough for a suite start: CI once saw a first read of a fresh
        // service wait out 5 s while ~100 suites started on two cores (the fetch finished later
        // and the second service was served its entry).
        options.coldFetchTimeout = .seconds(30)
        if let logs { options.logHandler = logs.handler }
        configure(&options)
        return try FlagService(options: options)
    }

    /// The test's Redis, with a call deadline for a shared machine: a deadline counts from
    /// the call's admission, the wait for the tier's thread included, and two cores running
    /// many suites can hold that thread longer than the production default of 25 ms.
    static func cache(_ redis: RedisTestServer) -> SharedCache {
        var cache = SharedCache.redis(url: URL(string: "redis://127.0.0.1:\(redis.port)")!)
        cache.callDeadline = .milliseconds(250)
        return cache
    }

    static func plane() -> InMemoryControlPlane {
        InMemoryControlPlane(values: ["version": .int(1), "banner": .string("hello")])
    }

    /// The entry key of `context` in the namespace of `key` (what a reader of Redis sees).
    static func entryKey(_ context: EvaluationContext, key: String = sdkKey) throws -> [UInt8] {
        let keys = SharedTier.Keys(baseURL: InMemoryControlPlane.baseURL, key: key, appID: nil)
        return keys.entryKey(keys.id(try context.fitted().fingerprint))
    }

    /// An answer to a request sent with the old key, arriving after `setKey`, is never written
    /// to Redis under the new key's names and MAC (SPEC §15): a pod holding only the new key
    /// must not read the old environment's values (before: the write read the tier's names at
    /// write time, which `setKey` had already replaced).
    @Test(.needsRedisServer) func anOldKeyAnswerNeverLandsUnderTheNewKeysNamespace() async throws {
        let redis = try RedisTestServer()
        let transport = OldKeyTransport(oldKeyStatus: 200)
        func service(key: String) throws -> FlagService {
            var options = FlagServiceOptions(baseURL: InMemoryControlPlane.baseURL, key: key)
            options.transport = transport
            options.sharedCache = Self.cache(redis)
            options.changeDetection = .polling
            options.exposures.enabled = false
            options.coldFetchTimeout = .seconds(120)
            options.requestTimeout = .seconds(120)
            return try FlagService(options: options)
        }
        let rotating = try service(key: "old-key")
        defer { rotating.close() }
        let context = serviceContext(7)
        let pending = Task { await rotating.flags(for: context).string("env", default: "none") }
        try await Wait.until("an old-key fetch in flight") { transport.held == 1 }
        try await rotating.setKey("new-key")
        transport.releaseOne()
        #expect(await pending.value != "old")
        // The flight (and its write) is over once its waiter has its answer.
        let fresh = try service(key: "new-key")
        defer { fresh.close() }
        #expect(await fresh.flags(for: context).string("env", default: "none") == "new")
        #expect(await rotating.flags(for: context).string("env", default: "none") == "new")
    }

    /// The entry Redis holds for `context` in the namespace of `key`, authenticated with that
    /// key: the env value it serves, nil when there is no entry.
    static func storedEnv(_ redis: RedisTestServer, _ context: EvaluationContext, key: String) throws -> String? {
        let keys = SharedTier.Keys(baseURL: InMemoryControlPlane.baseURL, key: key, appID: nil)
        let id = keys.id(try context.fitted().fingerprint)
        guard let bytes = try redis.client().get(keys.entryKey(id)) else { return nil }
        let entry = try SharedEntry.decode(
            bytes, namespace: keys.namespace, id: id, secret: keys.secret, limit: SharedTier.defaultMaxEntryBytes)
        guard case .string(let env)? = entry.flags.first(where: { $0.key == "env" })?.value else { return "?" }
        return env
    }

    /// The same, read in Redis itself after the old key's 200 has landed, from a plane that
    /// ignores cancellation: the new key's namespace holds the new key's answer only, and
    /// nothing is written for the replaced key after `setKey` either (SPEC §12, §15).
    @Test(.needsRedisServer) func aLateOldKeyAnswerIsWrittenUnderNoNamespace() async throws {
        let redis = try RedisTestServer()
        let transport = LateOldKeyTransport()
        var options = FlagServiceOptions(baseURL: InMemoryControlPlane.baseURL, key: "old-key")
        options.transport = transport
        options.sharedCache = Self.cache(redis)
        options.changeDetection = .polling
        options.exposures.enabled = false
        options.coldFetchTimeout = .seconds(120)
        options.requestTimeout = .seconds(120)
        let service = try FlagService(options: options)
        defer {
            service.close()
            transport.releaseAll()
        }
        let context = serviceContext(8)
        let pending = Task { await service.flags(for: context).string("env", default: "none") }
        try await Wait.until("an old-key fetch in flight") { transport.held == 1 }
        try await service.setKey("new-key")
        #expect(await pending.value == "new", "the cold waiter was not served the new key's answer")
        transport.releaseAll()
        try await Wait.until("the old key's late 200 answered") { transport.landed == 1 }
        // Bounded polling: Redis never holds the old environment's value under the new key.
        for _ in 0..<50 {
            let stored = try Self.storedEnv(redis, context, key: "new-key")
            #expect(stored == "new", "the new key's namespace holds \(stored ?? "nothing")")
            #expect(service.flagsIfCached(for: context).string("env", default: "none") == "new")
            if stored != "new" { break }
            try await Task.sleep(for: .milliseconds(2))
        }
        #expect(try Self.storedEnv(redis, context, key: "old-key") == nil, "written for the replaced key")
    }

    @Test(.needsRedisServer) func theSecondServiceIsServedWithoutAControlPlaneRequest() async throws {
        let redis = try RedisTestServer()
        let plane = Self.plane()
        let first = try Self.service(plane, redis)
        defer { first.close() }
        let contexts = (0..<5).map { serviceContext($0) }
        for context in contexts {
            let version = await first.flags(for: context).int("version", default: 0)
            #expect(version == 1, "\(first.stats)")
        }
        #expect(plane.evaluationCount == 5)
        #expect(first.stats.sharedCache?.writes == 5, "\(String(describing: first.stats.sharedCache))")

        let second = try Self.service(plane, redis)
        defer { second.close() }
        for context in contexts {
            let flags = await second.flags(for: context)
            #expect(flags.int("version", default: 0) == 1)
            #expect(flags.string("banner", default: "") == "hello")
        }
        #expect(plane.evaluationCount == 5, "the second service sent no request")
        let stats = second.stats
        #expect(stats.sharedCache?.hits == 5)
        #expect(stats.fetching.requests == 0)
        #expect(stats.status == .ready, "served by its fleet: ready without a request of its own")
        #expect(stats.cache.contextsHeld == 5)
    }

    @Test(.needsRedisServer) func twoPodsMissingOneContextAtOnceFetchItOnce() async throws {
        let redis = try RedisTestServer()
        let plane = Self.plane()
        plane.setLatency(.milliseconds(300))
        let a = try Self.service(plane, redis)
        let b = try Self.service(plane, redis)
        defer {
            a.close()
            b.close()
        }
        let contexts = (0..<8).map { serviceContext(100 + $0) }
        let values = await withTaskGroup(of: Int.self) { group in
            for context in contexts {
                for service in [a, b] {
                    group.addTask { await service.flags(for: context).int("version", default: 0) }
                }
            }
            return await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(values == Array(repeating: 1, count: 16))
        #expect(plane.evaluationCount == 8, "one control-plane request per context for both pods")
        let waits = (a.stats.sharedCache?.leaseWaits ?? 0) + (b.stats.sharedCache?.leaseWaits ?? 0)
        let waitHits = (a.stats.sharedCache?.leaseWaitHits ?? 0) + (b.stats.sharedCache?.leaseWaitHits ?? 0)
        let served = (a.stats.sharedCache?.hits ?? 0) + (b.stats.sharedCache?.hits ?? 0)
        #expect(served == 8, "each context: one pod fetched it, the other was served its entry")
        #expect(waitHits <= waits)
    }

    @Test(.needsRedisServer) func redisStoppedKilledAndRestartedNeverTakesValuesAway() async throws {
        let redis = try RedisTestServer()
        let plane = Self.plane()
        let logs = LogCollector()
        let service = try Self.service(plane, redis, logs: logs) { $0.coldFetchTimeout = .seconds(2) }
        defer { service.close() }
        let held = serviceContext(1)
        #expect(await service.flags(for: held).int("version", default: 0) == 1)

        // Stopped (SIGSTOP): reads never touch Redis; a new context is fetched from the control
        // plane once the calls' deadlines pass, well within the cold-fetch timeout.
        redis.pause()
        defer { redis.resume() }
        #expect(service.flagsIfCached(for: held).int("version", default: 0) == 1)
        for id in 2..<10 {
            let flags = await service.flags(for: serviceContext(id))
            #expect(flags.int("version", default: 0) == 1, "context \(id) while Redis is stopped")
        }
        let stopped = try #require(service.stats.sharedCache, "shared-cache stats")
        #expect(stopped.errors + stopped.droppedInQueue >= SharedCacheBreaker.failuresToOpen)
        #expect(stopped.breakerOpen, "repeated deadlines open the breaker")
        #expect(stopped.skippedCalls > 0, "an open breaker skips calls")
        #expect(service.stats.cache.coldWaitTimeouts == 0)
        #expect(logs.all.contains { $0.contains("shared cache is unavailable") }, "\(logs.all)")

        // Killed: the same.
        redis.resume()
        try redis.kill9()
        #expect(await service.flags(for: serviceContext(20)).int("version", default: 0) == 1)

        // Restarted: after the breaker's open time a call is tried, succeeds, and it closes.
        try redis.restart()
        var next = 30
        try await Wait.untilAsync("the breaker to close after the restart", seconds: 60) {
            next += 1
            _ = await service.flags(for: serviceContext(next))
            return service.stats.sharedCache?.breakerOpen == false
        }
        let writes = service.stats.sharedCache?.writes ?? 0
        #expect(await service.flags(for: serviceContext(500)).int("version", default: 0) == 1)
        #expect((service.stats.sharedCache?.writes ?? 0) > writes, "entries are written again")
        #expect(logs.all.contains { $0.contains("shared cache answers again") }, "\(logs.all)")
    }

    @Test(.needsRedisServer) func corruptForeignAndUnauthenticatedEntriesAreIgnoredCountedAndOverwritten() async throws
    {
        let redis = try RedisTestServer()
        let plane = Self.plane()
        let client = redis.client()
        defer { client.close() }
        let service = try Self.service(plane, redis)
        defer { service.close() }

        // Corrupt bytes at the entry's key.
        let corrupt = serviceContext(1)
        try client.set(try Self.entryKey(corrupt), Array("not an entry".utf8), expiry: .seconds(60))
        // A valid entry of another namespace (another SDK key), copied to this one's key.
        let foreignService = try Self.service(plane, redis, key: "srv-another-key")
        defer { foreignService.close() }
        let foreign = serviceContext(2)
        _ = await foreignService.flags(for: foreign)
        let foreignBytes = try #require(try client.get(try Self.entryKey(foreign, key: "srv-another-key")))
        try client.set(try Self.entryKey(foreign), foreignBytes, expiry: .seconds(60))
        // A valid entry of this namespace with one byte of its values changed.
        let altered = serviceContext(3)
        let writer = try Self.service(plane, redis)
        _ = await writer.flags(for: altered)
        writer.close()
        var alteredBytes = try #require(try client.get(try Self.entryKey(altered)))
        let at = try #require(alteredBytes.lastIndex(of: UInt8(ascii: "1")), "the value 1 in the entry")
        alteredBytes[at] = UInt8(ascii: "7")
        try client.set(try Self.entryKey(altered), alteredBytes, expiry: .seconds(60))

        let before = plane.evaluationCount
        for context in [corrupt, foreign, altered] {
            #expect(await service.flags(for: context).int("version", default: 0) == 1)
        }
        #expect(plane.evaluationCount == before + 3, "none of the three was served")
        let stats = try #require(service.stats.sharedCache, "shared-cache stats")
        #expect(stats.rejectedEntries == 3)
        #expect(stats.hits == 0)
        // Overwritten: a third service is served each of them from the shared cache now.
        let third = try Self.service(plane, redis)
        defer { third.close() }
        for context in [corrupt, foreign, altered] {
            #expect(await third.flags(for: context).int("version", default: 0) == 1)
        }
        #expect(third.stats.sharedCache?.hits == 3)
        #expect(plane.evaluationCount == before + 3)
    }

    @Test(.needsRedisServer) func anEntryOverTheLimitIsNotWrittenAndIsCounted() async throws {
        let redis = try RedisTestServer()
        let plane = InMemoryControlPlane(values: ["big": .string(String(repeating: "x", count: 300 << 10))])
        let service = try Self.service(plane, redis)
        defer { service.close() }
        #expect(await service.flags(for: serviceContext(1)).string("big", default: "").utf8.count == 300 << 10)
        let stats = try #require(service.stats.sharedCache, "shared-cache stats")
        #expect(stats.oversizedEntries == 1)
        #expect(stats.writes == 0)
        let client = redis.client()
        defer { client.close() }
        #expect(try client.get(try Self.entryKey(serviceContext(1))) == nil)
    }

    @Test(.needsRedisServer) func nothingIdentifyingIsWrittenToRedis() async throws {
        let redis = try RedisTestServer()
        let plane = Self.plane()
        let service = try Self.service(plane, redis)
        defer { service.close() }
        let context = EvaluationContext(
            targetingKey: "alice-7f3k", kind: "user", attributes: ["email": .string("alice@example.test")])
        _ = await service.flags(for: context)
        #expect(service.stats.sharedCache?.writes == 1, "\(String(describing: service.stats.sharedCache))")
        let client = redis.client()
        defer { client.close() }
        guard case .array(let names?) = try client.send(RedisCommand("KEYS", [Array("*".utf8)])) else {
            Issue.record("KEYS did not answer an array")
            return
        }
        var everything: [UInt8] = []
        for case .bulk(let name?) in names {
            everything += name
            if let value = try client.get(name) { everything += value }
        }
        let text = String(decoding: everything, as: UTF8.self)
        let fingerprint = try context.fitted().fingerprint
        for secret in ["alice-7f3k", "alice@example.test", Self.sdkKey, fingerprint, "\"user\""] {
            #expect(!text.contains(secret), "\(secret) was written to Redis")
        }
    }

    /// docs/fleet.md's sizing: an entry of a context served 64 Bool flags (keys like real ones,
    /// a variant and a reason each) takes what Redis reports with `MEMORY USAGE`, measured here
    /// and bounded so the figure in the docs cannot drift far from the format.
    @Test(.needsRedisServer) func anEntryOfSixtyFourFlagsTakesAboutWhatTheDocsSay() async throws {
        let redis = try RedisTestServer()
        var values: [String: JSONValue] = [:]
        for i in 0..<64 { values["checkout.feature-\(i).enabled"] = .bool(i % 2 == 0) }
        let plane = InMemoryControlPlane(values: values)
        let service = try Self.service(plane, redis)
        defer { service.close() }
        let contexts = (0..<20).map { serviceContext($0) }
        for context in contexts { _ = await service.flags(for: context) }
        #expect(service.stats.sharedCache?.writes == 20)
        let client = redis.client()
        defer { client.close() }
        var usages: [Int64] = []
        var lengths: [Int] = []
        for context in contexts {
            let key = try Self.entryKey(context)
            if case .integer(let bytes) = try client.send(RedisCommand("MEMORY", [Array("USAGE".utf8), key])) {
                usages.append(bytes)
            }
            lengths.append(try client.get(key)?.count ?? 0)
        }
        #expect(usages.count == 20, "MEMORY USAGE answered \(usages.count) of 20")
        let usage = usages.sorted()[usages.count / 2]
        let length = lengths.sorted()[lengths.count / 2]
        print("shared entry of 64 flags: \(length) bytes of value, MEMORY USAGE \(usage) bytes (median of 20)")
        #expect(length > 64 * 40, "an entry holds its 64 flags (\(length) bytes)")
        #expect(usage <= 8 << 10, "MEMORY USAGE \(usage) bytes: docs/fleet.md's sizing is out of date")
    }

    /// Two pods streaming from server.py: the second learns the stream from one request of its
    /// own and is served the rest from the shared cache; a change event reaches both, and the
    /// fleet fetches each held context about once for it (the lease and the event's flag-set
    /// version in the entry), not once per pod.
    @Test(.needsRedisServer) func aChangeEventCostsTheFleetAboutOneFetchPerContext() async throws {
        let redis = try RedisTestServer()
        let server = try await StreamLoopbackTests.server()
        defer { server.stop() }
        func service() throws -> FlagService {
            var options = FlagServiceOptions(baseURL: server.baseURL, key: "stream-fleet-key")
            options.transport = TransportKind.available.first?.make()
            options.exposures.enabled = false
            options.coldFetchTimeout = .seconds(10)
            options.refreshAfter = .seconds(3600)
            options.maxStaleness = .seconds(7200)
            options.sharedCache = Self.cache(redis)
            return try FlagService(options: options)
        }
        let a = try service()
        let b = try service()
        defer {
            a.close()
            b.close()
        }
        let contexts = try (0..<20).map { try EvaluationContext(targetingKey: "u\($0)").fitted() }
        for context in contexts { #expect(await a.flags(for: context).int("version", default: 0) == 1) }
        let afterA = (try await server.streamReport()["bulk"] as? [[String: Any]] ?? []).count
        #expect(await b.flags(for: contexts[0]).int("version", default: 0) == 1)
        let afterFirst = (try await server.streamReport()["bulk"] as? [[String: Any]] ?? []).count
        #expect(afterFirst - afterA == 1, "the second pod's one request to learn the stream")
        for context in contexts.dropFirst() {
            #expect(await b.flags(for: context).int("version", default: 0) == 1)
        }
        // The rest from the shared cache (a few may be refreshed by the second pod's connect
        // wave once its stream connects: entries confirmed before a connect do not answer it).
        #expect(b.stats.sharedCache?.hits ?? 0 >= contexts.count / 2, "\(String(describing: b.stats.sharedCache))")
        try await StreamLoopbackTests.connected(server, count: 2) { b.stats.stream }
        try await StreamLoopbackTests.connected(server, count: 2) { a.stats.stream }
        for context in contexts {
            _ = a.flagsIfCached(for: context)
            _ = b.flagsIfCached(for: context)
        }
        var bulkBefore = -1
        try await Wait.untilAsync("the connect waves to end", seconds: 30) {
            let count = (try await server.streamReport()["bulk"] as? [[String: Any]] ?? []).count
            defer { bulkBefore = count }
            guard count == bulkBefore, a.stats.streaming.waves >= 1, b.stats.streaming.waves >= 1,
                a.stats.fetching.inFlight == 0, b.stats.fetching.inFlight == 0
            else {
                try await Task.sleep(for: .milliseconds(300))
                return false
            }
            return true
        }
        _ = try await StreamLoopbackTests.change(server, to: 2)
        try await Wait.until("both pods to see version 2 everywhere", seconds: 30) {
            contexts.allSatisfy {
                a.flagsIfCached(for: $0).int("version", default: 0) == 2
                    && b.flagsIfCached(for: $0).int("version", default: 0) == 2
            }
        }
        // Both waves are over before counting.
        try await Wait.until("the waves to end", seconds: 30) {
            a.stats.fetching.inFlight == 0 && b.stats.fetching.inFlight == 0
        }
        let wave = (try await server.streamReport()["bulk"] as? [[String: Any]] ?? []).count - bulkBefore
        #expect(wave >= contexts.count, "each context fetched for the change: \(wave)")
        #expect(
            wave <= contexts.count * 12 / 10,
            "the fleet's requests for one change: \(wave) for \(contexts.count) contexts (without the shared cache: 2x)"
        )
        let served = (a.stats.sharedCache?.hits ?? 0) + (b.stats.sharedCache?.hits ?? 0)
        #expect(
            served >= contexts.count - 1 + contexts.count * 8 / 10,
            "a: \(String(describing: a.stats.sharedCache)), b: \(String(describing: b.stats.sharedCache))")
    }
}
