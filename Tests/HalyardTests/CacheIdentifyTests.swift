import Foundation
import HalyardTesting
import Testing

@_spi(Fuzzing) @testable import Halyard

/// Issue 22: `identify` with the context already served from the network, the namespace a write
/// is saved under, and what `shutdown(timeout:)` waits for (docs/cache.md, "`identify`").
extension CacheClientTests {
    /// Bug 1: memory holds `n=2` from the network, the disk still `n=1` (writes failed). An
    /// `identify` with the same context must neither publish the disk entry over the network
    /// values while its fetch is held, nor let the 304 that answers it confirm the disk entry.
    @Test func identifyWithTheSameContextNeverReplacesNetworkValuesWithDiskValues() async throws {
        let store = MemoryCacheStore()
        let plane = InMemoryControlPlane(values: ["n": .int(1)])
        let client = try FlagClient(options: Self.options(plane, store))
        defer { client.close() }
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
        try await CacheTests.waitForWrites(client)
        #expect(store.envelopes.values.first?.flags.first?.value == .int(1))

        store.state.withLock { $0.writeError = CacheTests.diskFull }
        plane.setValue(.int(2), for: "n")
        try await client.refreshOrFail()
        try await CacheTests.waitForWrites(client)
        let network = Evaluation(key: "n", value: 2, reason: .staticValue)
        #expect(client.intDetail("n", default: 0) == network)
        #expect(store.envelopes.values.first?.flags.first?.value == .int(1), "the disk still holds n=1")

        let before = plane.requests.count
        plane.holdInitialization()
        let identify = Task { await client.identify(Self.u1) }
        try await Wait.until("the identify fetch") { plane.requests.count > before }
        try await CacheTests.waitForWrites(client)  // a cache lookup queued by identify has run
        #expect(client.intDetail("n", default: 0) == network, "while the identify fetch is held")
        plane.completeInitialization()
        #expect(try await Wait.result("identify") { await identify.value })
        #expect(client.stats.sync.notModified == 1, "the identify fetch was answered 304")
        #expect(client.intDetail("n", default: 0) == network, "after the 304")
    }

    /// Bug 1, healthy disk: `identify` with the same user (same or other attributes) flips no
    /// reason to `CACHED` and emits no `configurationChanged` but the one of the real change.
    @Test(arguments: [u1, EvaluationContext(targetingKey: "u1", attributes: ["plan": "pro"])])
    func identifyWithTheSameUserFlipsNothingToCached(_ context: EvaluationContext) async throws {
        let store = MemoryCacheStore()
        let plane = InMemoryControlPlane(values: ["a": .bool(true), "n": .int(1)])
        let client = try FlagClient(options: Self.options(plane, store))
        defer { client.close() }
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
        try await CacheTests.waitForWrites(client)
        let events = client.events()

        let before = plane.requests.count
        plane.holdInitialization()
        let identify = Task { await client.identify(context) }
        try await Wait.until("the identify fetch") { plane.requests.count > before }
        try await CacheTests.waitForWrites(client)
        #expect(client.boolDetail("a", default: false).reason == .staticValue, "while the identify fetch is held")
        plane.setValue(.int(5), for: "n")
        plane.completeInitialization()
        #expect(try await Wait.result("identify") { await identify.value })
        #expect(client.intDetail("n", default: 0) == Evaluation(key: "n", value: 5, reason: .staticValue))
        let changes = try await Wait.result("events up to contextChanged") {
            var changes: [Set<String>] = []
            for await event in events {
                if case .configurationChanged(let keys) = event { changes.append(keys) }
                if event == .contextChanged { break }
            }
            return changes
        }
        #expect(changes == [["n"]], "only the key the control plane changed")
    }
}

/// Passes requests to the in-memory plane and runs a hook once the answer is back, before the
/// client processes it (to land another step exactly there).
final class HookTransport: FlagTransport {
    let inner: InMemoryControlPlane
    let afterSend = Locked<(@Sendable () -> Void)?>(nil)

    init(_ inner: InMemoryControlPlane) { self.inner = inner }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let response = try await inner.send(request)
        afterSend.withLock { $0 }?()
        return response
    }
}

/// Issue 22: the namespace a write is saved under, shutdown, bounds, the index and sweeps, the
/// empty key, the salted fingerprint and the app id (docs/cache.md).
extension CacheClientTests {
    static func namespace(key: String = "test-key", appID: String? = nil) -> String {
        OnDeviceCache.namespace(baseURL: InMemoryControlPlane.baseURL, key: key, appID: appID)
    }

    /// The slot name of user `user` under `key`.
    static func slot(_ user: String, key: String = "test-key") -> String {
        let namespace = namespace(key: key)
        let hash = OnDeviceCache.targetingKeyHash(namespace: namespace, targetingKey: user, installID: "")
        return OnDeviceCache.slotName(namespace: namespace, kind: "user", targetingKeyHash: hash)
    }

    /// The LRU index name under `key`.
    static func index(key: String = "test-key") -> String { OnDeviceCache.indexName(namespace: namespace(key: key)) }

    /// The decodable entries of any store that can list.
    static func envelopeCount(_ store: any CacheStore) throws -> Int {
        try (store.entryNames() ?? []).filter {
            guard let data = try store.read($0) else { return false }
            return (try? CacheEnvelope.decode(data, limit: 1 << 20)) != nil
        }.count
    }

    /// setKey race: the key changes (setKey's first step, the shared identity) while the answer
    /// to a request made with the old key is on its way. That answer is ignored (issue 47, SPEC
    /// §12): not served, and saved under no namespace (before: saved under the old key's, the
    /// rule then); the new key's own fetch is saved under the new key.
    @Test func anOldKeysAnswerIsNeverSaved() async throws {
        let store = MemoryCacheStore()
        let plane = InMemoryControlPlane(values: ["n": .int(1)])
        let transport = HookTransport(plane)
        var options = Self.options(plane, store, key: "key-one")
        options.transport = transport
        let client = try FlagClient(options: options)
        defer { client.close() }
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
        try await CacheTests.waitForWrites(client)
        let sync = try #require(client.sync)
        let identity = sync.identity
        transport.afterSend.withLock { $0 = { identity.setKey("key-two") } }
        plane.setValue(.int(2), for: "n")
        let refresh = Task { await client.refresh() }
        try await Wait.until("the old key's answer ignored") { sync.engine.stats.staleKeyAnswers == 1 }
        transport.afterSend.withLock { $0 = nil }
        #expect(client.int("n", default: 0) == 1, "key-one's answer was served after the key changed")
        // setKey's own step: the new key's fetch (another value: another environment).
        plane.setValue(.int(3), for: "n")
        try await Wait.result("keyChanged") { await sync.engine.keyChanged() }
        _ = try await Wait.result("refresh()") { await refresh.value }
        try await CacheTests.waitForWrites(client)
        let old = try #require(store.entries[Self.slot("u1", key: "key-one")])
        let oldValue = try CacheEnvelope.decode(old, limit: 1 << 20).flags.first?.value
        #expect(oldValue == .int(1), "key-one's late answer was saved")
        let new = try #require(store.entries[Self.slot("u1", key: "key-two")])
        #expect(try CacheEnvelope.decode(new, limit: 1 << 20).flags.first?.value == .int(3))
        #expect(client.int("n", default: 0) == 3)
    }

    /// `shutdown(timeout:)` waits for the pending cache writes, within its deadline: at the
    /// deadline it reports them; once the store moves, a second shutdown sees them done.
    @Test func shutdownWaitsForPendingCacheWritesWithinItsDeadline() async throws {
        let store = MemoryCacheStore(holdingWrites: true)
        defer { for _ in 0..<64 { store.gate?.signal() } }
        let clock = ManualClock()
        let plane = InMemoryControlPlane(values: ["n": .int(1)])
        let client = try FlagClient(options: Self.options(plane, store, clock: clock))
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
        let cache = try #require(client.sync?.publisher.cache)
        try await Wait.until("the start-up write is held in the store") { cache.unfinishedWrites == 1 }
        let first = Task { await client.shutdown(timeout: .seconds(5)) }
        try await Wait.advance(clock, by: .seconds(5), "the shutdown deadline")
        let report = try await Wait.result("shutdown at its deadline") { await first.value }
        #expect(!report.completed, "shutdown returned while a cache write was pending")
        #expect(report.pendingCacheWrites == 1)
        for _ in 0..<4 { store.gate?.signal() }
        let second = try await Wait.result("shutdown") { await client.shutdown(timeout: .seconds(5)) }
        #expect(second.completed)
        #expect(second.pendingCacheWrites == 0)
        #expect(store.envelopes.count == 1, "the entry was saved before shutdown returned")
    }

    /// The pending-write table is bounded over all slots (not only per slot): a stuck store and
    /// thirty contexts hold at most `maxCachedContexts` pending writes and the one in the store.
    @Test func pendingWritesAreBoundedOverAllSlots() async throws {
        let store = MemoryCacheStore(holdingWrites: true)
        defer { for _ in 0..<256 { store.gate?.signal() } }
        let plane = InMemoryControlPlane(values: ["n": .int(1)])
        let client = try FlagClient(options: Self.options(plane, store))
        defer { client.close() }
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
        for user in 0..<30 {
            #expect(
                try await Wait.result("identify") { await client.identify(EvaluationContext(targetingKey: "p\(user)")) }
            )
        }
        let cache = try #require(client.sync?.publisher.cache)
        #expect(cache.unfinishedWrites <= 6, "\(cache.unfinishedWrites) writes held")
    }

    /// A write whose slot is already first in the index writes the entry only.
    @Test func anUnchangedIndexIsNotRewritten() async throws {
        let store = MemoryCacheStore()
        let plane = InMemoryControlPlane(values: ["n": .int(1)])
        let client = try FlagClient(options: Self.options(plane, store))
        defer { client.close() }
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
        try await CacheTests.waitForWrites(client)
        let before = store.state.withLock { $0.writes }
        for value in 2...4 {
            plane.setValue(.int(Int64(value)), for: "n")
            try await client.refreshOrFail()
            try await CacheTests.waitForWrites(client)
        }
        #expect(store.state.withLock { $0.writes } - before == 3, "one write per refresh (the entry)")
    }

    /// Warm 5 users, corrupt the index, identify 5 more: at most 5 envelopes remain (the index
    /// is rebuilt from the entries present), in memory and on disk.
    @Test(arguments: [false, true]) func aLostIndexIsRebuiltSoTheLRUBoundHolds(onDisk: Bool) async throws {
        let directory = try CacheTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store: any CacheStore = onDisk ? FileCacheStore(directory: directory) : MemoryCacheStore(listing: true)
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        let client = try FlagClient(options: Self.options(plane, store))
        defer { client.close() }
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
        for user in 2...5 {
            #expect(
                try await Wait.result("identify") { await client.identify(EvaluationContext(targetingKey: "u\(user)")) }
            )
        }
        try await CacheTests.waitForWrites(client)
        #expect(try Self.envelopeCount(store) == 5)
        try store.write(Data("{\"version\":1,\"slots\":[\"not a slot\"]}".utf8), for: Self.index())
        for user in 6...10 {
            #expect(
                try await Wait.result("identify") { await client.identify(EvaluationContext(targetingKey: "u\(user)")) }
            )
        }
        try await CacheTests.waitForWrites(client)
        #expect(try Self.envelopeCount(store) == 5)
    }

    /// A failed removal of an evicted slot does not freeze the index; the orphan it leaves is
    /// swept by the next client's first write.
    @Test func aFailedRemovalStillWritesTheIndexAndTheOrphanIsSweptLater() async throws {
        let store = MemoryCacheStore(listing: true)
        store.state.withLock { $0.removeError = CacheTests.permissionDenied }
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
        let index = CacheIndex.parse(store.entries[Self.index()])
        #expect(index?.slots == [Self.slot("u3"), Self.slot("u2")], "the index follows the writes")
        #expect(store.envelopes.count == 3, "u1's removal failed")
        store.state.withLock { $0.removeError = nil }
        options.initialContext = EvaluationContext(targetingKey: "u3")
        try await CacheTests.warm(options)
        #expect(store.envelopes.count == 2, "the orphan was swept")
        #expect(store.entries[Self.slot("u1")] == nil)
    }

    /// Another namespace's entries older than the foreign max age (30 days) and an index none of
    /// whose slots is left are swept; after `setKey`, the old key's entries and index too.
    @Test func expiredEntriesAndAnAbandonedKeysEntriesAreSwept() async throws {
        let store = MemoryCacheStore(listing: true)
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        try await CacheTests.warm(
            Self.options(
                plane, store, context: EvaluationContext(targetingKey: "u9"), clock: ManualClock(wallStart: start)))
        #expect(store.entries[Self.slot("u9")] != nil)
        let clock = ManualClock(wallStart: start.addingTimeInterval(31 * 24 * 3600))
        let client = try FlagClient(options: Self.options(plane, store, clock: clock, key: "key-one"))
        defer { client.close() }
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
        try await CacheTests.waitForWrites(client)
        #expect(store.entries[Self.slot("u9")] == nil, "another namespace's entry older than 30 days")
        #expect(store.entries[Self.index()] == nil, "an index none of whose slots is left")
        #expect(store.entries[Self.slot("u1", key: "key-one")] != nil)
        try await Wait.result("setKey") { try? await client.setKey("key-two") }
        try await CacheTests.waitForWrites(client)
        #expect(store.entries[Self.slot("u1", key: "key-one")] == nil, "the abandoned key's entry")
        #expect(store.entries[Self.index(key: "key-one")] == nil, "the abandoned key's index")
        #expect(store.entries[Self.slot("u1", key: "key-two")] != nil)
        #expect(store.entries.count == 2, "key-two's entry and index")
    }

    /// The max age is each namespace's own (until then a client applied its `cacheMaxAge` to
    /// every namespace of a shared folder: two apps with 1 h and 7 d wiped each other's warm
    /// starts). A client sweeps its own expired entries; another namespace's only once they are
    /// older than 30 days (and than its own max age): an abandoned namespace still goes.
    @Test func theSweepAppliesTheMaxAgeToItsOwnNamespaceOnly() async throws {
        func slot(_ user: String, appID: String) -> String {
            let namespace = Self.namespace(appID: appID)
            let hash = OnDeviceCache.targetingKeyHash(namespace: namespace, targetingKey: user, installID: "")
            return OnDeviceCache.slotName(namespace: namespace, kind: "user", targetingKeyHash: hash)
        }
        let store = MemoryCacheStore(listing: true)
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        var weekly = Self.options(
            plane, store, context: EvaluationContext(targetingKey: "u9"), clock: ManualClock(wallStart: start))
        weekly.appID = "weekly"
        weekly.cacheMaxAge = .seconds(7 * 24 * 3600)
        try await CacheTests.warm(weekly)
        #expect(store.entries[slot("u9", appID: "weekly")] != nil)

        var hourly = Self.options(plane, store, clock: ManualClock(wallStart: start.addingTimeInterval(2 * 3600)))
        hourly.appID = "hourly"
        hourly.cacheMaxAge = .seconds(3600)
        try await CacheTests.warm(hourly)
        #expect(store.entries[slot("u9", appID: "weekly")] != nil, "another app's entry, 2 h old")
        #expect(store.entries[slot("u1", appID: "hourly")] != nil)

        var laterHourly = hourly
        laterHourly.clock = ManualClock(wallStart: start.addingTimeInterval(4 * 3600))
        laterHourly.initialContext = EvaluationContext(targetingKey: "u2")
        try await CacheTests.warm(laterHourly)
        #expect(store.entries[slot("u1", appID: "hourly")] == nil, "its own entry past its own max age")
        #expect(store.entries[slot("u9", appID: "weekly")] != nil, "another app's entry, 4 h old")

        var monthLater = hourly
        monthLater.clock = ManualClock(wallStart: start.addingTimeInterval(31 * 24 * 3600))
        try await CacheTests.warm(monthLater)
        #expect(store.entries[slot("u9", appID: "weekly")] == nil, "an abandoned namespace, 31 days old")
    }

    /// One rule for an empty flag key: OFREP skips it (the envelope refuses it), so one such
    /// flag no longer makes the slot unusable.
    @Test func aFlagWithAnEmptyKeyLeavesTheEntryUsable() async throws {
        let store = MemoryCacheStore()
        let plane = InMemoryControlPlane(values: ["a": .bool(true), "": .bool(true)])
        try await CacheTests.warm(Self.options(plane, store))
        let client = try await Self.heldClient(plane, Self.options(plane, store))
        defer { client.close() }
        #expect(client.boolDetail("a", default: false).reason == .cached)
        plane.completeInitialization()
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
        let decoded = try OFREPResponse.decode(
            Data(#"{"flags":[{"key":"","value":true},{"key":"b","value":1}]}"#.utf8), limit: 1 << 20)
        #expect(decoded.flags.map(\.key) == ["b"])
        #expect(decoded.skippedItems == 1)
    }

    /// The stored fingerprint is salted with the namespace (not the plain SHA-1 of the
    /// context, which a dictionary of targeting keys reverses); the ETag still goes with the
    /// same context's first fetch (`persistedETagConfirmsCachedValuesWith304`).
    @Test func theStoredFingerprintIsSaltedWithTheNamespace() async throws {
        let store = MemoryCacheStore()
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        try await CacheTests.warm(Self.options(plane, store))
        let envelope = try #require(store.envelopes.first?.value)
        let fitted = try Self.u1.fitted(limit: 4096)
        #expect(envelope.fingerprint != fitted.fingerprint)
        #expect(
            envelope.fingerprint
                == OnDeviceCache.storedFingerprint(namespace: Self.namespace(), fingerprint: fitted.fingerprint))
    }

    /// The app id is part of the namespace: two apps sharing a key and a folder never serve
    /// each other's entries.
    @Test func entriesAreServedOnlyToTheirOwnApp() async throws {
        let store = MemoryCacheStore()
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        var appOne = Self.options(plane, store)
        appOne.appID = "app-one"
        try await CacheTests.warm(appOne)
        var appTwo = appOne
        appTwo.appID = "app-two"
        var noApp = appOne
        noApp.appID = nil
        for (name, options, served) in [
            ("same app", appOne, true), ("other app", appTwo, false), ("no app", noApp, false),
        ] {
            let client = try await Self.heldClient(plane, options)
            #expect((client.boolDetail("a", default: false).reason == .cached) == served, "\(name)")
            client.close()
            plane.completeInitialization()
        }
    }
}
