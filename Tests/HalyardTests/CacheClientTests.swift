import Foundation
import HalyardTesting
import Testing

@_spi(Fuzzing) @testable import Halyard

/// The cache policy of docs/cache.md, through the real client and an in-memory store.
@Suite struct CacheClientTests {
    static let u1 = EvaluationContext(targetingKey: "u1")
    static let u2 = EvaluationContext(targetingKey: "u2")

    /// Options with the start-up fetch always after the cache lookup (deterministic tests).
    static func options(
        _ plane: InMemoryControlPlane, _ store: any CacheStore, context: EvaluationContext = u1,
        clock: ManualClock? = nil, key: String = "test-key", log: Locked<[String]>? = nil
    ) -> FlagClientOptions {
        var options = CacheTests.options(plane, store: store, context: context, clock: clock, key: key, log: log)
        options.cacheLookupCap = .seconds(30)
        return options
    }

    /// Creates a client on a held plane, waits until its start-up fetch was sent (so the cache
    /// lookup is over and anything it served is published), and returns it.
    static func heldClient(_ plane: InMemoryControlPlane, _ options: FlagClientOptions) async throws -> FlagClient {
        let before = plane.requests.count
        plane.holdInitialization()
        let client = try FlagClient(options: options)
        try await Wait.until("the start-up fetch") { plane.requests.count > before }
        return client
    }

    /// SPEC §8 / issue 10 target: with a matching cache, the first read answers from cached
    /// values (reason CACHED, status stale) before any network answer; fresh values then
    /// replace them and `configurationChanged` names only the key whose result changed.
    @Test func coldStartServesCachedValuesBeforeTheNetworkAnswers() async throws {
        let store = MemoryCacheStore()
        let plane = InMemoryControlPlane(values: ["a": .bool(true), "n": .int(3), "s": "x"])
        try await CacheTests.warm(Self.options(plane, store))
        #expect(store.envelopes.count == 1)

        plane.setValue(.int(4), for: "n")
        let client = try await Self.heldClient(plane, Self.options(plane, store))
        defer { client.close() }
        let events = client.events()
        #expect(client.boolDetail("a", default: false).reason == .cached)
        #expect(client.bool("a", default: false))
        #expect(client.int("n", default: 0) == 3)
        #expect(client.stringDetail("s", default: "").value == "x")
        #expect(client.status == .stale)
        #expect(try await Wait.result("ready(timeout: 0)") { await client.ready(timeout: .zero) } == false)

        plane.completeInitialization()
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
        #expect(client.int("n", default: 0) == 4)
        #expect(client.boolDetail("a", default: false).reason == .staticValue)
        #expect(client.status == .ready)
        let changes = try await Wait.result("events up to ready") {
            var changes: [Set<String>] = []
            for await event in events {
                if case .configurationChanged(let keys) = event { changes.append(keys) }
                if event == .ready { break }
            }
            return changes
        }
        #expect(changes == [["n"]], "a reason going from CACHED to the served one is no change")
    }

    /// The persisted ETag goes with the first fetch of the same fingerprint; a 304 confirms the
    /// cached values (their own reasons come back) and names no key.
    @Test func persistedETagConfirmsCachedValuesWith304() async throws {
        let store = MemoryCacheStore()
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        try await CacheTests.warm(Self.options(plane, store))
        let client = try await Self.heldClient(plane, Self.options(plane, store))
        defer { client.close() }
        let events = client.events()
        #expect(plane.requests.last?.headers["If-None-Match"] == "\"v1\"")
        plane.completeInitialization()
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
        #expect(client.stats.sync.notModified == 1)
        #expect(client.boolDetail("a", default: false).reason == .staticValue)
        let changes = try await Wait.result("events up to ready") {
            var changes: [Set<String>] = []
            for await event in events {
                if case .configurationChanged(let keys) = event { changes.append(keys) }
                if event == .ready { break }
            }
            return changes
        }
        #expect(changes.isEmpty)
    }

    /// Same targeting key and kind, other attributes: the cached values are served (the match
    /// is on kind and targeting key), but the ETag is not sent (another fingerprint).
    @Test func ifNoneMatchOnlyForTheSameFingerprint() async throws {
        let store = MemoryCacheStore()
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        try await CacheTests.warm(Self.options(plane, store))
        let other = EvaluationContext(targetingKey: "u1", attributes: ["plan": "pro"])
        let client = try await Self.heldClient(plane, Self.options(plane, store, context: other))
        defer { client.close() }
        #expect(client.boolDetail("a", default: false).reason == .cached)
        #expect(plane.requests.last?.headers["If-None-Match"] == nil)
        plane.completeInitialization()
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
        #expect(client.boolDetail("a", default: false).reason == .staticValue)
    }

    /// Entries are served only to the same kind and targeting key, of the same key and control
    /// plane; an anonymous context matches on the persisted install id.
    @Test func entriesAreServedOnlyToTheirOwnContextKeyAndControlPlane() async throws {
        let store = MemoryCacheStore()
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        var anonymous = Self.options(plane, store, context: .anonymous)
        anonymous.installIDStorage = .fixed("install-A")
        try await CacheTests.warm(anonymous)
        try await CacheTests.warm(Self.options(plane, store))

        var otherInstall = anonymous
        otherInstall.installIDStorage = .fixed("install-B")
        var otherKey = Self.options(plane, store, key: "other-key")
        otherKey.initialContext = Self.u1
        var otherPlane = Self.options(plane, store)
        otherPlane.baseURL = URL(string: "https://other-plane.halyard.invalid")!
        let otherKind = Self.options(plane, store, context: EvaluationContext(targetingKey: "u1", kind: "device"))
        let cases: [(String, FlagClientOptions, Bool)] = [
            ("same install id", anonymous, true),
            ("same user", Self.options(plane, store), true),
            ("another install id", otherInstall, false),
            ("another key", otherKey, false),
            ("another control plane", otherPlane, false),
            ("another kind", otherKind, false),
            ("another user", Self.options(plane, store, context: Self.u2), false),
        ]
        for (name, options, served) in cases {
            let client = try await Self.heldClient(plane, options)
            let reason = client.boolDetail("a", default: false)
            #expect((reason.reason == .cached) == served, "\(name): \(reason)")
            if !served { #expect(reason.errorCode == .providerNotReady, "\(name)") }
            client.close()
            plane.completeInitialization()
        }
    }

    /// A file of another key copied over this key's slot (same name, foreign content) is not
    /// served: the targeting-key hash is salted with the base URL and key.
    @Test func anEntryCopiedFromAnotherKeyIsNotServed() async throws {
        let store = MemoryCacheStore()
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        try await CacheTests.warm(Self.options(plane, store, key: "key-one"))
        let foreign = try #require(store.envelopes.first?.value)
        let namespace = OnDeviceCache.namespace(baseURL: InMemoryControlPlane.baseURL, key: "key-two")
        let hash = OnDeviceCache.targetingKeyHash(namespace: namespace, targetingKey: "u1", installID: "")
        let slot = OnDeviceCache.slotName(namespace: namespace, kind: "user", targetingKeyHash: hash)
        store.state.withLock { $0.entries[slot] = foreign.encoded() }
        let client = try await Self.heldClient(plane, Self.options(plane, store, key: "key-two"))
        defer { client.close() }
        #expect(client.boolDetail("a", default: false).errorCode == .providerNotReady)
        plane.completeInitialization()
    }

    /// Entries older than `cacheMaxAge` (wall clock) are not served.
    @Test func entriesOlderThanTheMaxAgeAreNotServed() async throws {
        let store = MemoryCacheStore()
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        try await CacheTests.warm(Self.options(plane, store, clock: ManualClock(wallStart: start)))
        for (hours, served) in [(23.0, true), (25.0, false)] {
            let clock = ManualClock(wallStart: start.addingTimeInterval(hours * 3600))
            let client = try await Self.heldClient(plane, Self.options(plane, store, clock: clock))
            #expect((client.boolDetail("a", default: false).reason == .cached) == served, "after \(hours) h")
            client.close()
            plane.completeInitialization()
        }
    }

    /// 401/403 do not invalidate the entry: the client serves it (status error, not fatal), and
    /// the next start still finds it.
    @Test func unauthorizedKeepsTheEntry() async throws {
        let store = MemoryCacheStore()
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        try await CacheTests.warm(Self.options(plane, store))
        let stored = store.entries
        let client = try await Self.heldClient(plane, Self.options(plane, store))
        plane.failInitialization(status: 401)
        try await Wait.until("status error") { client.status == .error }
        #expect(client.boolDetail("a", default: false).reason == .cached)
        client.close()
        #expect(store.entries == stored)
        let again = try await Self.heldClient(plane, Self.options(plane, store))
        #expect(again.boolDetail("a", default: false).reason == .cached)
        again.close()
        plane.completeInitialization()
    }

    /// `identify` to a context with an entry serves it until that context's first fetch
    /// completes; the LRU keeps the last `maxCachedContexts` contexts.
    @Test func identifyServesTheNewContextsEntryUntilItsFetchCompletes() async throws {
        let store = MemoryCacheStore()
        let plane = InMemoryControlPlane(values: ["who": "u2"])
        try await CacheTests.warm(Self.options(plane, store, context: Self.u2))
        plane.setValue("u1", for: "who")
        let client = try FlagClient(options: Self.options(plane, store))
        defer { client.close() }
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
        #expect(client.string("who", default: "") == "u1")

        plane.setValue("u2-fresh", for: "who")
        plane.holdInitialization()
        let identify = Task { await client.identify(Self.u2) }
        try await Wait.until("u2's cached values") { client.stringDetail("who", default: "").value == "u2" }
        #expect(client.stringDetail("who", default: "").reason == .cached)
        plane.completeInitialization()
        #expect(try await Wait.result("identify") { await identify.value })
        #expect(
            client.stringDetail("who", default: "") == Evaluation(key: "who", value: "u2-fresh", reason: .staticValue))
    }

    @Test func theLRUKeepsTheLastContexts() async throws {
        let store = MemoryCacheStore()
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        var options = Self.options(plane, store)
        options.maxCachedContexts = 2
        let client = try FlagClient(options: options)
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
        for user in ["u2", "u3"] {
            #expect(try await Wait.result("identify") { await client.identify(EvaluationContext(targetingKey: user)) })
        }
        try await CacheTests.waitForWrites(client)
        client.close()
        #expect(store.envelopes.count == 2)
        #expect(store.entries.count == 3, "two slots and the index")
        for (user, served) in [("u1", false), ("u2", true), ("u3", true)] {
            var o = options
            o.initialContext = EvaluationContext(targetingKey: user)
            let c = try await Self.heldClient(plane, o)
            #expect((c.boolDetail("a", default: false).reason == .cached) == served, "\(user)")
            c.close()
            plane.completeInitialization()
        }
    }

    /// Permission denied and disk full: logged once, the client keeps working from memory.
    @Test func aFailingStoreIsLoggedOnceAndTheClientKeepsWorking() async throws {
        for (name, readFails) in [("permission denied", true), ("disk full", false)] {
            let store = MemoryCacheStore()
            store.state.withLock {
                $0.writeError = readFails ? CacheTests.permissionDenied : CacheTests.diskFull
                if readFails { $0.readError = CacheTests.permissionDenied }
            }
            let plane = InMemoryControlPlane(values: ["n": .int(1)])
            let log = Locked<[String]>([])
            let client = try FlagClient(options: Self.options(plane, store, log: log))
            #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) }, "\(name)")
            for value in 2...4 {
                plane.setValue(.int(Int64(value)), for: "n")
                await client.refresh()
                try await CacheTests.waitForWrites(client)
                #expect(client.int("n", default: 0) == value, "\(name)")
            }
            #expect(store.state.withLock { $0.writes } >= 3, "\(name)")
            #expect(log.value.filter { $0.contains("cache store failed") }.count == 1, "\(name): \(log.value)")
            client.close()
        }
    }

    /// An entry above the size limit is removed with one warning and never served; a new one
    /// too large is not written.
    @Test func oversizedEntriesAreRemovedWithOneWarning() async throws {
        let store = MemoryCacheStore(sizeLimit: 300)
        let plane = InMemoryControlPlane(values: ["big": .string(String(repeating: "x", count: 400))])
        let namespace = OnDeviceCache.namespace(baseURL: InMemoryControlPlane.baseURL, key: "test-key")
        let hash = OnDeviceCache.targetingKeyHash(namespace: namespace, targetingKey: "u1", installID: "")
        let slot = OnDeviceCache.slotName(namespace: namespace, kind: "user", targetingKeyHash: hash)
        store.state.withLock { $0.entries[slot] = Data(repeating: 0x41, count: 301) }
        let log = Locked<[String]>([])
        let client = try await Self.heldClient(plane, Self.options(plane, store, log: log))
        defer { client.close() }
        #expect(client.stringDetail("big", default: "").errorCode == .providerNotReady)
        #expect(store.entries[slot] == nil)
        plane.completeInitialization()
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
        await client.refresh()
        try await CacheTests.waitForWrites(client)
        #expect(store.entries[slot] == nil, "an oversized entry was written")
        #expect(log.value.filter { $0.contains("bytes") }.count == 1, "\(log.value)")
    }

    /// A damaged entry (truncated, flipped byte, another version) is ignored, never served,
    /// and overwritten by the next write.
    @Test func damagedEntriesAreIgnoredAndOverwritten() async throws {
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        let scratch = MemoryCacheStore()
        try await CacheTests.warm(Self.options(plane, scratch))
        let (slot, good) = try #require(scratch.envelopes.first)
        let bytes = good.encoded()
        var flipped = bytes
        flipped[bytes.count - 5] ^= 0x04
        let text = try #require(String(data: bytes, encoding: .utf8))
        let damaged: [(String, Data)] = [
            ("truncated", bytes.prefix(bytes.count / 2)),
            ("flipped byte", flipped),
            ("another version", Data(text.replacingOccurrences(of: "\"version\":1", with: "\"version\":9").utf8)),
            ("empty", Data()),
        ]
        for (name, data) in damaged {
            let store = MemoryCacheStore()
            store.state.withLock { $0.entries[slot] = data }
            let client = try await Self.heldClient(plane, Self.options(plane, store))
            #expect(client.boolDetail("a", default: false).errorCode == .providerNotReady, "\(name)")
            plane.completeInitialization()
            #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) }, "\(name)")
            try await CacheTests.waitForWrites(client)
            client.close()
            let rewritten = try #require(store.entries[slot], "\(name)")
            #expect(try CacheEnvelope.decode(rewritten, limit: 1 << 20).flags == good.flags, "\(name)")
        }
    }

    /// A stuck store (every write waits) stalls no read, no publish, no creation, no refresh;
    /// pending writes are coalesced per slot.
    @Test func aStuckStoreStallsNothing() async throws {
        let store = MemoryCacheStore(holdingWrites: true)
        defer { for _ in 0..<64 { store.gate?.signal() } }
        let plane = InMemoryControlPlane(values: ["n": .int(0)])
        let client = try FlagClient(options: Self.options(plane, store))
        defer { client.close() }
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
        for value in 1...10 {
            plane.setValue(.int(Int64(value)), for: "n")
            try await Wait.result("refresh with a stuck store") { await client.refresh() }
            #expect(client.int("n", default: -1) == value)
        }
        // A second client on the same stuck store starts and serves too.
        let second = try FlagClient(options: Self.options(plane, store))
        #expect(try await Wait.result("ready") { await second.ready(timeout: .seconds(30)) })
        second.close()
        for _ in 0..<64 { store.gate?.signal() }
        try await CacheTests.waitForWrites(client)
        // One write held, then the newest pending value (coalesced), each with its index.
        #expect(store.state.withLock { $0.writes } <= 8)
        #expect(store.envelopes.values.first?.flags.first?.value == .int(10))
    }

    /// A lookup slower than the cap does not hold back the start-up fetch, and when it ends
    /// after the network answered, its entry is not published (network > cache).
    @Test func aSlowLookupNeitherDelaysTheFetchNorOverridesTheNetwork() async throws {
        let warmStore = MemoryCacheStore()
        let plane = InMemoryControlPlane(values: ["n": .int(1)])
        try await CacheTests.warm(Self.options(plane, warmStore))
        plane.setValue(.int(2), for: "n")
        let store = MemoryCacheStore(holdingReads: true)
        store.state.withLock { $0.entries = warmStore.entries }
        defer { for _ in 0..<64 { store.readGate?.signal() } }
        var options = Self.options(plane, store)
        options.cacheLookupCap = .milliseconds(20)
        let client = try FlagClient(options: options)
        defer { client.close() }
        #expect(try await Wait.result("ready while the lookup hangs") { await client.ready(timeout: .seconds(30)) })
        #expect(client.intDetail("n", default: 0) == Evaluation(key: "n", value: 2, reason: .staticValue))
        for _ in 0..<8 { store.readGate?.signal() }  // the lookup, then the index reads of writes
        try await CacheTests.waitForWrites(client)
        #expect(store.state.withLock { $0.reads } >= 1, "the lookup ran")
        #expect(client.intDetail("n", default: 0) == Evaluation(key: "n", value: 2, reason: .staticValue))
        #expect(client.status == .ready)
    }
}
