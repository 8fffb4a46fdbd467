import Foundation
import Testing

@testable import Halyard

/// The memo's open-addressing table (`FittingMemo.Table`) against a model, with a seeded
/// generator: random inserts and evictions, then every context is looked up, with spread-out
/// hashes and with hashes that all collide (one chain), so backward-shift deletion is
/// exercised across wrapped chains; and the 16 MiB an entry's one-word slots can address.
@Suite struct FittingMemoTableTests {
    static func entry(_ id: Int, keys: FittingMemo.HashKeys) throws -> (FittingMemo.Entry, UInt64) {
        let context = EvaluationContext(targetingKey: "user-\(id)", attributes: ["n": .int(Int64(id))])
        let fitted = try context.fitted()
        return FittingMemo.withProbe(context, keys: keys) { probe in
            (FittingMemo.Entry(probe, privateAttributes: [], fitted: fitted), probe.hash)
        }
    }

    static func find(_ table: FittingMemo.Table, _ id: Int, keys: FittingMemo.HashKeys) -> FittedContext? {
        let context = EvaluationContext(targetingKey: "user-\(id)", attributes: ["n": .int(Int64(id))])
        return FittingMemo.withProbe(context, keys: keys) { table.find($0, []) }
    }

    @Test(arguments: [false, true])
    func randomInsertsAndEvictionsAgreeWithAModel(colliding: Bool) throws {
        let keys: FittingMemo.HashKeys = colliding ? .colliding : .random()
        var generator = SplitMix64(seed: colliding ? 7 : 11)
        let universe = colliding ? 60 : 400
        let entries = try (0..<universe).map { try Self.entry($0, keys: keys) }
        var table = FittingMemo.Table()
        var model = Set<Int>()
        for step in 0..<(colliding ? 600 : 4_000) {
            let id = Int(generator.next() % UInt64(universe))
            if generator.next() % 3 == 0, let victim = table.removeAny() {
                let removed = try #require(Int(victim.fitted.targetingKey.dropFirst(5)))
                #expect(model.remove(removed) != nil, "step \(step): evicted \(removed), which was not held")
            } else if !model.contains(id) {
                table.insert(entries[id].0, hash: entries[id].1)
                model.insert(id)
            }
            #expect(table.count == model.count, "step \(step)")
            #expect(table.slots.count >= 2 * table.count, "step \(step): more than half full")
            if step % 50 == 0 || colliding {
                for other in 0..<universe {
                    let found = Self.find(table, other, keys: keys)
                    #expect(
                        (found?.targetingKey == "user-\(other)") == model.contains(other)
                            && (found == nil) != model.contains(other),
                        "step \(step): user-\(other) held \(model.contains(other)), found \(found?.targetingKey ?? "nothing")"
                    )
                }
            }
        }
        while let victim = table.removeAny() { model.remove(Int(victim.fitted.targetingKey.dropFirst(5)) ?? -1) }
        #expect(model.isEmpty && table.count == 0)
    }

    /// An entry's slots address 16 MiB of bytes: a context written longer is never held and
    /// matches nothing (its records' starts would not fit the slots' 24 bits), and contexts
    /// just under the bound are held and found.
    @Test func aContextLongerThanTheSlotsAddressIsNeverHeld() throws {
        let small = try EvaluationContext(targetingKey: "u").fitted()
        let memo = FittingMemo(maxCount: 64, maxBytes: 1 << 36)  // shards' byte share far above 16 MiB
        let long = String(repeating: "x", count: FittingMemo.Entry.maxKeyBytes)
        let big = EvaluationContext(targetingKey: "big", attributes: ["a": .string("1"), "blob": .string(long)])
        var fits = 0
        let fit = { (_: EvaluationContext) throws(ContextError) -> FittedContext in
            fits += 1
            return small
        }
        _ = try memo.fitted(big, fit: fit)
        _ = try memo.fitted(big, fit: fit)
        #expect(fits == 2, "the long context was held: the second request did not fit it again")
        #expect(memo.totals.count == 0)
        let matched = FittingMemo.withProbe(big, keys: .random()) { probe in
            FittingMemo.Entry(probe, privateAttributes: [], fitted: small).matches(probe, [])
        }
        #expect(!matched, "an entry past the slots' address matched its own probe")

        let under = EvaluationContext(
            targetingKey: "under",
            attributes: ["a": .string("1"), "blob": .string(String(repeating: "y", count: 1 << 20))])
        _ = try memo.fitted(under, fit: fit)
        _ = try memo.fitted(under, fit: fit)
        #expect(fits == 3, "a 1 MiB context was not held")
    }
}

/// `FlagTable.equal` (the byte comparison of the flag table's keys) and `FittingMemo.Entry.same`
/// (the memo's, of heads and records), exhaustively over lengths 0-80 (below, at and across
/// their 4-, 8- and 16-byte steps and the overlapping last ones), with one byte changed at
/// every position, and equal copies.
@Suite struct ByteEqualityTests {
    @Test(arguments: [false, true])
    func everyLengthAndEveryDifferingPosition(memo: Bool) {
        let equal: (UnsafeRawPointer, UnsafeRawPointer, Int) -> Bool =
            memo ? { FittingMemo.Entry.same($0, $1, $2) } : { FlagTable.equal($0, $1, $2) }
        var generator = SplitMix64(seed: 0x5A3E_B7E5)
        let a = UnsafeMutableRawPointer.allocate(byteCount: 88, alignment: 8)
        let b = UnsafeMutableRawPointer.allocate(byteCount: 88, alignment: 8)
        defer {
            a.deallocate()
            b.deallocate()
        }
        for n in 0...80 {
            // Offset 1: the 8-byte loads are unaligned, as a record's are.
            for i in 0..<88 {
                a.storeBytes(of: UInt8(truncatingIfNeeded: generator.next()), toByteOffset: i, as: UInt8.self)
            }
            b.copyMemory(from: a, byteCount: 88)
            #expect(equal(a + 1, b + 1, n), "equal copies of \(n) bytes")
            for i in 0..<n {
                let flip = UInt8(1 + generator.next() % 255)
                let old = b.load(fromByteOffset: 1 + i, as: UInt8.self)
                b.storeBytes(of: old ^ flip, toByteOffset: 1 + i, as: UInt8.self)
                #expect(!equal(a + 1, b + 1, n), "\(n) bytes differing at \(i)")
                b.storeBytes(of: old, toByteOffset: 1 + i, as: UInt8.self)
            }
            // A difference just past the end is not looked at.
            b.storeBytes(of: ~a.load(fromByteOffset: 1 + n, as: UInt8.self), toByteOffset: 1 + n, as: UInt8.self)
            #expect(equal(a + 1, b + 1, n), "\(n) bytes, the byte after them differing")
        }
    }
}
