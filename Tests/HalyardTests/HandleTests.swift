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
}
