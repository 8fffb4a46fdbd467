import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// The warm path's memo (SPEC §12): bounded, and never confuses two contexts.
@Suite struct FittingMemoTests {
    @Test func theMemoIsBoundedByCountAndBytes() throws {
        let memo = FittingMemo(maxCount: 160, maxBytes: 1 << 20)
        for id in 0..<2_000 { _ = try memo.fitted(serviceContext(id)) { (c) throws(ContextError) in try c.fitted() } }
        #expect(memo.totals.count <= 160 && memo.totals.count > 0)
        let small = FittingMemo(maxCount: 10_000, maxBytes: 32 << 10)
        for id in 0..<2_000 { _ = try small.fitted(serviceContext(id)) { (c) throws(ContextError) in try c.fitted() } }
        #expect(small.totals.bytes <= 32 << 10 && small.totals.count > 0)
    }

    @Test func aHitIsTheSameFittedContextAndOthersAreNot() throws {
        let memo = FittingMemo(maxCount: 1_000, maxBytes: 1 << 20)
        let counting = CountingFit()
        let a = serviceContext(1)
        var b = a
        b.attributes["plan"] = .string("other")
        let first = try memo.fitted(a, fit: counting.fit)
        #expect(try memo.fitted(a, fit: counting.fit) == first)
        #expect(try memo.fitted(b, fit: counting.fit) == (try b.fitted()))
        #expect(counting.calls == 2)
        var invalid = a
        invalid.kind = "Bad Kind"
        #expect(throws: ContextError.self) { try memo.fitted(invalid, fit: counting.fit) }
    }

    /// Contexts that differ in one place each: the targeting key, the kind, an attribute's
    /// value, its name, its type (every scalar, `0.0` and `-0.0`), a nested member, the private
    /// names.
    static func neighbours() -> [EvaluationContext] {
        let base = serviceContext(5)
        var out = [base]
        var c = base
        c.targetingKey = "user-6"
        out.append(c)
        c = base
        c.kind = "tenant"
        out.append(c)
        c = base
        c.attributes["plan"] = .string("pro-")
        out.append(c)
        c = base
        c.attributes["plan2"] = c.attributes.removeValue(forKey: "plan")
        out.append(c)
        c = base
        c.attributes["n"] = .int(1)
        out.append(c)
        c = base
        c.attributes["n"] = .double(1)
        out.append(c)
        // Each scalar the encoder writes inline, against its neighbours.
        for value: JSONValue in [
            .null, .bool(true), .bool(false), .double(0.0), .double(-0.0), .string("1"), .string(""),
        ] {
            c = base
            c.attributes["n"] = value
            out.append(c)
        }
        c = base
        c.attributes["o"] = .object(["a": .array([.bool(true), .null])])
        out.append(c)
        c = base
        c.attributes["o"] = .object(["a": .array([.bool(false), .null])])
        out.append(c)
        c = base
        c.privateAttributes = ["plan"]
        out.append(c)
        c = base
        c.privateAttributes = ["attr0"]
        out.append(c)
        return out
    }

    @Test func contextsWhoseHashesCollideEachGetTheirOwnFittedContext() throws {
        // Every context hashes alike here (one shard, one slot): only the exact comparison
        // tells them apart. The bounds leave that shard room for all of them.
        let memo = FittingMemo(maxCount: 16_000, maxBytes: 64 << 20, keys: .colliding)
        let counting = CountingFit()
        let contexts = Self.neighbours() + (100..<140).map { serviceContext($0) }
        for _ in 0..<2 {
            for c in contexts {
                let fitted = try memo.fitted(c, fit: counting.fit)
                #expect(fitted == (try c.fitted()))
            }
        }
        #expect(counting.calls == contexts.count)
        #expect(memo.totals.count == contexts.count)
    }

    @Test func neighbouringContextsAreNotConfusedWithRandomKeys() throws {
        let memo = FittingMemo(maxCount: 1_000, maxBytes: 1 << 20)
        for _ in 0..<2 {
            for c in Self.neighbours() {
                #expect(try memo.fitted(c) { (c) throws(ContextError) in try c.fitted() } == (try c.fitted()))
            }
        }
        #expect(memo.totals.count == Self.neighbours().count)
    }

    @Test func equalContextsBuiltInAnotherOrderHit() throws {
        let memo = FittingMemo(maxCount: 1_000, maxBytes: 1 << 20)
        let counting = CountingFit()
        let a = serviceContext(9)
        var attributes: [String: JSONValue] = [:]
        attributes.reserveCapacity(100)  // another capacity: another iteration order
        for name in a.attributes.keys.sorted().reversed() { attributes[name] = a.attributes[name] }
        let b = EvaluationContext(targetingKey: a.targetingKey, kind: a.kind, attributes: attributes)
        _ = try memo.fitted(a, fit: counting.fit)
        #expect(try memo.fitted(b, fit: counting.fit) == (try a.fitted()))
        #expect(counting.calls == 1)
    }

    /// Contexts with the same names and the same values, assigned otherwise, and long values
    /// that differ in their last byte only: with every hash colliding (each record's too, so an
    /// entry's records share one chain of its table) and with random keys.
    @Test(arguments: [false, true])
    func swappedValuesAndLastBytesAreDifferentContexts(colliding: Bool) throws {
        let memo = FittingMemo(maxCount: 1_000, maxBytes: 8 << 20, keys: colliding ? .colliding : .random())
        let counting = CountingFit()
        let long = String(repeating: "v", count: 40)
        var contexts: [EvaluationContext] = []
        for (x, y) in [("x", "y"), ("y", "x"), (long + "a", long + "b"), (long + "b", long + "a")] {
            contexts.append(EvaluationContext(targetingKey: "k", attributes: ["a": .string(x), "b": .string(y)]))
        }
        contexts.append(EvaluationContext(targetingKey: "k", attributes: ["a": .int(1), "b": .int(2)]))
        contexts.append(EvaluationContext(targetingKey: "k", attributes: ["a": .int(2), "b": .int(1)]))
        for _ in 0..<2 {
            for c in contexts { #expect(try memo.fitted(c, fit: counting.fit) == (try c.fitted())) }
        }
        #expect(counting.calls == contexts.count)
    }

    /// Contexts too large for the hit's stack buffer (many attributes; long values) are looked
    /// up through the heap, and hit like the others.
    @Test func contextsLargerThanTheStackBufferHit() throws {
        let memo = FittingMemo(maxCount: 1_000, maxBytes: 8 << 20)
        let counting = CountingFit()
        var many = serviceContext(3)
        for i in 0..<100 { many.attributes["extra\(i)"] = .int(Int64(i)) }
        var long = serviceContext(4)
        for i in 0..<10 { long.attributes["long\(i)"] = .string(String(repeating: "\(i)", count: 200)) }
        var other = long
        other.attributes["long9"] = .string(String(repeating: "9", count: 199) + "8")
        for _ in 0..<2 {
            for c in [many, long, other] { #expect(try memo.fitted(c, fit: counting.fit) == (try c.fitted())) }
        }
        #expect(counting.calls == 3)
    }

    @Test func canonicallyEquivalentStringsAreDifferentContexts() throws {
        // Swift's String == calls these equal, but they are different bytes: they fit to
        // different canonical JSON, so different fingerprints (and the plane sees two users).
        let memo = FittingMemo(maxCount: 1_000, maxBytes: 1 << 20)
        let a = EvaluationContext(targetingKey: "caf\u{E9}", attributes: ["city": .string("Z\u{FC}rich")])
        let b = EvaluationContext(targetingKey: "cafe\u{301}", attributes: ["city": .string("Z\u{FC}rich")])
        let c = EvaluationContext(targetingKey: "caf\u{E9}", attributes: ["city": .string("Zu\u{308}rich")])
        #expect(a == b && a == c)
        for context in [a, b, c] {
            let fitted = try memo.fitted(context) { (c) throws(ContextError) in try c.fitted() }
            #expect(fitted.fingerprint == (try context.fitted()).fingerprint)
        }
        #expect(try a.fitted().fingerprint != (try b.fitted()).fingerprint)
    }
}
