import CHalyardAtomics
import Foundation
import Testing

@testable import Halyard

/// Concurrency proof for the snapshot store (docs/architecture.md): run under
/// `swift test --sanitize=thread` and `--sanitize=address` as well (see .ci/run).
///
/// Every snapshot the publisher builds holds the same value `g` in all of its flags, so a
/// reader that ever sees two different values inside one protected read has seen a torn
/// snapshot. Values only grow, so a reader that sees a value go down has seen time run
/// backwards. A live counter tracks every snapshot ever built.
@Suite(.serialized) struct SnapshotStoreStressTests {
    /// Literals, as call sites pass them: eight longer than 15 bytes (the flag table's literal
    /// side table, filled anew by the readers of every snapshot) and eight short ones (its word
    /// path).
    static let keys = [
        "flag.0", "flag.1", "flag.2", "flag.3", "flag.4", "flag.5", "flag.6", "flag.7",
        "checkout.new-flow.8", "profile.avatar-upload.9", "pricing.trial-days.10", "feed.infinite-scroll.11",
        "onboarding.consent.12", "search.typeahead.13", "banner.dismissible.14", "cart.coupon-field.15",
    ]

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

    struct AcceptingTransport: FlagTransport {
        func send(_ request: TransportRequest) async throws -> TransportResponse { TransportResponse(status: 202) }
    }

    /// A client whose reads record exposures (recorder on, no ticker, uploads accepted).
    static func exposedClient() throws -> FlagClient {
        let recorder = ExposureRecorder(
            options: ExposureOptions(), clock: SystemClock(), transport: AcceptingTransport(),
            endpoint: try #require(URL(string: "http://127.0.0.1:9")),
            meta: ExposureMeta(sdk: "stress", version: "1", appId: "s", installId: "s"), startsTicker: false)
        return FlagClient(mode: .online, exposureSink: recorder)
    }

    /// The publishers of the stress tests run for their duration and for at least this many
    /// publishes, however slow the machine: under a sanitizer, with ~100 suites starting at once
    /// on two cores, 1.5 s once gave only 85. What a test checks is that its readers saw the
    /// publishes, counted as the changes of value they observed.
    static let minimumPublishes = 200

    /// The fence mode this process runs (`HALYARD_FENCE`), for messages.
    static var fenceMode: String { hal_hazard_fence_mode() == 1 ? "membarrier" : "symmetric" }

    @Test func readersNeverSeeTornOrOlderSnapshotsAndRetiredOnesAreFreed() throws {
        let counter = LiveCounter()
        // Exposures on: every new snapshot starts with empty slots (not inherited), so the first
        // read of each flag in each snapshot takes the exposure slow path (retain, record outside
        // the protection, release) while the publisher keeps retiring snapshots.
        let client = try Self.exposedClient()
        client.store.publish(Self.snapshot(0, counter: counter, fingerprint: "a"))
        let stop = Locked(false)
        let failures = Locked([String]())
        let maxLive = Locked(0)
        let changesSeen = Locked(0)
        let readerCount = 12
        let duration: Double = 1.5

        Self.onThreads(readerCount + 1) { index in
            if index == readerCount {
                // The publisher: as fast as it can, switching "contexts" (fingerprints) too.
                let start = Date()
                var value = 0
                while value < Self.minimumPublishes || Date().timeIntervalSince(start) < duration {
                    value += 1
                    client.store.publish(
                        Self.snapshot(value, counter: counter, fingerprint: value % 50 == 0 ? "b" : "a"))
                    let live = counter.value
                    maxLive.withLock { $0 = max($0, live) }
                }
                stop.withLock { $0 = true }
                return
            }
            var handles = Self.keys.map { client.handle($0, default: -1) }
            var lastKeyed = 0
            var lastHandle = 0
            var iterations = 0
            var changes = 0
            defer { changesSeen.withLock { $0 += changes } }
            func fail(_ message: String) {
                failures.withLock { $0.append("reader \(index) (\(Self.fenceMode)): \(message)") }
            }
            while true {
                iterations += 1
                if iterations % 64 == 0, stop.withLock({ $0 }) { break }
                // One protected read across all flags: all values must be equal, and the
                // snapshot must be alive (registered in the counter) from start to end.
                let check = client.store.withCurrent { snapshot -> String? in
                    guard let snapshot else { return "no snapshot" }
                    let serial = snapshot.liveSerial
                    guard counter.isLive(serial) else { return "snapshot freed while protected (at start)" }
                    let first = snapshot.entries[0].bits
                    for i in 0..<snapshot.count where snapshot.entries[i].bits != first { return "torn" }
                    guard counter.isLive(serial) else { return "snapshot freed while protected (at end)" }
                    return nil
                }
                if let check {
                    fail(check)
                    break
                }
                let key = iterations % Self.keys.count
                // Keyed, handle, keyed on the same flag: k1 <= h <= k2 (docs/architecture.md).
                let k1 = client.int(Self.keys[key], default: -1)
                let h = handles[key].value
                let k2 = client.int(Self.keys[key], default: -1)
                let detail = client.intDetail(Self.keys[(iterations + 3) % Self.keys.count], default: -1)
                if k1 < lastKeyed || h < lastHandle || k1 < 0 || h < 0 || detail.errorCode != nil
                    || !(k1 <= h && h <= k2)
                {
                    fail("keyed=\(k1)/\(lastKeyed) handle=\(h)/\(lastHandle) k2=\(k2) detail=\(detail.value)")
                    break
                }
                if k2 > lastKeyed { changes += 1 }
                lastKeyed = k2
                lastHandle = h
                // Handles created and dropped while others read: a fresh handle must agree with
                // the order too, and replaces the old one.
                if iterations % 97 == 0 {
                    let fresh = client.handle(Self.keys[key], default: -1)
                    let value = fresh.value
                    if value < h {
                        fail("fresh handle \(value) < handle \(h)")
                        break
                    }
                    handles[key] = fresh
                    if client.handle("missing", default: -7).value != -7 {
                        fail("missing flag served a value")
                        break
                    }
                }
            }
        }

        #expect(failures.value.isEmpty, "\(failures.value.prefix(5))")
        // The readers ran while the snapshots changed: on average each saw several publishes.
        #expect(changesSeen.value > 2 * readerCount, "readers saw \(changesSeen.value) changes of value")
        // Bounded: at most one retired snapshot per reading thread can wait, plus the current
        // one, the one being built, and one retained per reader by an exposure slow path.
        #expect(maxLive.value <= 2 * readerCount + 3, "max live \(maxLive.value)")
        // Once readers have moved on, everything but the current snapshot is freed.
        #expect(client.store.reclaim() == 0)
        #expect(counter.value == 1)
    }

    /// Every snapshot lists the keys in another order, so each key's index moves at every
    /// publish, and its literal side table starts empty: readers fill it concurrently, while
    /// the publisher replaces it. Each flag's value is `generation * 100 + key number`, so a
    /// read that found another key's index serves another key's number, and a read of an
    /// older snapshot than one this thread already read serves a smaller generation. Literal
    /// keys, heap copies of them (the byte path) and detail reads are interleaved.
    @Test func literalKeysNeverReadAnotherKeysValueOrAnOlderOne() throws {
        let counter = LiveCounter()
        let keys = Self.keys
        let heapKeys = keys.map { String(decoding: Array($0.utf8), as: UTF8.self) }
        @Sendable func snapshot(_ generation: Int) -> Snapshot {
            var random = SplitMix64(seed: UInt64(generation))
            let order = keys.indices.shuffled(using: &random)
            return Snapshot(
                flags: order.map { ServedFlag(key: keys[$0], value: .int(Int64(generation * 100 + $0))) },
                source: .network, liveCounter: counter)
        }
        let client = try Self.exposedClient()
        client.store.publish(snapshot(1))
        let stop = Locked(false)
        let failures = Locked([String]())
        let changesSeen = Locked(0)
        let reads = Locked(0)
        let readerCount = 8
        Self.onThreads(readerCount + 1) { index in
            if index == readerCount {
                let start = Date()
                var generation = 1
                while generation < Self.minimumPublishes || Date().timeIntervalSince(start) < 1.5 {
                    generation += 1
                    client.store.publish(snapshot(generation))
                }
                stop.withLock { $0 = true }
                return
            }
            var last = 0
            var iterations = 0
            var changes = 0
            var random = SplitMix64(seed: UInt64(index))
            func fail(_ message: String) {
                failures.withLock { $0.append("reader \(index) (\(Self.fenceMode)): \(message)") }
            }
            reading: while true {
                iterations += 1
                if iterations % 64 == 0, stop.withLock({ $0 }) { break reading }
                let k = Int(random.next() % UInt64(keys.count))
                let value: Int
                switch iterations % 4 {
                case 0: value = client.int(heapKeys[k], default: -1)
                case 1:
                    let detail = client.intDetail(keys[k], default: -1)
                    if detail.errorCode != nil || detail.key != keys[k] {
                        fail("detail of \(keys[k]): \(detail.key) \(String(describing: detail.errorCode))")
                        break reading
                    }
                    value = detail.value
                default: value = client.int(keys[k], default: -1)
                }
                if value < 0 || value % 100 != k {
                    fail("\(keys[k]) served \(value): another key's value")
                    break reading
                }
                if value / 100 < last {
                    fail("\(keys[k]) served generation \(value / 100) after \(last)")
                    break reading
                }
                if value / 100 > last { changes += 1 }
                last = value / 100
                if iterations % 97 == 0, client.int("checkout.new-flow.absent", default: -7) != -7 {
                    fail("a missing literal served a value")
                    break reading
                }
            }
            reads.withLock { $0 += iterations }
            changesSeen.withLock { $0 += changes }
        }
        #expect(failures.value.isEmpty, "\(failures.value.prefix(5)) of \(reads.value) reads")
        #expect(changesSeen.value > 2 * readerCount, "readers saw \(changesSeen.value) changes of generation")
        #expect(client.store.reclaim() == 0)
        #expect(counter.value == 1)
    }

    /// The live registry's own check, with nothing else in the protected read that could crash
    /// on freed memory first: readers hold each protection for a while and then ask whether the
    /// snapshot they protect (by the serial read at the start) is still registered. With the
    /// hazard check removed from reclamation this fails with "freed while protected" instead of
    /// crashing the runner (a mutant the plain live count could not see).
    @Test func liveRegistrySeesASnapshotFreedWhileProtected() {
        let counter = LiveCounter()
        let store = SnapshotStore()
        store.publish(Self.snapshot(0, counter: counter, fingerprint: "a"))
        let stop = Locked(false)
        let freed = Locked(0)
        let readerCount = 4
        Self.onThreads(readerCount + 1) { index in
            if index == readerCount {
                let start = Date()
                var value = 0
                while Date().timeIntervalSince(start) < 0.5 {
                    value += 1
                    store.publish(Self.snapshot(value, counter: counter, fingerprint: "a"))
                }
                stop.withLock { $0 = true }
                return
            }
            var iterations = 0
            while true {
                iterations += 1
                if iterations % 16 == 0, stop.withLock({ $0 }) { break }
                let alive = store.withCurrentAddress { address -> Bool in
                    guard let address else { return true }
                    let serial = Unmanaged<Snapshot>.fromOpaque(address)._withUnsafeGuaranteedRef { $0.liveSerial }
                    var spin = 0
                    for i in 0..<2000 { spin &+= i }
                    return Self.blackHole(spin) >= 0 && counter.isLive(serial)
                }
                if !alive { freed.withLock { $0 += 1 } }
            }
        }
        #expect(freed.value == 0, "\(freed.value) snapshots freed while protected (\(Self.fenceMode))")
        #expect(store.reclaim() == 0)
        #expect(counter.value == 1)
    }

    @inline(never) static func blackHole(_ x: Int) -> Int { x }

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

    /// The deferred pass backs off: 20 ms, doubling, at most 1 s.
    @Test func deferredPassBacksOff() {
        var delays = [SnapshotStore.deferredPassDelays.first]
        while delays.count < 10 { delays.append(SnapshotStore.nextDeferredDelay(after: delays.last ?? 0)) }
        #expect(delays == [20, 40, 80, 160, 320, 640, 1000, 1000, 1000, 1000])
    }

    /// `HALYARD_FENCE` selects the fence mode once per process (CI runs this suite both ways).
    @Test func fenceModeFollowsTheEnvironment() {
        let requested = ProcessInfo.processInfo.environment["HALYARD_FENCE"]
        let mode = hal_hazard_fence_mode()
        if requested == "symmetric" {
            #expect(mode == 0)
        } else if requested == "membarrier" {
            #if os(Linux)
                #expect(mode == 1, "membarrier requested but not registered")
            #endif
        }
    }
}
