import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// Service mode shares one key table among the snapshots whose flags have the same keys in the
/// same order (`FlagTableInterner`; docs/service.md, "How bytes are counted").
@Suite struct FlagTableSharingTests {
    static func flags(_ keys: [String], _ base: Int64 = 0) -> [ServedFlag] {
        keys.enumerated().map { ServedFlag(key: $0.element, value: .int(base + Int64($0.offset))) }
    }

    @Test func aSharedTableIsUsedOnlyForTheSameKeysInTheSameOrder() {
        let keys = ["alpha.flag.with.a.long.key", "beta", "gamma.flag.with.a.long.key"]
        let storage = FlagTable.Storage(keys: keys)
        let same = Snapshot.make(
            flags: Self.flags(keys, 10), source: .network, confirmedAt: nil, contextFingerprint: "a", etag: nil,
            inheritingFrom: nil, sharing: storage)
        #expect(same.tableShared)
        for (index, key) in keys.enumerated() { #expect(same.flag(key)?.value == .int(10 + Int64(index))) }

        // Another order, fewer keys, more keys: the offered table would answer other flags'
        // indices (or none), so the snapshot builds its own.
        for other in [Array(keys.reversed()), Array(keys.prefix(2)), keys + ["delta"]] {
            let snapshot = Snapshot.make(
                flags: Self.flags(other, 20), source: .network, confirmedAt: nil, contextFingerprint: "b", etag: nil,
                inheritingFrom: nil, sharing: storage)
            #expect(!snapshot.tableShared, "\(other)")
            for (index, key) in other.enumerated() {
                #expect(snapshot.flag(key)?.value == .int(20 + Int64(index)), "\(key) in \(other)")
            }
            #expect(snapshot.flag("missing") == nil)
        }
    }

    @Test func aSharedTableIsNotCountedInTheSnapshotsBytes() {
        let keys = (0..<64).map { "flag.number.\($0).with.a.long.key" }
        let own = Snapshot(flags: Self.flags(keys), source: .network)
        let shared = Snapshot.make(
            flags: Self.flags(keys), source: .network, confirmedAt: nil, contextFingerprint: "", etag: nil,
            inheritingFrom: nil, sharing: FlagTable.Storage(keys: keys))
        #expect(shared.tableShared && !own.tableShared)
        #expect(
            own.estimatedBytes(keysShared: true) - shared.estimatedBytes(keysShared: true)
                == Snapshot.block(own.table.allocatedBytes))
    }

    @Test func theInternerHandsOutOneTablePerKeyListWithinItsBounds() {
        let interner = FlagTableInterner()
        #expect(interner.table(for: []) == nil)
        let keys = ["a", "b", "c"]
        let first = interner.table(for: Self.flags(keys))
        let again = interner.table(for: Self.flags(keys, 100))  // other values, same keys
        #expect(first != nil && first === again)
        let reversed = interner.table(for: Self.flags(keys.reversed()))
        #expect(reversed != nil && reversed !== first)
        #expect(interner.bytes > 0)
        // Bounded by the number of distinct lists: beyond it, nil (the snapshot builds its own).
        var kept = 2
        var refused = 0
        for i in 0..<(FlagTableInterner.capacity + 5) {
            if interner.table(for: Self.flags(["list-\(i)"])) != nil { kept += 1 } else { refused += 1 }
        }
        #expect(kept == FlagTableInterner.capacity)
        #expect(refused == 7)
        #expect(interner.table(for: Self.flags(keys)) === first, "a kept list is still shared when full")
    }

    @Test func aServiceSharesOneTableAcrossItsContexts() async throws {
        let plane = InMemoryControlPlane()
        plane.setContextValues { context in
            guard case .object(let m) = context, case .string(let key)? = m["targetingKey"] else { return nil }
            var values: [String: JSONValue] = ["who": .string(key)]
            for i in 0..<8 { values["flag.\(i)"] = .int(Int64(i)) }
            return values
        }
        let service = try FlagService(options: plane.makeServiceOptions())
        defer { service.close() }
        let users = ["user-1", "user-2", "user-3"]
        var views: [ContextFlags] = []
        for user in users { views.append(await service.flags(for: EvaluationContext(targetingKey: user))) }
        for (user, view) in zip(users, views) {
            #expect(view.string("who", default: "") == user)
            #expect(view.int("flag.7", default: -1) == 7)
            #expect(try #require(view.snapshot).tableShared, "\(user)'s snapshot built a table of its own")
        }
        #expect(service.tables.bytes > 0)
        #expect(service.stats.cache.internedKeyBytes == service.keys.bytes + service.tables.bytes)
    }
}
