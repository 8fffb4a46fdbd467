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
