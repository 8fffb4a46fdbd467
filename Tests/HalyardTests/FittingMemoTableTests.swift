import Foundation
import Testing

@testable import Halyard

/// The memo's open-addressing table (`FittingMemo.Table`) against a model, with a seeded
/// generator: random inserts and evictions, then every context is looked up, with spread-out
/// hashes and with hashes that all collide (one chain), so backward-shift deletion is
/// exercised across wrapped chains.
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
}
