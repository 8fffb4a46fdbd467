import Testing

@testable import Halyard

/// MurmurHash3 x86-32 against published vectors and the reference (`mmh3`) on flagd keys.
@Suite struct MurmurHash3Tests {
    @Test(arguments: [
        ("", UInt32(0), UInt32(0)),
        ("", 1, 0x514e_28b7),
        ("", 0xffff_ffff, 0x81f1_6f39),
        ("\0\0\0\0", 0, 0x2362_f9de),
        ("aaaa", 0x9747_b28c, 0x5a97_808a),
        ("aaa", 0x9747_b28c, 0x283e_0130),
        ("aa", 0x9747_b28c, 0x5d21_1726),
        ("a", 0x9747_b28c, 0x7fa0_9ea6),
        ("abcd", 0x9747_b28c, 0xf047_8627),
        ("Hello, world!", 0x9747_b28c, 0x2488_4cba),
        ("The quick brown fox jumps over the lazy dog", 0x9747_b28c, 0x2fa8_26cd),
    ])
    func publishedVectors(input: String, seed: UInt32, expected: UInt32) {
        #expect(MurmurHash3.x86_32(Array(input.utf8), seed: seed) == expected)
    }

    @Test(arguments: [
        ("hello", UInt32(0x248b_fa47)),
        ("fractional-flagjack", 0x9fe8_43e0),
        ("jon@company.com", 0x5cd9_1845),
        ("ünïcødé ✓", 0x94ef_05c7),
        ("😀", 0xbeb4_2efa),
    ])
    func seedZeroOverUTF8(input: String, expected: UInt32) {
        #expect(MurmurHash3.hash(input) == expected)
    }

    /// `fractional` hashes the flag key and the targeting key without concatenating them: the
    /// hash of two strings is the hash of their concatenation, at every split point (block
    /// boundaries included) and across multi-byte characters.
    @Test func twoStringsHashAsTheirConcatenation() {
        let whole = "fractional-flag🙂user-12345é"
        let bytes = Array(whole.utf8)
        var index = whole.startIndex
        while true {
            let first = String(whole[..<index]), second = String(whole[index...])
            #expect(MurmurHash3.hash(first, second) == MurmurHash3.x86_32(bytes), "split at \(first.utf8.count)")
            if index == whole.endIndex { break }
            index = whole.index(after: index)
        }
    }

    /// The block-wise read of a string's UTF-8 in place (`combine(utf8:)`) against the
    /// byte-at-a-time one, on seeded strings of 0 to 40 bytes (ASCII and multi-byte), fed whole,
    /// in two parts at every split, and resumed from a copied state (how a flag key's hash is
    /// kept and resumed per evaluation).
    @Test func blockwiseReadsAgreeWithByteAtATime() {
        var g = SplitMix64(seed: 7)
        let pieces = ["a", "b", "0", "-", "\u{E9}", "\u{1F600}", "\u{4E2D}"]
        var checked = 0
        for _ in 0..<300 {
            var text = ""
            while text.utf8.count < Int(g.next() % 41) { text += pieces[Int(g.next() % UInt64(pieces.count))] }
            let bytes = Array(text.utf8)
            let expected = MurmurHash3.x86_32(bytes)
            #expect(MurmurHash3.hash(text) == expected, "\(text)")
            var index = text.startIndex
            while true {
                var prefix = MurmurHash3()
                prefix.combine(utf8: String(text[..<index]))
                var resumed = prefix
                resumed.combine(utf8: String(text[index...]))
                #expect(
                    resumed.finalize() == expected,
                    "\(text) split at \(text.utf8.distance(from: text.startIndex, to: index))")
                checked += 1
                if index == text.endIndex { break }
                index = text.index(after: index)
            }
        }
        #expect(checked > 1000)
    }
}
