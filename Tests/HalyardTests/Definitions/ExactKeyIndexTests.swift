import Testing

@testable import Halyard

/// The byte-exact table that finds flag keys and variant names (`ExactKeyIndex`): every key at
/// its slot, absent keys absent, canonically equivalent spellings kept apart (flagd compares
/// names by code points), over seeded random key sets of every size and length class.
@Suite struct ExactKeyIndexTests {
    /// A random key: empty, short (under 4 bytes), 4-7, 8-15 or long UTF-8, mixing ASCII,
    /// two-, three- and four-byte characters and combining marks.
    static func key(_ rng: inout SplitMix64) -> String {
        let alphabet: [Character] = [
            "a", "b", "z", "0", "-", "_", ".", "é", "e\u{301}", "ß", "✓", "한", "😀", "\u{0}",
        ]
        let length: Int
        switch rng.next() % 6 {
        case 0: length = 0
        case 1: length = 1 + Int(rng.next() % 3)
        case 2: length = 4 + Int(rng.next() % 4)
        case 3: length = 8 + Int(rng.next() % 8)
        default: length = Int(rng.next() % 40)
        }
        return String((0..<length).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] })
    }

    /// `count` keys distinct byte for byte.
    static func keys(_ count: Int, _ rng: inout SplitMix64) -> [String] {
        var seen = Set<[UInt8]>()
        var keys: [String] = []
        while keys.count < count {
            let key = key(&rng)
            if seen.insert(Array(key.utf8)).inserted { keys.append(key) }
        }
        return keys
    }

    @Test(arguments: [UInt64(1), 51, 1000, 0xDEAD_BEEF])
    func everyKeyIsFoundAtItsSlotAndAbsentKeysAreNot(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        for count in [1, 2, 3, 4, 7, 8, 9, 31, 64, 100, 1000] {
            let all = Self.keys(count * 2, &rng)
            let present = Array(all[..<count])
            let index = ExactKeyIndex(present)
            #expect(index.count == count)
            for (slot, key) in present.enumerated() {
                #expect(index.slot(of: key) == slot, "seed \(seed), \(count) keys: \(key.debugDescription)")
            }
            for key in all[count...] {
                #expect(index.slot(of: key) == nil, "seed \(seed), \(count) keys: \(key.debugDescription)")
            }
        }
    }

    /// Keys that share their length, their first or last eight bytes: the hash reads every
    /// byte (the overlapping last word included).
    @Test func keysDifferingInOneByteAnywhereAreDistinct() {
        for length in 1...40 {
            let base = [UInt8](repeating: UInt8(ascii: "k"), count: length)
            var keys: [String] = [String(decoding: base, as: UTF8.self)]
            for position in 0..<length {
                var bytes = base
                bytes[position] = UInt8(ascii: "q")
                keys.append(String(decoding: bytes, as: UTF8.self))
            }
            let index = ExactKeyIndex(keys)
            for (slot, key) in keys.enumerated() { #expect(index.slot(of: key) == slot, "length \(length)") }
            #expect(index.slot(of: String(repeating: "k", count: length + 1)) == nil)
            if length > 1 { #expect(index.slot(of: String(repeating: "k", count: length - 1)) == nil) }
        }
    }

    /// `é` (U+00E9) and `e` + U+0301 are equal `String`s but different names to flagd.
    @Test func canonicallyEquivalentSpellingsStayDistinct() {
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        #expect(composed == decomposed)  // Swift's equality: why a dictionary is not used

        let both = ExactKeyIndex([composed, decomposed])
        #expect(both.slot(of: composed) == 0)
        #expect(both.slot(of: decomposed) == 1)

        let onlyComposed = ExactKeyIndex([composed])
        #expect(onlyComposed.slot(of: composed) == 0)
        #expect(onlyComposed.slot(of: decomposed) == nil)

        let onlyDecomposed = ExactKeyIndex(["x", decomposed])
        #expect(onlyDecomposed.slot(of: decomposed) == 1)
        #expect(onlyDecomposed.slot(of: composed) == nil)

        // Hangul: a precomposed syllable and its conjoining jamo.
        let syllable = "\u{D55C}"
        let jamo = "\u{1112}\u{1161}\u{11AB}"
        #expect(syllable == jamo)
        let hangul = ExactKeyIndex([jamo])
        #expect(hangul.slot(of: jamo) == 0)
        #expect(hangul.slot(of: syllable) == nil)
    }

    @Test func anEmptySetFindsNothing() {
        let index = ExactKeyIndex([])
        #expect(index.count == 0)
        var rng = SplitMix64(seed: 7)
        for key in Self.keys(50, &rng) { #expect(index.slot(of: key) == nil) }
        #expect(index.slot(of: "") == nil)
    }

    /// The empty string is a key like any other (flagd allows an empty variant name in a
    /// document; a rule naming it is refused before the lookup).
    @Test func theEmptyKeyIsFoundOnlyWhenPresent() {
        let index = ExactKeyIndex(["a", "", "b"])
        #expect(index.slot(of: "") == 1)
        #expect(ExactKeyIndex(["a", "b"]).slot(of: "") == nil)
    }

    /// Strings assembled at run time (joined, cut from a substring, interpolated: heap
    /// storage, not a literal) are found the same way.
    @Test func keysBuiltAtRunTimeAreFound() {
        let index = ExactKeyIndex(["new-checkout", "éclair-ünïcødé-✓", "x"])
        let parts = ["new", "checkout"]
        #expect(index.slot(of: parts.joined(separator: "-")) == 0)
        #expect(index.slot(of: String("[éclair-ünïcødé-✓]".dropFirst().dropLast())) == 1)
        #expect(index.slot(of: "\(parts[0])-\(parts[1])-") == nil)
    }
}
