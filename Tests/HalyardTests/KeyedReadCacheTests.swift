import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// The client's keyed-read table (docs/architecture.md, "Keyed reads"): small and literal keys
/// answered from a per-(key, type) answer tagged with the snapshot generation, every other key
/// through the flag table, with the same values, counters and exposures either way.
@Suite struct KeyedReadCacheTests {
    /// Literals longer than 15 bytes and small strings, as call sites pass them.
    static let values: [String: JSONValue] = [
        "checkout.new-flow.literal-path": .bool(true),
        "pricing.annual-discount-percent": .int(15),
        "search.ranking.boost-new-items": .double(0.25),
        "banner.text": .string("hi"),
        "on": .bool(false),
        "limit": .int(7),
    ]

    /// The slots `n` keyed reads take: none where the layout reads are off (32-bit, or
    /// `HALYARD_LAYOUT_READS=off`), where every key is read through the flag table.
    static func slots(_ n: Int) -> Int { StringLayout.available ? n : 0 }

    /// A heap copy of `s` (never small or literal when longer than 15 bytes).
    static func heap(_ s: String) -> String { String(decoding: Array(s.utf8), as: UTF8.self) }

    @Test func smallAndLiteralKeysTakeOneSlotPerTypeOtherKeysNone() throws {
        let client = try FlagClient(offlineValues: Self.values)
        #expect(
            client.keyedReads.enabled == StringLayout.available, "the table is on exactly where the layout reads are")
        for _ in 0..<3 {
            #expect(client.bool("checkout.new-flow.literal-path", default: false) == true)
            #expect(client.int("pricing.annual-discount-percent", default: 0) == 15)
            #expect(client.double("search.ranking.boost-new-items", default: 0) == 0.25)
            #expect(client.bool("on", default: true) == false)
            #expect(client.int("limit", default: 0) == 7)
        }
        #expect(client.keyedReads.filled == Self.slots(5))
        // The same Int flag read as a Double is another (key, type): its own slot.
        #expect(client.double("limit", default: 0) == 7)
        #expect(client.keyedReads.filled == Self.slots(6))
        // Heap keys: the same answers, no slot.
        let heapKey = Self.heap("checkout.new-flow.literal-path")
        #expect(!KeyedReadCache.qualifies(heapKey))
        #expect(client.bool(heapKey, default: false) == true)
        #expect(client.int(Self.heap("pricing.annual-discount-percent"), default: 0) == 15)
        // Missing keys: the default, counted, no slot.
        #expect(client.bool("checkout.new-flow.not-a-flag", default: true) == true)
        #expect(client.bool("nope", default: true) == true)
        #expect(client.keyedReads.filled == Self.slots(6))
        #expect(client.stats.reads.flagNotFound == 2)
    }

    /// Heap keys built and freed one after another: the allocator hands the next one the same
    /// address, so a table that took heap keys would serve the previous key's answer.
    @Test func heapKeysWhoseAddressesAreReusedReadTheirOwnValues() throws {
        var values: [String: JSONValue] = [:]
        for i in 0..<300 { values["heap.key.number.\(i)"] = .int(Int64(i)) }
        let client = try FlagClient(offlineValues: values)
        for i in 0..<300 {
            let value = client.int(Self.heap("heap.key.number.\(i)"), default: -1)
            if value != i {
                Issue.record("heap key \(i) read \(value)")
                return
            }
        }
        #expect(client.keyedReads.filled == Self.slots(0))
    }

    @Test func answersFollowEveryPublish() throws {
        let client = try FlagClient(offlineValues: Self.values)
        for round in 1...50 {
            try client.setOfflineValues([
                "checkout.new-flow.literal-path": .bool(round % 2 == 0),
                "pricing.annual-discount-percent": .int(Int64(round)),
                "limit": .int(Int64(round * 10)),
                "on": .bool(round % 3 == 0),
            ])
            // Twice: the first read refreshes the answer, the second is served from it.
            for _ in 0..<2 {
                #expect(client.bool("checkout.new-flow.literal-path", default: false) == (round % 2 == 0))
                #expect(client.int("pricing.annual-discount-percent", default: -1) == round)
                #expect(client.int("limit", default: -1) == round * 10)
                #expect(client.double("limit", default: -1) == Double(round * 10))
                #expect(client.bool("on", default: true) == (round % 3 == 0))
            }
        }
        // A flag that leaves the snapshot: its answer says so, and every read counts it.
        try client.setOfflineValues(["on": .bool(true)])
        for _ in 0..<4 { #expect(client.int("limit", default: -1) == -1) }
        #expect(client.stats.reads.flagNotFound == 4)
        #expect(client.bool("on", default: false) == true)
    }

    @Test func failuresServedFromAnAnswerAreCountedOnEveryRead() throws {
        let client = try FlagClient(offlineValues: Self.values)
        for _ in 0..<5 {
            #expect(client.bool("banner.text", default: true) == true)  // a String read as Bool
            #expect(client.int("checkout.new-flow.literal-path", default: 3) == 3)  // a Bool read as Int
        }
        #expect(client.keyedReads.filled == Self.slots(2), "served keys take a slot even when the type does not match")
        #expect(client.stats.reads.typeMismatch == 10)
        #expect(client.boolDetail("banner.text", default: false).errorCode == .typeMismatch)
    }

    @Test func aFullTableServesEveryKeyThroughTheFlagTable() throws {
        var values: [String: JSONValue] = [:]
        let count = KeyedReadCache.slotCount + 200
        for i in 0..<count { values["k\(i)"] = .int(Int64(i)) }
        let client = try FlagClient(offlineValues: values)
        for pass in 0..<2 {
            for i in 0..<count {
                let value = client.int("k\(i)", default: -1)
                if value != i {
                    Issue.record("pass \(pass): k\(i) read \(value)")
                    return
                }
            }
        }
        #expect(client.keyedReads.filled <= KeyedReadCache.slotCount)
        #expect(
            !StringLayout.available || client.keyedReads.filled > KeyedReadCache.slotCount / 2,
            "the table was barely used")
        #expect(client.stats.reads.flagNotFound == 0)
    }

    /// Reads answered from the table record exposures exactly as reads through the snapshot:
    /// once per window, again in a new window, and never for a failed read.
    @Test func cachedReadsRecordOncePerWindow() async throws {
        let plane = InMemoryControlPlane(values: [
            "checkout.new-flow.literal-path": .bool(true), "n": .int(3), "s": .string("x"),
        ])
        let clock = ManualClock()
        let client = try await ClientExposureTests.client(plane, clock: clock) {
            $0.exposures.dedupWindow = .seconds(300)
        }
        for _ in 0..<1000 {
            #expect(client.bool("checkout.new-flow.literal-path", default: false) == true)
            #expect(client.int("n", default: 0) == 3)
            _ = client.bool("s", default: false)
        }
        try await Wait.result("flushExposures()") { await client.flushExposures() }
        #expect(ClientExposureTests.keys(plane) == ["checkout.new-flow.literal-path", "n"])
        clock.advance(by: .seconds(400))
        client.exposureRecorder?.tick()
        for _ in 0..<1000 {
            _ = client.bool("checkout.new-flow.literal-path", default: false)
            _ = client.int("n", default: 0)
        }
        try await Wait.result("flushExposures()") { await client.flushExposures() }
        #expect(
            ClientExposureTests.keys(plane) == [
                "checkout.new-flow.literal-path", "checkout.new-flow.literal-path", "n", "n",
            ])
        #expect(client.stats.reads.typeMismatch == 1000)
        client.close()
    }

    /// Fresh clients, readers adding the same keys at once while values are published: every
    /// read serves its own key's value, never an older publish than one the thread already saw.
    @Test func concurrentAddsAndPublishesServeOwnAndNewerValues() throws {
        let keys = SnapshotStoreStressTests.keys
        for trial in 0..<4 {
            let client = try FlagClient(offlineValues: [:])
            @Sendable func values(_ generation: Int) -> [String: JSONValue] {
                Dictionary(uniqueKeysWithValues: keys.enumerated().map { ($1, .int(Int64(generation * 100 + $0))) })
            }
            try client.setOfflineValues(values(1))
            let failures = Locked([String]())
            let stop = Locked(false)
            SnapshotStoreStressTests.onThreads(5) { index in
                if index == 4 {
                    for generation in 2...300 { try? client.setOfflineValues(values(generation)) }
                    stop.withLock { $0 = true }
                    return
                }
                var last = 0
                var iterations = 0
                while true {
                    iterations += 1
                    if iterations % 64 == 0, stop.withLock({ $0 }) { break }
                    let k = (iterations &* 7 &+ index) % keys.count
                    let value = client.int(keys[k], default: -1)
                    if value < 0 || value % 100 != k || value / 100 < last {
                        failures.withLock {
                            $0.append("trial \(trial) reader \(index): \(keys[k]) read \(value) after \(last)")
                        }
                        break
                    }
                    last = value / 100
                }
            }
            #expect(failures.value.isEmpty, "\(failures.value.prefix(3))")
        }
    }
}
