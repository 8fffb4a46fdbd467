import Configuration
import ConfigurationTesting
import Foundation
import Halyard
import HalyardConfiguration
import HalyardTesting
import Testing

/// `HalyardConfigProvider`: flags read through swift-configuration, over a client and a
/// service, passing `ProviderCompatTest`.
@Suite struct ConfigProviderTests {
    /// The values `ProviderCompatTest` requires, as flags (bytes as base64 strings).
    static var compatFlags: [String: JSONValue] {
        func base64(_ text: String) -> JSONValue { .string(Data(text.utf8).base64EncodedString()) }
        return [
            "string": "Hello", "other.string": "Other Hello", "int": 42, "other.int": 24,
            "double": 3.14, "other.double": 2.72, "bool": true, "other.bool": false,
            "bytes": base64("magic"), "other.bytes": base64("magic2"),
            "stringy.array": ["Hello", "World"], "other.stringy.array": ["Hello", "Swift"],
            "inty.array": [42, 24], "other.inty.array": [16, 32],
            "doubly.array": [3.14, 2.72], "other.doubly.array": [0.9, 1.8],
            "booly.array": [true, false], "other.booly.array": [false, true, true],
            "byteChunky.array": [base64("magic"), base64("magic2")],
            "other.byteChunky.array": [base64("magic"), base64("magic2"), base64("magic")],
        ]
    }

    @Test func aClientProviderPassesTheCompatibilityTest() async throws {
        let client = try FlagClient(offlineValues: Self.compatFlags)
        try await ProviderCompatTest(provider: HalyardConfigProvider(client: client)).runTest()
    }

    @Test func aServiceProviderPassesTheCompatibilityTest() async throws {
        let plane = InMemoryControlPlane(values: Self.compatFlags)
        let service = try FlagService(options: plane.makeServiceOptions())
        defer { service.close() }
        _ = await service.flags(for: .anonymous)  // held, so the synchronous reads have values
        try await ProviderCompatTest(provider: HalyardConfigProvider(service: service)).runTest()
    }

    @Test func missingIsNoValueMismatchIsTheProvidersErrorObjectsAreCanonicalJSON() throws {
        let client = try FlagClient(offlineValues: [
            "limit": 3, "theme": ["size": 2, "color": "blue"], "off": .null,
        ])
        let provider = HalyardConfigProvider(client: client)
        #expect(try provider.value(forKey: ["missing"], type: .int).value == nil)
        #expect(try provider.value(forKey: ["off"], type: .string).value == nil)
        #expect(try provider.value(forKey: ["limit"], type: .double).value?.content == .double(3))
        #expect(throws: HalyardConfigError.typeMismatch(key: "limit", requested: .string, actual: "integer")) {
            try provider.value(forKey: ["limit"], type: .string)
        }
        let theme = try provider.value(forKey: ["theme"], type: .string)
        #expect(theme.encodedKey == "theme")
        #expect(theme.value?.content == .string(#"{"color":"blue","size":2}"#))
        // Through a reader: a mismatch serves the default, a missing flag goes to the next provider.
        let reader = ConfigReader(providers: [
            provider, InMemoryProvider(values: ["missing": 7, "limit": 9]),
        ])
        #expect(reader.int(forKey: "limit", default: 0) == 3)
        #expect(reader.int(forKey: "missing", default: 0) == 7)
        #expect(reader.string(forKey: "limit", default: "d") == "d")
    }

    @Test func readsAreRecordedAsExposures() async throws {
        let plane = InMemoryControlPlane(values: ["limit": 3])
        let client = try plane.makeClient()
        defer { client.close() }
        #expect(await client.ready(timeout: .seconds(5)))
        let provider = HalyardConfigProvider(client: client)
        #expect(try provider.value(forKey: ["limit"], type: .int).value?.content == .int(3))
        #expect(client.stats.exposures.recorded == 1)
        _ = try provider.snapshot().value(forKey: ["missing"], type: .int)
        #expect(client.stats.exposures.recorded == 1)
    }

    @Test func aSnapshotKeepsItsValuesWhileTheProviderMovesOn() async throws {
        let plane = InMemoryControlPlane(values: ["limit": 3, "unit": "MB"])
        let client = try plane.makeClient()
        defer { client.close() }
        #expect(await client.ready(timeout: .seconds(5)))
        let provider = HalyardConfigProvider(client: client)
        let snapshot = provider.snapshot()
        plane.replaceValues(["limit": 4, "unit": "GB"])
        let fetched = try await provider.fetchValue(forKey: ["limit"], type: .int)  // a refresh
        #expect(fetched.value?.content == .int(4))
        #expect(try provider.value(forKey: ["unit"], type: .string).value?.content == .string("GB"))
        #expect(try snapshot.value(forKey: ["limit"], type: .int).value?.content == .int(3))
        #expect(try snapshot.value(forKey: ["unit"], type: .string).value?.content == .string("MB"))
    }

    @Test func watchesFollowTheClientsChanges() async throws {
        let plane = InMemoryControlPlane(values: ["limit": 3])
        let client = try plane.makeClient()
        defer { client.close() }
        #expect(await client.ready(timeout: .seconds(5)))
        let provider = HalyardConfigProvider(client: client)
        let seen = try await cancelled(after: .seconds(10)) {
            try await provider.watchValue(forKey: ["limit"], type: .int) { updates in
                var values: [ConfigContent?] = []
                for await update in updates {
                    values.append(try update.get().value?.content)
                    if values.count == 1 {
                        plane.setValue(5, for: "limit")
                        await client.refresh()
                    }
                    if values.count == 2 { break }
                }
                return values
            }
        }
        #expect(seen == [.int(3), .int(5)])
        let limits = try await cancelled(after: .seconds(10)) {
            try await provider.watchSnapshot { updates in
                var limits: [ConfigContent?] = []
                for await snapshot in updates {
                    limits.append(try snapshot.value(forKey: ["limit"], type: .int).value?.content)
                    if limits.count == 1 {
                        plane.setValue(6, for: "limit")
                        await client.refresh()
                    }
                    if limits.count == 2 { break }
                }
                return limits
            }
        }
        #expect(limits == [.int(5), .int(6)])
    }

    @Test func aServiceReadsTheContextOfTheKey() async throws {
        let plane = InMemoryControlPlane(values: ["upload.limit": 10])
        plane.setContextValues { context in
            if case .object(let fields) = context, fields["tier"] == .string("gold") { return ["upload.limit": 100] }
            return nil
        }
        let service = try FlagService(options: plane.makeServiceOptions())
        defer { service.close() }
        let provider = HalyardConfigProvider(service: service)
        let gold = AbsoluteConfigKey(["upload", "limit"], context: ["tier": "gold"])
        let plain = AbsoluteConfigKey(["upload", "limit"])
        #expect(try await provider.fetchValue(forKey: gold, type: .int).value?.content == .int(100))
        #expect(try await provider.fetchValue(forKey: plain, type: .int).value?.content == .int(10))
        #expect(try provider.value(forKey: gold, type: .int).value?.content == .int(100))
        let reader = ConfigReader(provider: provider)
        #expect(reader.int(forKey: ConfigKey("upload.limit", context: ["tier": "gold"]), default: 0) == 100)
    }

    /// A service's value watch follows the change signal of the key's context: a change of
    /// another flag, or of the same flag for another context, emits nothing.
    @Test func aServiceValueWatchFollowsItsContextsChanges() async throws {
        let plane = InMemoryControlPlane(values: ["limit": 3, "other": 1])
        let clock = ManualClock()
        var options = plane.makeServiceOptions()
        options.clock = clock
        options.refreshAfter = .seconds(30)
        let service = try FlagService(options: options)
        defer { service.close() }
        let gold = EvaluationContext(configContext: ["tier": "gold"], base: .anonymous)
        _ = await service.flags(for: gold)
        let provider = HalyardConfigProvider(service: service)
        let key = AbsoluteConfigKey(["limit"], context: ["tier": "gold"])
        let seen = try await cancelled(after: .seconds(20)) {
            try await provider.watchValue(forKey: key, type: .int) { updates in
                var values: [ConfigContent?] = []
                for await update in updates {
                    values.append(try update.get().value?.content)
                    if values.count == 1 {
                        // Another flag changes first (no emission), then this one.
                        plane.setValue(2, for: "other")
                        clock.advance(by: .seconds(31))
                        _ = await service.flags(for: gold)
                        try await stored(service, gold) { $0.int("other", default: 0) == 2 }
                        plane.setValue(5, for: "limit")
                        clock.advance(by: .seconds(31))
                        _ = await service.flags(for: gold)
                    }
                    if values.count == 2 { break }
                }
                return values
            }
        }
        #expect(seen == [.int(3), .int(5)])
    }

    /// Waits (bounded polling) until the values held for `context` pass `check`.
    private func stored(
        _ service: FlagService, _ context: EvaluationContext, _ check: (ContextFlags) -> Bool
    ) async throws {
        for _ in 0..<2000 where !check(service.flagsIfCached(for: context)) {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(check(service.flagsIfCached(for: context)))
    }
}
