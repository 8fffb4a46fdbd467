import Foundation
import Testing

@testable import Halyard

/// The memo reads a context's attributes in place from their dictionary's storage
/// (`AttributeBuckets`): these tests check that the layout it reads is this toolchain's, that the
/// walk visits exactly the dictionary's members with their values, in the order `for in` does,
/// over seeded dictionaries of many sizes grown, shrunk and copied, and that the memo writes
/// the same bytes and hash in place as through the dictionary's iterator.
@Suite struct AttributeBucketsTests {
    /// Values of every kind: short and long strings (in and out of the small form), non-ASCII,
    /// nested arrays and objects.
    static func value(_ g: inout SplitMix64) -> JSONValue {
        switch g.next() % 9 {
        case 0: .null
        case 1: .bool(g.next() % 2 == 0)
        case 2: .int(Int64(bitPattern: g.next()))
        case 3: .double(Double(Int64(bitPattern: g.next() % 1_000_000)) / 7)
        case 4: .string("v\(g.next() % 1000)")
        case 5: .string("a value longer than fifteen bytes, \(g.next())")
        case 6: .string("\u{E9}t\u{E9} \u{1F600}")
        case 7: .array([.int(1), .string("x"), .null])
        default: .object(["k": .string("nested"), "n": .int(2)])
        }
    }

    /// A name: short, long (never small), non-ASCII, or built with spare capacity (its content
    /// short but out of line).
    static func name(_ i: Int, _ g: inout SplitMix64) -> String {
        switch g.next() % 4 {
        case 0: "a\(i)"
        case 1: "an-attribute-name-of-more-than-fifteen-bytes-\(i)"
        case 2: "n\u{E9}\(i)"
        default:
            {
                var s = String()
                s.reserveCapacity(64)
                s.append("o\(i)")
                return s
            }()
        }
    }

    /// Seeded dictionaries: grown to a random size (up to 600 members, so bitmaps of one and of
    /// several words), some then shrunk by removals, reserved larger than their contents,
    /// emptied keeping their capacity, or copied and changed (a copy's own storage).
    static func dictionaries(seed: UInt64, count: Int) -> [[String: JSONValue]] {
        var g = SplitMix64(seed: seed)
        var out: [[String: JSONValue]] = []
        for step in 0..<count {
            let size = step < 70 ? step : Int(g.next() % 600)
            var d: [String: JSONValue] = [:]
            if g.next() % 5 == 0 { d.reserveCapacity(size * 3 + 1) }
            for i in 0..<size { d[name(i, &g)] = value(&g) }
            switch g.next() % 5 {
            case 0:
                for key in Array(d.keys) where g.next() % 2 == 0 { d[key] = nil }
            case 1:
                d.removeAll(keepingCapacity: true)
                for i in 0..<(size / 3) { d[name(i, &g)] = value(&g) }
            case 2:
                var copy = d
                copy["added-to-the-copy"] = .int(1)
                if let first = copy.keys.first { copy[first] = nil }
                out.append(d)
                d = copy
            default: break
            }
            out.append(d)
        }
        return out
    }

    /// What the walk visits, in its order (names and values copied out).
    static func walked(_ d: [String: JSONValue]) -> [(String, JSONValue)] {
        var seen: [(String, JSONValue)] = []
        AttributeBuckets.forEach(d) { name, value in
            seen.append((name.assumingMemoryBound(to: String.self).pointee, value.pointee))
        }
        return seen
    }

    @Test func theLayoutCheckHoldsOnThisPlatform() {
        #if os(Linux) && (arch(x86_64) || arch(arm64))
            #expect(
                AttributeBuckets.available == LayoutReads.enabled,
                "the storage layout check failed: the memo iterates instead")
        #endif
        var keys = FittingMemo.HashKeys.random()
        keys.inPlace = true
        #expect(keys.inPlace == AttributeBuckets.available)
    }

    @Test(
        .enabled(if: AttributeBuckets.available, "layout reads off (HALYARD_LAYOUT_READS, 32-bit)"),
        arguments: [UInt64(1), 2, 3, 4])
    func theWalkVisitsEveryMemberOnceInIterationOrder(seed: UInt64) throws {
        for (index, d) in Self.dictionaries(seed: seed, count: 120).enumerated() {
            let seen = Self.walked(d)
            let iterated = Array(d)
            guard seen.count == iterated.count else {
                Issue.record("seed \(seed), dictionary \(index): \(seen.count) members walked, \(d.count) held")
                continue
            }
            for (i, (walkedMember, member)) in zip(seen, iterated).enumerated()
            where walkedMember.0 != member.key || walkedMember.1 != member.value {
                Issue.record(
                    "seed \(seed), dictionary \(index), member \(i): walked \(walkedMember), iterated \(member)")
                break
            }
        }
    }

    @Test(.enabled(if: AttributeBuckets.available, "layout reads off (HALYARD_LAYOUT_READS, 32-bit)"))
    func anEmptyDictionaryIsNotWalked() throws {
        #expect(Self.walked([:]).isEmpty)
        var emptied: [String: JSONValue] = ["a": .int(1), "b": .null]
        emptied.removeAll(keepingCapacity: true)
        #expect(Self.walked(emptied).isEmpty)
    }

    /// The binary form, head, hash and records of `context` under `keys`.
    static func probe(_ context: EvaluationContext, _ keys: FittingMemo.HashKeys) -> ([UInt8], Int, UInt64, [UInt64]) {
        FittingMemo.withProbe(context, keys: keys) { p in (Array(p.bytes), p.head, p.hash, p.records.map(\.hash)) }
    }

    @Test(
        .enabled(if: AttributeBuckets.available, "layout reads off (HALYARD_LAYOUT_READS, 32-bit)"),
        arguments: [true, false])
    func inPlaceAndIteratedWriteTheSameBytes(smallStrings: Bool) throws {
        var inPlace = FittingMemo.HashKeys.random()
        inPlace.smallStrings = smallStrings
        inPlace.inPlace = true
        var iterated = inPlace
        iterated.inPlace = false
        for (index, d) in Self.dictionaries(seed: 9, count: 150).enumerated() {
            let context = EvaluationContext(targetingKey: "user-\(index)", attributes: d)
            let a = Self.probe(context, inPlace)
            let b = Self.probe(context, iterated)
            let differ = a.0.indices.first { $0 >= b.0.count || a.0[$0] != b.0[$0] }
            #expect(
                a.0.count == b.0.count && differ == nil,
                "dictionary \(index): the bytes differ from byte \(differ ?? b.0.count) of \(a.0.count)")
            #expect(a.1 == b.1 && a.2 == b.2 && a.3 == b.3, "dictionary \(index): the head, hash or records differ")
        }
    }

    @Test(.enabled(if: AttributeBuckets.available, "layout reads off (HALYARD_LAYOUT_READS, 32-bit)"))
    func aMemoFindsEveryContextItHoldsAndNoOther() throws {
        let memo = FittingMemo(maxCount: 4096, maxBytes: 64 << 20)
        let contexts = Self.dictionaries(seed: 21, count: 200).enumerated().map { index, d in
            EvaluationContext(targetingKey: "user-\(index)", attributes: d)
        }
        for context in contexts { _ = try memo.fitted(context) { (c) throws(ContextError) in try c.fitted() } }
        var g = SplitMix64(seed: 22)
        for (index, context) in contexts.enumerated() {
            // A copy whose dictionary has its own storage (another bucket order) hits too.
            var rebuilt = context
            rebuilt.attributes = Dictionary(uniqueKeysWithValues: context.attributes.shuffled(using: &g))
            let expected = try context.fitted().fingerprint
            #expect(memo.fitted(rebuilt)?.fingerprint == expected, "context \(index): no hit")
            var changed = context
            changed.attributes["one-more"] = .bool(true)
            #expect(memo.fitted(changed) == nil, "context \(index): a changed context hit")
        }
    }

    /// A compiled rule's attribute read (`AttributeBuckets.lookup`): on the seeded dictionaries,
    /// every member is found by a small name with its value, every small name the dictionary does
    /// not hold is absent, whatever form the stored name is in (small, or the same short bytes
    /// out of line), and names are compared by bytes (`é` precomposed is not `e` + U+0301).
    @Test(
        .enabled(
            if: AttributeBuckets.available && StringLayout.available, "layout reads off (HALYARD_LAYOUT_READS, 32-bit)")
    )
    func aLookupFindsExactlyWhatTheDictionaryHoldsByBytes() throws {
        var found = 0
        var outOfLine = 0
        var absent = 0
        for (index, d) in Self.dictionaries(seed: 31, count: 150).enumerated() {
            for (key, value) in d {
                // The same bytes as a small string (the form a rule's constant name has).
                let probe = String(decoding: Array(key.utf8), as: UTF8.self)
                guard let words = StringLayout.smallWords(probe) else { continue }
                if StringLayout.smallWords(key) == nil { outOfLine += 1 }
                guard case .found(let got) = AttributeBuckets.lookup(d, smallName: words, probe), got == value else {
                    Issue.record("dictionary \(index): \(key) not found with its value")
                    continue
                }
                found += 1
            }
            for name in ["zz", "a-missing-one", "", "e\u{301}", "\u{E9}"]
            where !d.keys.contains(where: { $0.utf8.elementsEqual(name.utf8) }) {
                let words = try #require(StringLayout.smallWords(name))
                guard case .absent = AttributeBuckets.lookup(d, smallName: words, name) else {
                    Issue.record("dictionary \(index): \(name) found, not held")
                    continue
                }
                absent += 1
            }
        }
        let precomposed: [String: JSONValue] = ["\u{E9}": .int(1)]
        let decomposed = try #require(StringLayout.smallWords("e\u{301}"))
        guard case .absent = AttributeBuckets.lookup(precomposed, smallName: decomposed, "e\u{301}") else {
            Issue.record("e + U+0301 found é: names must compare by bytes")
            return
        }
        // The states the run reached: names found in both forms, and names absent.
        #expect(
            found > 1000 && outOfLine > 50 && absent > 500, "found \(found), out of line \(outOfLine), absent \(absent)"
        )
    }
}
