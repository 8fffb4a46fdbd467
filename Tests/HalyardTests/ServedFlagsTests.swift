import Halyard
import HalyardTesting
import Testing

/// `client.servedFlags` (the `halyard eval` rows) and `FlagClient.sdkVersion`.
@Suite("ServedFlags")
struct ServedFlagsTests {
    @Test func offlineValuesSortedByKeyWithoutExposuresOrReadCounts() throws {
        let client = try FlagClient(offlineValues: ["b": .int(2), "a": .bool(true), "c": .string("x")])
        #expect(client.servedFlags.map(\.key) == ["a", "b", "c"])
        #expect(client.servedFlags.allSatisfy { $0.reason == .staticValue })
        #expect(client.servedFlags.first?.value == .bool(true))
        #expect(client.stats.reads == ReadStats())
    }

    @Test func onlineEmptyBeforeValuesThenTheServedSetAsSent() async throws {
        let plane = InMemoryControlPlane(values: ["on": .bool(true)])
        plane.setFlag(
            ServedFlag(key: "broken", value: nil, reason: .error, errorCode: .parseError, errorMessage: "bad"))
        plane.holdInitialization()
        let client = try plane.makeClient()
        defer { client.close() }
        #expect(client.servedFlags.isEmpty)
        plane.completeInitialization()
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
        let flags = client.servedFlags
        #expect(flags.map(\.key) == ["broken", "on"])
        #expect(flags.first?.errorCode == .parseError)
        #expect(flags.first?.errorMessage == "bad")
        #expect(client.stats.exposures.recorded == 0)
    }

    @Test func versionIsSemantic() {
        let parts = FlagClient.sdkVersion.split(separator: ".")
        #expect(parts.count == 3)
        #expect(parts.allSatisfy { Int($0) != nil })
    }
}
