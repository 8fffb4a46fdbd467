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
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(5)) })
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
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(5)) })
        try await CacheTests.waitForWrites(client)
        let events = client.events

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
