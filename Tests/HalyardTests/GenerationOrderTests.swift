import Foundation
import Testing

@testable import Halyard

/// docs/architecture.md: a thread that reads the same flag with a keyed read and then with a handle (or the
/// reverse) never sees an older value after a newer one.
@Suite(.serialized) struct GenerationOrderTests {
    static func snapshot(_ value: Int, key: String = "n") -> Snapshot {
        Snapshot(flags: [ServedFlag(key: key, value: .int(Int64(value)))], source: .network)
    }

    /// The keys the tests read: a short one (the flag table's word path) and a literal longer
    /// than 15 bytes (its literal side table, filled anew for every snapshot).
    static let keys = ["n", "checkout.new-flow.literal-path"]

    /// Deterministic: reads made on the publishing thread between the two stores of a publish
    /// (the store's test hook) must be ordered keyed ≤ handle ≤ keyed.
    @Test(arguments: keys) func readsBetweenThePublishStoresAreOrdered(key: String) {
        let client = FlagClient(mode: .online, exposureSink: nil)
        client.store.publish(Self.snapshot(1, key: key))
        let handle = client.handle(key, default: -1)
        #expect(handle.value == 1)
        let seen = Locked<[Int]>([])
        client.store.setTestHookBetweenStores {
            let k1 = client.int(key, default: -1)
            let h = handle.value
            let k2 = client.int(key, default: -1)
            seen.withLock { $0 = [k1, h, k2] }
        }
        client.store.publish(Self.snapshot(2, key: key))
        client.store.setTestHookBetweenStores(nil)
        let triple = seen.value
        #expect(triple.count == 3)
        if triple.count == 3 {
            #expect(triple[0] <= triple[1] && triple[1] <= triple[2], "keyed, handle, keyed = \(triple)")
        }
        #expect(handle.value == 2)
        #expect(client.int(key, default: -1) == 2)
    }

    /// Statistical: reader threads check `k1 <= h <= k2` on every triple while a publisher
    /// publishes increasing values as fast as it can.
    @Test(arguments: keys) func keyedHandleKeyedTriplesNeverGoBackInTime(key: String) {
        let client = FlagClient(mode: .online, exposureSink: nil)
        client.store.publish(Self.snapshot(0, key: key))
        let stop = Locked(false)
        let failures = Locked([String]())
        let triples = Locked(0)
        let changesSeen = Locked(0)
        let readers = 3
        let group = DispatchGroup()
        for index in 0...readers {
            group.enter()
            Thread {
                defer { group.leave() }
                if index == readers {
                    let start = Date()
                    var value = 0
                    // At least 200 publishes however slow the machine (SnapshotStoreStressTests).
                    while value < SnapshotStoreStressTests.minimumPublishes || Date().timeIntervalSince(start) < 1.0 {
                        value += 1
                        client.store.publish(Self.snapshot(value, key: key))
                    }
                    stop.withLock { $0 = true }
                    return
                }
                let handle = client.handle(key, default: -1)
                var count = 0
                var changes = 0
                var last = 0
                while true {
                    count += 1
                    if count % 256 == 0, stop.withLock({ $0 }) { break }
                    let k1 = client.int(key, default: -1)
                    let h = handle.value
                    let k2 = client.int(key, default: -1)
                    if !(k1 <= h && h <= k2) {
                        failures.withLock { $0.append("reader \(index): k1=\(k1) h=\(h) k2=\(k2)") }
                        break
                    }
                    if k2 > last { changes += 1 }
                    last = k2
                }
                triples.withLock { $0 += count }
                changesSeen.withLock { $0 += changes }
            }.start()
        }
        #expect(group.wait(timeout: .now() + 60) == .success, "readers did not finish within 60 s")
        #expect(failures.value.isEmpty, "\(failures.value.prefix(5)) of \(triples.value) triples")
        // The readers ran while the value changed: on average each saw several publishes.
        #expect(changesSeen.value > 2 * readers, "readers saw \(changesSeen.value) changes in \(triples.value) triples")
    }
}
