import Foundation
import Testing

@_spi(Fuzzing) @testable import Halyard

/// Inputs found by the libFuzzer harnesses in `Fuzz/` (and hand-made neighbours of them).
/// Each one must be handled without crashing and keep the harness invariants.
@Suite struct FuzzRegressionTests {
    /// The FuzzContext invariants, as the harness checks them.
    static func checkContextInvariants(_ bytes: [UInt8]) {
        guard let context = try? EvaluationContext(json: Data(bytes)) else { return }
        guard let fitted = try? context.fitted() else { return }
        #expect(fitted.utf16Length <= 4096)
        let again = try? EvaluationContext(json: Data(fitted.canonicalJSON.utf8)).fitted()
        #expect(again?.canonicalJSON == fitted.canonicalJSON)
        #expect(again?.fingerprint == fitted.fingerprint)
    }

    @Test(arguments: [
        // Truncated input inside escapes and surrogate pairs.
        #"{"a":"\ud83d\"#, #"{"a":"\ud83d\u"#, #"{"a":"\ud83d\ude0"#, #"{"a":"\"#,
        // Numbers at every edge.
        #"{"a":-0.0e-0}"#, #"{"a":1E-400}"#, #"{"a":9223372036854775808}"#, #"{"a":-9223372036854775809}"#,
        #"{"a":1e308}"#, #"{"a":0.0000000000000000000000000000000000000001}"#,
        // Whitespace and empty containers.
        " {\r\n\t} ", #"{"":{"":[[],{}]}}"#,
    ])
    func handWrittenEdgeCases(text: String) {
        Self.checkContextInvariants(Array(text.utf8))
    }
}

/// Found by FuzzJSON (artifact crash-83cc7cfa…): JSONSerialization drops a U+FEFF at the start of
/// a string, so the differential check failed. The strict parser must keep it (it is an ordinary
/// character inside a string), in values and in names, and the serializers must write it back.
@Suite struct ByteOrderMarkInsideStringsTests {
    @Test func leadingFEFFInStringsIsKept() throws {
        let bytes: [UInt8] = [0x7B, 0x22, 0xEF, 0xBB, 0xBF, 0x6B, 0x22, 0x3A, 0x22, 0xEF, 0xBB, 0xBF, 0x30, 0x22, 0x7D]
        let value = try JSONValue(parsing: Data(bytes))
        #expect(value == .object(["\u{FEFF}k": .string("\u{FEFF}0")]))
        #expect(value.canonicalJSON == "{\"\u{FEFF}k\":\"\u{FEFF}0\"}")
        #expect(Array(value.canonicalJSON.utf8) == bytes)
        #expect(try JSONValue(parsing: value.jsonString) == value)
    }

    @Test func fullArtifactRoundTrips() throws {
        let text =
            "{\"tagretingKey\":\"u\",\"name\":\"\u{FEFF}0e9\\u20ac\\ud83d\\ude00\",\"ctl\":\"\\/00b\\f\\n\\r\\tr\\t\\\"\\\\\\/\"}"
        let value = try JSONValue(parsing: text)
        guard case .object(let members) = value else { Issue.record("not an object"); return }
        #expect(members["name"] == .string("\u{FEFF}0e9€😀"))
        #expect(members["ctl"] == .string("/00b\u{C}\n\r\tr\t\"\\/"))
        #expect(try JSONValue(parsing: value.canonicalJSON).canonicalJSON == value.canonicalJSON)
        FuzzRegressionTests.checkContextInvariants(Array(text.utf8))
    }
}

/// Hand-made neighbours of the fuzz findings: Swift's canonical-equivalence string equality
/// decides what is a duplicate and which member is `targetingKey` (see docs/context.md).
@Suite struct CanonicalEquivalenceTests {
    @Test func equivalentNamesAreDuplicates() {
        #expect(throws: JSONParseError(.duplicateMemberName("e\u{301}"), offset: 8)) {
            try JSONValue(parsing: "{\"\u{E9}\":1,\"e\u{301}\":2}")
        }
    }

    @Test func kelvinSignTargetingKeyIsStable() throws {
        let c = try EvaluationContext(json: "{\"targeting\u{212A}ey\":\"u1\",\"a\":1}")
        #expect(c.targetingKey == "u1")
        let f = try c.fitted()
        #expect(f.canonicalJSON == #"{"a":1,"kind":"user","targetingKey":"u1"}"#)
        #expect(try EvaluationContext(json: f.canonicalJSON).fitted().fingerprint == f.fingerprint)
    }
}

/// Found by FuzzJSON (artifact crash-6f7ede63…): `{"fb3":3,"\u{FEFF}1":49,"1":4}`. The names
/// `"\u{FEFF}1"` and `"1"` are different (Foundation merges them after stripping U+FEFF, which
/// broke the differential's member count). The strict parser must keep three members.
@Suite struct ByteOrderMarkNameCollisionTests {
    @Test func namesDifferingByFEFFAreDistinct() throws {
        let bytes: [UInt8] = Array(#"{"fb3":3,""#.utf8) + [0xEF, 0xBB, 0xBF] + Array(#"1":49,"1":4}"#.utf8)
        let value = try JSONValue(parsing: Data(bytes))
        #expect(value == .object(["fb3": 3, "\u{FEFF}1": 49, "1": 4]))
        #expect(value.canonicalJSON == "{\"1\":4,\"fb3\":3,\"\u{FEFF}1\":49}")
        FuzzRegressionTests.checkContextInvariants(bytes)
    }
}

/// Found by CI's FuzzJSON run (artifact crash-451e38a0…): `{"fb3":3,"\u{FEFF}1":49,"1\u{FEFF}":4}`.
/// Foundation strips only a leading U+FEFF, so it reads three names; the harness stripped every
/// U+FEFF and counted two. The parser was right; the harness now strips only a leading mark.
@Suite struct TrailingByteOrderMarkNameTests {
    @Test func leadingAndTrailingFEFFNamesAreThreeMembers() throws {
        let bytes: [UInt8] =
            Array(#"{"fb3":3,""#.utf8) + [0xEF, 0xBB, 0xBF] + Array(#"1":49,"1"#.utf8) + [0xEF, 0xBB, 0xBF]
            + Array(#"":4}"#.utf8)
        let value = try JSONValue(parsing: Data(bytes))
        #expect(value == .object(["fb3": 3, "\u{FEFF}1": 49, "1\u{FEFF}": 4]))
        FuzzRegressionTests.checkContextInvariants(bytes)
    }
}

/// The FuzzOFREP invariants over its committed seed corpus (`Fuzz/Corpus/FuzzOFREP`), through the
/// real decoder: a typed error, or unique keys with every item a value, a code default or an
/// error. (A 30 s run of the harness found no crash; a finding would be added to the corpus.)
@Suite struct OFREPCorpusTests {
    static var corpus: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fuzz/Corpus/FuzzOFREP")
    }

    @Test func seedCorpusKeepsTheHarnessInvariants() throws {
        let files = try FileManager.default.contentsOfDirectory(at: Self.corpus, includingPropertiesForKeys: nil)
        #expect(files.count >= 10)
        for file in files {
            let body = try Data(contentsOf: file)
            guard let decoded = try? OFREPResponse.decode(body, limit: 4_096) else { continue }
            #expect(Set(decoded.flags.map(\.key)).count == decoded.flags.count, "\(file.lastPathComponent)")
            for flag in decoded.flags where flag.errorCode != nil {
                #expect(flag.value == nil && flag.variant == nil && flag.reason == .error, "\(file.lastPathComponent)")
            }
            #expect(decoded.flags.allSatisfy { $0.value != .null }, "\(file.lastPathComponent)")
        }
    }
}
