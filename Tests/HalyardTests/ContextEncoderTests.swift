import Foundation
import Testing

@testable import Halyard

/// How the memo writes a context (`ContextEncoder`, FittingMemo+Key.swift). A string in Swift's
/// small form is written as the value's two words (`StringLayout`): these tests check that
/// the layout it reads is this toolchain's, that the words are a function of the content, that
/// no two different strings (small or not) write the same bytes, and that the hash mixed in
/// while writing tells them apart.
@Suite struct ContextEncoderTests {
    /// Pieces of 1 to 4 UTF-8 bytes, NUL included.
    static let pieces = ["a", "z", "0", "\u{0}", "\u{7F}", "\u{E9}", "\u{20AC}", "\u{1F600}", "e\u{301}"]

    /// Seeded strings of 0 to 20 UTF-8 bytes (some over 15, so never small).
    static func strings(count: Int, seed: UInt64) -> [String] {
        var g = SplitMix64(seed: seed)
        var out = [""]
        while out.count < count {
            var s = ""
            let target = Int(g.next() % 21)
            while s.utf8.count < target { s += pieces[Int(g.next() % UInt64(pieces.count))] }
            out.append(s)
        }
        return out
    }

    /// The same content in native storage with spare capacity: never the small form.
    static func outOfLine(_ s: String) -> String {
        var o = String()
        o.reserveCapacity(64)
        o.append(contentsOf: s)
        return o
    }

    /// The binary form the memo writes for a context of one attribute `v` holding `s`.
    static func bytes(_ s: String, keys: FittingMemo.HashKeys) -> [UInt8] {
        let context = EvaluationContext(targetingKey: "", attributes: ["v": .string(s)])
        return FittingMemo.withProbe(context, keys: keys) { Array($0.bytes) }
    }

    @Test func theLayoutCheckHoldsOnThisPlatform() {
        #expect(
            StringLayout.available == LayoutReads.enabled,
            "the string layout check failed: the memo writes every string's bytes (slower warm path)")
    }

    @Test(.enabled(if: StringLayout.available, "layout reads off (HALYARD_LAYOUT_READS, 32-bit)"))
    func wordsHoldTheBytesTheCountAndNothingElse() throws {
        for s in Self.strings(count: 2_000, seed: 3) {
            let utf8 = Array(s.utf8)
            guard let (w0, w1) = StringLayout.smallWords(s) else {
                #expect(utf8.count > 15, "\(utf8) fits 15 bytes but is not small")
                continue
            }
            let words = withUnsafeBytes(of: (w0.littleEndian, w1.littleEndian)) { Array($0) }
            #expect(utf8.count <= 15)
            #expect(Array(words[..<utf8.count]) == utf8, "\(utf8): the words do not start with the bytes")
            #expect(words[utf8.count..<15].allSatisfy { $0 == 0 }, "\(utf8): the padding is not zero")
            #expect(Int(words[15] & 0x0F) == utf8.count && words[15] & 0xA0 == 0xA0, "\(utf8): top byte \(words[15])")
            // The same bytes built another way: the same words.
            let copy = String(decoding: utf8, as: UTF8.self)
            let copied = try #require(StringLayout.smallWords(copy), "\(utf8) decoded is not small")
            #expect(copied == (w0, w1), "\(utf8): equal contents, different words")
            #expect(StringLayout.smallWords(Self.outOfLine(s)) == nil, "\(utf8): the out-of-line copy reads as small")
        }
    }

    @Test(arguments: [true, false])
    func differentStringsWriteDifferentBytes(smallStrings: Bool) throws {
        var keys = FittingMemo.HashKeys.random()
        keys.smallStrings = smallStrings && StringLayout.available
        var seen: [[UInt8]: [UInt8]] = [:]  // binary form -> the string's UTF-8
        for s in Self.strings(count: 1_500, seed: 5) {
            for form in [s, Self.outOfLine(s)] {
                let written = Self.bytes(form, keys: keys)
                if let other = seen[written] {
                    #expect(other == Array(form.utf8), "\(Array(form.utf8)) and \(other) write the same bytes")
                }
                seen[written] = Array(form.utf8)
            }
        }
    }

    @Test(arguments: [true, false])
    func theMemoTellsEveryStringApartAndServesBothForms(smallStrings: Bool) throws {
        // All hashes collide: only the byte comparison tells the contexts apart.
        var keys = FittingMemo.HashKeys.colliding
        keys.smallStrings = smallStrings && StringLayout.available
        let memo = FittingMemo(maxCount: 16_000, maxBytes: 64 << 20, keys: keys)
        let counting = CountingFit()
        var unique = Set<[UInt8]>()
        let strings = Self.strings(count: 200, seed: 9).filter { unique.insert(Array($0.utf8)).inserted }
        let contexts = strings.flatMap { s in
            [s, Self.outOfLine(s)].map { EvaluationContext(targetingKey: $0, attributes: ["v": .string($0)]) }
        }
        for pass in 0..<2 {
            for c in contexts {
                let fitted = try memo.fitted(c, fit: counting.fit)
                #expect(fitted == (try c.fitted()), "pass \(pass): \(Array(c.targetingKey.utf8)) got another context")
            }
        }
        // A short string out of line writes other bytes than its small form: its own entry.
        let forms = keys.smallStrings ? strings.count + strings.filter { $0.utf8.count <= 15 }.count : strings.count
        #expect(counting.calls == forms)
        #expect(memo.totals.count == forms)
    }

    /// The other half of the hash's contract: it is a function of the bytes written, so two
    /// forms of one string that write the same bytes (both forms of a long string; every form
    /// with small strings off) find the same entry.
    @Test(arguments: [true, false])
    func equalBytesHashAlike(smallStrings: Bool) {
        var keys = FittingMemo.HashKeys.random()
        keys.smallStrings = smallStrings && StringLayout.available
        for s in Self.strings(count: 1_500, seed: 17) {
            let forms = [s, Self.outOfLine(s), String(decoding: Array(s.utf8), as: UTF8.self)]
            let written = forms.map { Self.bytes($0, keys: keys) }
            let hashes = forms.map { form in
                let context = EvaluationContext(targetingKey: "", attributes: ["v": .string(form)])
                return FittingMemo.withProbe(context, keys: keys) { $0.hash }
            }
            for i in 1..<forms.count where written[i] == written[0] {
                #expect(hashes[i] == hashes[0], "\(Array(s.utf8)): the same bytes, another hash (form \(i))")
            }
        }
    }

    @Test(arguments: [true, false])
    func differentStringsHashApart(smallStrings: Bool) {
        var keys = FittingMemo.HashKeys.random()
        keys.smallStrings = smallStrings && StringLayout.available
        var seen: [UInt64: [UInt8]] = [:]  // context hash -> the string's UTF-8
        var forms = Set<[UInt8]>()
        for s in Self.strings(count: 1_500, seed: 13) {
            for form in [s, Self.outOfLine(s)] {
                let bytes = Self.bytes(form, keys: keys)
                guard forms.insert(bytes).inserted else { continue }  // the same form again
                let context = EvaluationContext(targetingKey: "", attributes: ["v": .string(form)])
                let hash = FittingMemo.withProbe(context, keys: keys) { $0.hash }
                if let other = seen[hash] {
                    Issue.record("\(Array(form.utf8)) and \(other) hash alike")
                }
                seen[hash] = Array(form.utf8)
            }
        }
        #expect(seen.count == forms.count)
    }
}
