import Foundation
import Testing

@_spi(Fuzzing) @testable import Halyard

@Suite struct FlagTableTests {
    @Test func everyLengthFindsItsKeyAndRejectsNeighbours() {
        // Exhaustive over key lengths 0...40, which covers every tail branch of hash and compare.
        var keys: [String] = []
        for length in 0...40 {
            keys.append(String(repeating: "k", count: length))
            if length > 0 { keys.append(String(repeating: "k", count: length - 1) + "x") }
        }
        let table = FlagTable(keys: keys)
        defer { table.deallocate() }
        for (index, key) in keys.enumerated() { #expect(table.index(of: key) == index, "\(key)") }
        for length in 1...40 {
            #expect(table.index(of: "y" + String(repeating: "k", count: length - 1)) == nil)
        }
    }

    @Test func randomKeysAgreeWithDictionary() {
        var random = SplitMix64(seed: 42)  // seeded so failures reproduce
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789._-é🚀")
        for round in 0..<20 {
            var unique = Set<String>()
            let count = Int.random(in: 0...300, using: &random)
            while unique.count < count {
                let length = Int.random(in: 1...30, using: &random)
                unique.insert(String((0..<length).map { _ in alphabet.randomElement(using: &random)! }))
            }
            let keys = Array(unique)
            let table = FlagTable(keys: keys)
            defer { table.deallocate() }
            let reference = Dictionary(uniqueKeysWithValues: keys.enumerated().map { ($1, $0) })
            for _ in 0..<500 {
                let probe: String
                if !keys.isEmpty && Bool.random(using: &random) {
                    probe = keys.randomElement(using: &random)!
                } else {
                    probe = String(
                        (0..<Int.random(in: 0...30, using: &random)).map { _ in alphabet.randomElement(using: &random)!
                        })
                }
                #expect(table.index(of: probe) == reference[probe], "round \(round) probe \(probe)")
            }
        }
    }

    /// The decoder is the one place that de-duplicates; a snapshot built from its output keeps
    /// the last of duplicate keys.
    @Test func duplicateKeysInSnapshotKeepTheLast() throws {
        let body = Data(
            #"{"flags":[{"key":"a","value":1,"reason":"STATIC"},{"key":"a","value":2,"reason":"STATIC"}]}"#.utf8)
        let decoded = try OFREPResponse.decode(body, limit: 1 << 20)
        let snapshot = Snapshot.next(
            after: nil, flags: decoded.flags, source: .network, confirmedAt: nil, contextFingerprint: "", etag: nil
        ).snapshot
        #expect(snapshot.count == 1)
        #expect(snapshot.flag("a")?.value == .int(2))
    }
}

/// The flag table's word and literal paths (issue 38): a key in the small form is found from
/// its two words, a literal longer than 15 bytes from the side table filled on first use, and
/// every answer is the byte path's.
@Suite struct FlagTableLiteralTests {
    /// Literals longer than 15 bytes (immortal, in constant data) and short ones (small form).
    static let literals: [String] = [
        "checkout.new-flow", "profile.avatar-upload", "pricing.trial-days", "feed.infinite-scroll",
        "onboarding.consent", "banner.text", "search.v2", "cart.enabled", "a", "",
        "exactly.15.byte", "exactly.16.bytes", "unicode.caf\u{E9}.long-key",
    ]

    @Test func theLayoutIsReadOnThisPlatform() {
        #if (arch(x86_64) || arch(arm64)) && _endian(little)
            #expect(StringLayout.available == LayoutReads.enabled)
            let long = Self.literals[0]
            let raw = StringLayout.words(long)
            #expect(StringLayout.isLiteral(raw.0, raw.1))
            let heap = String(decoding: Array(long.utf8), as: UTF8.self)
            let heapRaw = StringLayout.words(heap)
            #expect(!StringLayout.isLiteral(heapRaw.0, heapRaw.1))
            #expect(StringLayout.isSmall(StringLayout.words(Self.literals[5]).1))
        #endif
    }

    @Test func literalsHeapCopiesAndSubstringsFindTheSameIndex() {
        let table = FlagTable(keys: Self.literals)
        defer { table.deallocate() }
        for round in 0..<3 {  // the first round fills the side table, the others hit it
            for (index, key) in Self.literals.enumerated() {
                #expect(table.index(of: key) == index, "round \(round): \(key)")
                let heap = String(decoding: Array(key.utf8), as: UTF8.self)
                #expect(table.index(of: heap) == index, "heap copy of \(key)")
                // A native string with spare capacity: large form whatever its length.
                var spare = String()
                spare.reserveCapacity(64)
                spare.append(contentsOf: heap)
                #expect(table.index(of: spare) == index, "spare-capacity copy of \(key)")
                #expect(table.index(of: String(Substring(key + "x").dropLast())) == index)
            }
        }
        // The side table fills only where the layout reads are on (docs/architecture.md,
        // "Layout reads"); off, every literal takes the byte path with the same answers.
        let long = StringLayout.available ? Self.literals.filter { $0.utf8.count > 15 }.count : 0
        #expect(table.literalsFilled == long)
        // Absent literals: nil, long and short, and nothing cached for them.
        #expect(table.index(of: "checkout.new-flow.absent-key") == nil)
        #expect(table.index(of: "checkout.new-flo") == nil)
        #expect(table.index(of: "banner.tex") == nil)
        #expect(table.index(of: "Banner.text") == nil)
        #expect(table.literalsFilled == long)
    }

    /// Every literal hashes to the one slot: the first fills it, the others find it taken by
    /// another address and go to the byte path, never to the first one's index.
    @Test func aCollisionInTheSideTableFallsBackToTheBytePath() {
        let table = FlagTable(keys: Self.literals, literalSlots: 1)
        defer { table.deallocate() }
        for _ in 0..<3 {
            for (index, key) in Self.literals.enumerated() { #expect(table.index(of: key) == index, "\(key)") }
        }
        #expect(table.literalsFilled == (StringLayout.available ? 1 : 0))
    }

    /// A slot whose address matches but whose length does not is not an answer.
    @Test func anAddressWithAnotherLengthIsNotAnAnswer() {
        let table = FlagTable(keys: Self.literals)
        defer { table.deallocate() }
        let key = Self.literals[1]
        table.seedLiteral(key, length: UInt(key.utf8.count + 1), index: 0)
        #expect(table.index(of: key) == 1)
        #expect(table.index(of: Self.literals[0]) == 0)
    }

    /// Readers filling the same side table at once: every answer right, one slot per literal.
    @Test func concurrentFillsAgree() {
        let keys = Self.literals
        for _ in 0..<20 {
            let table = FlagTable(keys: keys)
            let wrong = Locked(0)
            DispatchQueue.concurrentPerform(iterations: 8) { thread in
                for round in 0..<50 {
                    for offset in 0..<keys.count {
                        let index = (offset + thread + round) % keys.count
                        if table.index(of: keys[index]) != index { wrong.withLock { $0 += 1 } }
                    }
                }
            }
            #expect(wrong.value == 0)
            #expect(table.literalsFilled == (StringLayout.available ? keys.filter { $0.utf8.count > 15 }.count : 0))
            table.deallocate()
        }
    }

    /// The side table's size: 16 to 4,096 slots, about twice the flags.
    @Test func theSideTableIsBounded() {
        #expect(FlagTable.literalCapacity(for: 0) == 16)
        #expect(FlagTable.literalCapacity(for: 64) == 128)
        #expect(FlagTable.literalCapacity(for: 100_000) == FlagTable.maxLiteralCapacity)
    }
}
