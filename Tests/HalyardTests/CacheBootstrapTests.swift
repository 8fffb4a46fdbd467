import Foundation
import HalyardTesting
import Testing

@_spi(Fuzzing) @testable import Halyard

/// Bootstrap values (docs/cache.md, "Bootstrap"): served at once, reason DEFAULT; precedence
/// network > cache > bootstrap > the code default.
@Suite struct CacheBootstrapTests {
    @Test func bootstrapValuesAreServedAtOnceThenReplacedByCacheThenNetwork() async throws {
        let store = MemoryCacheStore()
        let plane = InMemoryControlPlane(values: ["a": .int(2)])
        try await CacheTests.warm(CacheClientTests.options(plane, store))
        plane.setValue(.int(3), for: "a")

        plane.holdInitialization()
        var options = CacheClientTests.options(plane, store)
        options.bootstrapValues = ["a": .int(1), "only-bootstrap": .bool(true)]
        let client = try FlagClient(options: options)
        defer { client.close() }
        // Synchronously, right after creation: the bootstrap values.
        let first = client.intDetail("a", default: 0)
        #expect(first.value == 1 || first.reason == .cached, "\(first)")
        if first.value == 1 { #expect(first.reason == .defaultValue && first.errorCode == nil) }
        try await Wait.until("cached values") { client.intDetail("a", default: 0).reason == .cached }
        #expect(client.int("a", default: 0) == 2)
        // The cache replaced the whole bootstrap snapshot.
        #expect(client.boolDetail("only-bootstrap", default: false).errorCode == .flagNotFound)
        plane.completeInitialization()
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
        #expect(client.intDetail("a", default: 0) == Evaluation(key: "a", value: 3, reason: .staticValue))
    }

    @Test func withoutCacheBootstrapHoldsUntilTheNetworkAndSurvivesAFailedStart() async throws {
        let plane = InMemoryControlPlane(values: ["a": .int(5)])
        var options = plane.makeOptions()
        options.bootstrapValues = ["a": .int(1)]
        options.exposures.enabled = false
        let clock = ManualClock()
        options.clock = clock
        plane.failInitialization(status: 500)
        let client = try FlagClient(options: options)
        defer { client.close() }
        #expect(client.intDetail("a", default: 0) == Evaluation(key: "a", value: 1, reason: .defaultValue))
        try await Wait.until("the failed start") { client.status == .error }
        #expect(client.int("a", default: 0) == 1)
        #expect(client.intDetail("missing", default: 7).errorCode == .flagNotFound)
        try await Wait.advance(clock, by: .seconds(2), "the retry timer")
        try await Wait.until("the retry's values") { client.int("a", default: 0) == 5 }
        #expect(client.intDetail("a", default: 0) == Evaluation(key: "a", value: 5, reason: .staticValue))
        // The status is delivered right after the publish of its values (docs/protocol.md, "Status
        // and events"): a reader can see the values a moment before the status.
        try await Wait.until("ready after the retry's values") { client.status == .ready }
    }

    @Test func badBootstrapValuesAreTypedErrors() throws {
        let plane = InMemoryControlPlane()
        var options = plane.makeOptions()
        options.bootstrapValues = ["": .bool(true)]
        #expect(throws: FlagClientError.emptyFlagKey) { try FlagClient(options: options) }
        options.bootstrapValues = ["x": .array([.double(.nan)])]
        #expect(throws: FlagClientError.self) { try FlagClient(options: options) }
    }
}
