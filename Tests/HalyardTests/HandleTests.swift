import Testing

@testable import Halyard

@Suite struct HandleTests {
    @Test func handleFollowsSnapshotSwaps() throws {
        let flags = try FlagClient(offlineValues: ["a": .bool(true), "n": .int(1), "s": .string("one")])
        let a = flags.handle("a", default: false)
        let n = flags.handle("n", default: 0)
        let d = flags.handle("n", default: 0.0)
        let s = flags.handle("s", default: "")
        let j = flags.handle("s", default: JSONValue.null)
        #expect(a.value == true)
        #expect(n.value == 1)
        #expect(d.value == 1.0)
        #expect(s.value == "one")
        #expect(j.value == .string("one"))
        try flags.setOfflineValues(["a": .bool(false), "n": .int(2), "s": .string("two")])
        #expect(a.value == false)
        #expect(n.value == 2)
        #expect(d.value == 2.0)
        #expect(s.value == "two")
        try flags.setOfflineValues(["n": .double(2.5)])
        #expect(a.value == false)  // default: missing now
        #expect(a.detail.errorCode == .flagNotFound)
        #expect(n.value == 0)  // fractional never narrows
        #expect(n.detail.errorCode == .typeMismatch)
        #expect(d.value == 2.5)
        try flags.setOfflineValues(["a": .bool(true)])
        #expect(a.value == true)
    }

    @Test func handleBeforeValuesServesDefaultThenResolves() {
        let client = FlagClient(mode: .online, exposureSink: nil)
        let h = client.handle("x", default: 5)
        #expect(h.value == 5)
        #expect(h.detail.errorCode == .providerNotReady)
        client.store.publish(Snapshot(flags: [ServedFlag(key: "x", value: .int(9))], source: .network))
        #expect(h.value == 9)
        #expect(h.detail.value == 9)
        #expect(h.detail.errorCode == nil)
    }

    @Test func handleOnServedErrorAndCodeDefault() {
        let client = FlagClient(mode: .online, exposureSink: nil)
        client.store.publish(
            Snapshot(
                flags: [
                    ServedFlag(key: "e", value: .bool(true), errorCode: .targetingKeyMissing),
                    ServedFlag(key: "c", value: nil, reason: .disabled),
                ], source: .network))
        #expect(client.handle("e", default: false).value == false)
        #expect(client.handle("e", default: false).detail.errorCode == .targetingKeyMissing)
        #expect(client.handle("c", default: true).value == true)
        #expect(client.handle("c", default: true).detail.reason == .disabled)
    }

    @Test func handlesForTheSameKeyAndTypeShareOneCache() throws {
        let flags = try FlagClient(offlineValues: ["a": .bool(true), "n": .int(1)])
        let a1 = flags.handle("a", default: false)
        let a2 = flags.handle("a", default: true)
        let n = flags.handle("n", default: 0)
        let nd = flags.handle("n", default: 0.0)
        #expect(a1.cache == a2.cache)
        #expect(a1.cache != n.cache)
        #expect(n.cache != nd.cache)  // same key, another type: another outcome
        #expect(a1.key == "a")
        #expect(a2.defaultValue == true)
        // Making handles in a loop does not grow anything.
        for _ in 0..<1000 { #expect(flags.handle("a", default: false).cache == a1.cache) }
    }

    @Test func aHandleOutlivingItsClientServesTheDefault() throws {
        var flags: FlagClient? = try FlagClient(offlineValues: ["a": .bool(true), "s": .string("x")])
        weak let weakFlags = flags
        let a = try #require(flags).handle("a", default: false)
        let s = try #require(flags).handle("s", default: "default")
        #expect(a.value == true)
        #expect(s.value == "x")
        flags = nil
        #expect(weakFlags == nil, "the handles keep their client alive")
        #expect(a.value == false)
        #expect(a.detail.errorCode == .providerNotReady)
        #expect(s.value == "default")
    }

    /// Handles kept the ways applications keep them all read the same.
    @Test func handlesReadTheSameWhereverTheyAreKept() throws {
        final class Controller: Sendable {
            let enabled: FlagHandle<Bool>
            init(_ enabled: FlagHandle<Bool>) { self.enabled = enabled }
        }
        struct Feature {
            let name: String
            let enabled: FlagHandle<Bool>
        }
        let flags = try FlagClient(offlineValues: ["a": .bool(true)])
        let handle = flags.handle("a", default: false)
        let array = [handle, handle]
        let controller = Controller(handle)
        let feature = Feature(name: String(repeating: "f", count: 40), enabled: handle)
        #expect(array[1].value && controller.enabled.value && feature.enabled.value)
        try flags.setOfflineValues(["a": .bool(false)])
        #expect(!array[1].value && !controller.enabled.value && !feature.enabled.value)
    }
}
