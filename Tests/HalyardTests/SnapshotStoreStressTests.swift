import CHalyardAtomics
import Foundation
import Testing

@testable import Halyard

/// Concurrency proof for the snapshot store (SPEC §3): run under
/// `swift test --sanitize=thread` and `--sanitize=address` as well (see .ci/run).
///
/// Every snapshot the publisher builds holds the same value `g` in all of its flags, so a
/// reader that ever sees two different values inside one protected read has seen a torn
/// snapshot. Values only grow, so a reader that sees a value go down has seen time run
/// backwards. A live counter tracks every snapshot ever built.
@Suite(.serialized) struct SnapshotStoreStressTests {
    static let keys = (0..<16).map { "flag.\($0)" }

    static func snapshot(_ value: Int, counter: LiveCounter, fingerprint: String) -> Snapshot {
        Snapshot(
            flags: keys.map { ServedFlag(key: $0, value: .int(Int64(value)), variant: "v\(value % 3)") },
            source: .network, contextFingerprint: fingerprint, liveCounter: counter)
    }

    /// Runs `body` on `count` threads (more threads than cores on purpose) and waits.
    static func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        let group = DispatchGroup()
        for index in 0..<count {
            group.enter()
            let thread = Thread {
                body(index)
                group.leave()
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        group.wait()
    }

    @Test func readersNeverSeeTornOrOlderSnapshotsAndRetiredOnesAreFreed() throws {
        let counter = LiveCounter()
        let client = FlagClient(mode: .online, exposureSink: nil)
        client.store.publish(Self.snapshot(0, counter: counter, fingerprint: "a"))
        let stop = Locked(false)
        let failures = Locked([String]())
        let maxLive = Locked(0)
        let published = Locked(0)
        let readerCount = 12
        let duration: Double = 1.5

        Self.onThreads(readerCount + 1) { index in
            if index == readerCount {
                // The publisher: as fast as it can, switching "contexts" (fingerprints) too.
                let start = Date()
                var value = 0
                while Date().timeIntervalSince(start) < duration {
                    value += 1
                    client.store.publish(
                        Self.snapshot(value, counter: counter, fingerprint: value % 50 == 0 ? "b" : "a"))
                    let live = counter.value
                    maxLive.withLock { $0 = max($0, live) }
                }
                published.withLock { $0 = value }
                stop.withLock { $0 = true }
                return
            }
            let handles = Self.keys.map { client.handle($0, default: -1) }
            var lastKeyed = 0
            var lastHandle = 0
            var iterations = 0
            while true {
                iterations += 1
                if iterations % 64 == 0, stop.withLock({ $0 }) { break }
                // One protected read across all flags: all values must be equal.
                let torn = client.store.withCurrent { snapshot -> Bool in
                    guard let snapshot else { return true }
                    let first = snapshot.entries[0].bits
                    for i in 0..<snapshot.count where snapshot.entries[i].bits != first { return true }
                    return false
                }
                let keyed = client.int(Self.keys[iterations % Self.keys.count], default: -1)
                let handled = handles[iterations % handles.count].value
                let detail = client.intDetail(Self.keys[(iterations + 3) % Self.keys.count], default: -1)
                if torn || keyed < lastKeyed || handled < lastHandle || keyed < 0 || handled < 0
                    || detail.errorCode != nil
                {
                    failures.withLock {
                        $0.append(
                            "reader \(index): torn=\(torn) keyed=\(keyed)/\(lastKeyed) handle=\(handled)/\(lastHandle)")
                    }
                    break
                }
                lastKeyed = keyed
                lastHandle = handled
            }
        }

        #expect(failures.value.isEmpty, "\(failures.value.prefix(5))")
        #expect(published.value > 100)
        // Bounded: at most one retired snapshot per reading thread can wait, plus the current
        // one and the one being built.
        #expect(maxLive.value <= readerCount + 3, "max live \(maxLive.value)")
        // Once readers have moved on, everything but the current snapshot is freed.
        #expect(client.store.reclaim() == 0)
        #expect(counter.value == 1)
    }

    @Test func deferredPassFreesRetiredSnapshotsWithoutAnotherPublish() throws {
        let counter = LiveCounter()
        let store = SnapshotStore()
        store.publish(Self.snapshot(1, counter: counter, fingerprint: "a"))
        // Hold a protected read on another thread while a publish retires the snapshot.
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        Thread {
            store.withCurrent { _ in
                entered.signal()
                release.wait()
            }
            done.signal()
        }.start()
        entered.wait()
        store.publish(Self.snapshot(2, counter: counter, fingerprint: "a"))
        #expect(counter.value == 2)  // still protected: not freed
        #expect(store.retiredCount == 1)
        release.signal()
        done.wait()
        // No further publish: the deferred pass frees it.
        let deadline = Date().addingTimeInterval(5)
        while counter.value != 1 && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(counter.value == 1)
        #expect(store.retiredCount == 0)
    }

    @Test func threadChurnReusesHazardRecords() {
        let store = SnapshotStore()
        store.publish(Snapshot(flags: [ServedFlag(key: "a", value: .bool(true))], source: .offline))
        for _ in 0..<20 {
            Self.onThreads(8) { _ in _ = store.withCurrent { $0?.count } }
        }
        let records = Int(hal_hazard_record_count())
        // 160 short-lived threads, at most ~8 alive at once (plus the test runner's threads).
        #expect(records < 64, "\(records) hazard records")
    }
}
