import Foundation
import Testing

@_spi(Fuzzing) @testable import Halyard

/// The stored form of a cache entry (docs/cache.md, "Format"): exact round trip, and every kind
/// of damaged or foreign bytes rejected with a typed error, never served.
@Suite struct CacheEnvelopeTests {
    static let sample = CacheEnvelope(
        fingerprint: String(repeating: "0123456789", count: 4), kind: "user",
        targetingKeyHash: String(repeating: "abcdef0123", count: 4), etag: "\"v7\"", writtenAt: 1_800_000_000_123,
        flags: [
            ServedFlag(
                key: "b", value: .bool(true), variant: "on", reason: .targetingMatch,
                metadata: ["n": .number(2), "i": .int(9_007_199_254_740_993)]),
            ServedFlag(key: "d", value: .double(1.0), reason: .split),
            ServedFlag(key: "i", value: .int(Int64.max), reason: EvaluationReason(rawValue: "EXPERIMENT")),
            ServedFlag(key: "j", value: .object(["a": .array([.null, .string("é\u{1}")])]), reason: .staticValue),
            ServedFlag(key: "code-default", value: nil, reason: .defaultValue),
            ServedFlag(
                key: "e", value: nil, reason: .error, errorCode: .parseError, errorMessage: "bad rule",
                metadata: ["m": .string("x"), "t": .bool(false)]),
        ])

    @Test func roundTripKeepsEveryFieldAndTheNumberKinds() throws {
        let data = Self.sample.encoded()
        let decoded = try CacheEnvelope.decode(data, limit: 1 << 20)
        #expect(decoded == Self.sample)
        // The integer/float distinction survives (1.0 stays a double, Int64.max stays exact).
        #expect(decoded.flags[1].value == .double(1.0))
        #expect(decoded.flags[2].value == .int(Int64.max))
    }

    @Test func everyFlippedByteIsRejected() throws {
        let data = Self.sample.encoded()
        for index in data.indices {
            for bit in [UInt8(0x01), 0x20, 0x80] {
                var damaged = data
                damaged[index] ^= bit
                #expect(throws: CacheEnvelopeError.self, "byte \(index) ^ \(bit) was accepted") {
                    try CacheEnvelope.decode(damaged, limit: 1 << 20)
                }
            }
        }
    }

    @Test func everyTruncationIsRejected() throws {
        let data = Self.sample.encoded()
        for length in 0..<data.count {
            #expect(throws: CacheEnvelopeError.self, "a prefix of \(length) bytes was accepted") {
                try CacheEnvelope.decode(data.prefix(length), limit: 1 << 20)
            }
        }
        var longer = data
        longer.append(contentsOf: Array(" ".utf8))
        #expect(throws: CacheEnvelopeError.checksumMismatch) { try CacheEnvelope.decode(longer, limit: 1 << 20) }
    }

    @Test func anotherVersionOrFormatIsRejected() throws {
        let text = try #require(String(data: Self.sample.encoded(), encoding: .utf8))
        for (from, to) in [("\"version\":1", "\"version\":2"), ("halyard-cache", "halyard-cachf")] {
            let other = Data(text.replacingOccurrences(of: from, with: to).utf8)
            #expect(throws: CacheEnvelopeError.unsupportedVersion) { try CacheEnvelope.decode(other, limit: 1 << 20) }
        }
    }

    @Test func anOversizedEntryIsTooLarge() throws {
        let data = Self.sample.encoded()
        #expect(throws: CacheEnvelopeError.tooLarge(limit: data.count - 1)) {
            try CacheEnvelope.decode(data, limit: data.count - 1)
        }
        #expect(try CacheEnvelope.decode(data, limit: data.count) == Self.sample)
    }

    /// A payload with a valid checksum but the wrong shape (written by another program, or a
    /// future writer that kept the version) is refused member by member.
    @Test func wellFormedButWrongPayloadsAreRejected() throws {
        func envelope(_ payload: String) -> Data {
            let body = Data(payload.utf8)
            let header =
                "{\"checksum\":\"\(SHA1.hexDigest(body))\",\"format\":\"halyard-cache\",\"length\":\(body.count),\"version\":1}\n"
            return Data(header.utf8) + body
        }
        let fp = String(repeating: "a", count: 40)
        let good = "\"fingerprint\":\"\(fp)\",\"kind\":\"user\",\"targetingKeyHash\":\"\(fp)\",\"writtenAt\":1"
        #expect(try CacheEnvelope.decode(envelope("{\(good),\"flags\":[]}"), limit: 4096).flags.isEmpty)
        let bad = [
            "[]",
            "{\(good)}",
            "{\(good),\"flags\":[],\"rules\":[]}",
            "{\(good),\"flags\":[{\"key\":\"a\",\"reason\":\"X\"},{\"key\":\"a\",\"reason\":\"X\"}]}",
            "{\(good),\"flags\":[{\"key\":\"\",\"reason\":\"X\"}]}",
            "{\(good),\"flags\":[{\"key\":\"a\",\"reason\":\"X\",\"value\":null}]}",
            "{\(good),\"flags\":[{\"key\":\"a\",\"reason\":\"X\",\"value\":1,\"errorCode\":\"GENERAL\"}]}",
            "{\(good),\"flags\":[{\"key\":\"a\",\"reason\":\"X\",\"errorCode\":\"NOPE\"}]}",
            "{\(good),\"flags\":[{\"key\":\"a\",\"reason\":\"X\",\"metadata\":{\"o\":[]}}]}",
            "{\(good),\"flags\":[{\"key\":\"a\"}]}",
            "{\(good),\"flags\":[],\"etag\":3}",
            "{\"fingerprint\":\"A\(fp.dropFirst())\",\"kind\":\"user\",\"targetingKeyHash\":\"\(fp)\",\"writtenAt\":1,\"flags\":[]}",
            "{\"fingerprint\":\"\(fp)\",\"kind\":\"User\",\"targetingKeyHash\":\"\(fp)\",\"writtenAt\":1,\"flags\":[]}",
            "{\"fingerprint\":\"\(fp)\",\"kind\":\"user\",\"targetingKeyHash\":\"\(fp)\",\"writtenAt\":-1,\"flags\":[]}",
            "{\"fingerprint\":\"\(fp)\",\"kind\":\"user\",\"targetingKeyHash\":\"\(fp)\",\"writtenAt\":1.5,\"flags\":[]}",
        ]
        for payload in bad {
            #expect(throws: CacheEnvelopeError.self, "accepted \(payload)") {
                try CacheEnvelope.decode(envelope(payload), limit: 4096)
            }
        }
    }

    @Test func theLRUIndexKeepsTheMostRecentSlots() {
        var index = CacheIndex()
        #expect(index.touch("aaaaaaaaaaaa", capacity: 2).isEmpty)
        #expect(index.touch("bbbbbbbbbbbb", capacity: 2).isEmpty)
        #expect(index.touch("aaaaaaaaaaaa", capacity: 2).isEmpty)
        #expect(index.touch("cccccccccccc", capacity: 2) == ["bbbbbbbbbbbb"])
        #expect(CacheIndex(data: index.encoded) == index)
        #expect(CacheIndex(data: Data("garbage".utf8)).slots.isEmpty)
        #expect(CacheIndex(data: Data("{\"version\":1,\"slots\":[\"../../etc\"]}".utf8)).slots.isEmpty)
    }
}

/// The FuzzCache seed corpus, replayed in `swift test` with the harness's invariants.
@Suite struct CacheCorpusTests {
    static var corpus: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fuzz/Corpus/FuzzCache")
    }

    @Test func seedCorpusHoldsTheFuzzInvariants() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path).sorted()
        #expect(names.count >= 10)
        var decoded = 0
        for name in names {
            let bytes = try Data(contentsOf: Self.corpus.appendingPathComponent(name))
            guard let mode = bytes.first else { continue }
            var entry = Data(bytes.dropFirst())
            if mode & 1 == 1 {
                let header =
                    "{\"checksum\":\"\(SHA1.hexDigest(entry))\",\"format\":\"halyard-cache\",\"length\":\(entry.count),\"version\":1}\n"
                entry = Data(header.utf8) + entry
            }
            guard let envelope = try? CacheEnvelope.decode(entry, limit: 4096) else { continue }
            decoded += 1
            #expect(Set(envelope.flags.map(\.key)).count == envelope.flags.count, "\(name)")
            #expect(try CacheEnvelope.decode(envelope.encoded(), limit: 1 << 20) == envelope, "\(name)")
        }
        #expect(decoded >= 3, "the valid seeds decode")
    }
}
