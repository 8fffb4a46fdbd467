import Foundation
import Testing

@_spi(Fuzzing) @testable import Halyard

/// Random tests use the library's seeded `SplitMix64` so they are reproducible.
typealias SeededGenerator = SplitMix64

/// Random JSON values covering every case, awkward strings and awkward numbers.
enum RandomJSON {
    static let scalars: [Unicode.Scalar] = [
        "a", "Z", "0", " ", "\"", "\\", "/", "\u{0}", "\u{1}", "\u{8}", "\u{9}", "\u{A}", "\u{C}", "\u{D}",
        "\u{1F}", "\u{7F}", "\u{80}", "é", "\u{2028}", "€", "\u{D7FF}", "\u{E000}", "\u{FB33}", "\u{FFFF}",
        "\u{10000}", "😀", "\u{10FFFF}",
    ]

    static func string<G: RandomNumberGenerator>(_ g: inout G) -> String {
        let n = Int.random(in: 0...8, using: &g)
        var s = String.UnicodeScalarView()
        for _ in 0..<n { s.append(scalars.randomElement(using: &g)!) }
        return String(s)
    }

    static func double<G: RandomNumberGenerator>(_ g: inout G) -> Double {
        switch Int.random(in: 0..<5, using: &g) {
        case 0: return Double(Int.random(in: -1000...1000, using: &g)) / 8
        case 1: return Double.random(in: -1e6...1e6, using: &g)
        case 2:
            while true {
                let d = Double(bitPattern: g.next())
                if d.isFinite { return d }
            }
        case 3:
            return [
                0.0, -0.0, 1e21, 1e-7, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 9_007_199_254_740_992, 0.1,
            ]
            .randomElement(using: &g)!
        default: return Double(Int64.random(in: .min ... .max, using: &g))
        }
    }

    static func value<G: RandomNumberGenerator>(_ g: inout G, depth: Int = 0) -> JSONValue {
        let maxKind = depth > 3 ? 5 : 7
        switch Int.random(in: 0..<maxKind, using: &g) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &g))
        case 2:
            return .int(
                [
                    Int64.random(in: -1000...1000, using: &g), Int64.random(in: .min ... .max, using: &g),
                    .max, .min, 1 << 53, (1 << 53) + 1,
                ][Int.random(in: 0..<6, using: &g)])
        case 3: return .double(double(&g))
        case 4: return .string(string(&g))
        case 5: return .array((0..<Int.random(in: 0...4, using: &g)).map { _ in value(&g, depth: depth + 1) })
        default:
            var members: [String: JSONValue] = [:]
            for _ in 0..<Int.random(in: 0...5, using: &g) { members[string(&g)] = value(&g, depth: depth + 1) }
            return .object(members)
        }
    }
}

@Suite struct CanonicalJSONTests {
    func canonical(_ text: String) throws -> String {
        try JSONValue(parsing: text).canonicalJSON
    }

    /// RFC 8785 §3.2.2 example (input data as given there, output as expected).
    @Test func rfc8785MainExample() throws {
        let input = #"""
            {
              "numbers": [333333333.33333329, 1E30, 4.50,
                          2e-3, 0.000000000000000000000000001],
              "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
              "literals": [null, true, false]
            }
            """#
        let expected =
            #"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
        #expect(try canonical(input) == expected)
    }

    /// RFC 8785 §3.2.3 sorting example: names sorted by UTF-16 code units.
    @Test func rfc8785SortingExample() throws {
        let input = #"""
            {"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh",
             "1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control",
             "\u00f6":"Latin Small Letter O With Diaeresis"}
            """#
        let out = try canonical(input)
        let names = ["\r", "1", "\u{80}", "ö", "€", "😀", "\u{FB33}"]
        var position = out.startIndex
        for name in names {
            let needle = JSONValue.string(name).canonicalJSON + ":"
            let range = try #require(out.range(of: needle, range: position..<out.endIndex), "\(name)")
            position = range.upperBound
        }
        #expect(out.hasPrefix(#"{"\r":"Carriage Return","1":"One","\#u{80}":"Control""#))
    }

    /// RFC 8785 Appendix B: IEEE 754 bit patterns and their ECMAScript serialization.
    @Test(
        arguments: [
            (0x0000_0000_0000_0000, "0"), (0x8000_0000_0000_0000, "0"),
            (0x0000_0000_0000_0001, "5e-324"), (0x8000_0000_0000_0001, "-5e-324"),
            (0x7FEF_FFFF_FFFF_FFFF, "1.7976931348623157e+308"), (0xFFEF_FFFF_FFFF_FFFF, "-1.7976931348623157e+308"),
            (0x4340_0000_0000_0000, "9007199254740992"), (0xC340_0000_0000_0000, "-9007199254740992"),
            (0x4430_0000_0000_0000, "295147905179352830000"),
            (0x44B5_2D02_C7E1_4AF5, "9.999999999999997e+22"), (0x44B5_2D02_C7E1_4AF6, "1e+23"),
            (0x44B5_2D02_C7E1_4AF7, "1.0000000000000001e+23"),
            (0x444B_1AE4_D6E2_EF4E, "999999999999999700000"), (0x444B_1AE4_D6E2_EF4F, "999999999999999900000"),
            (0x444B_1AE4_D6E2_EF50, "1e+21"),
            (0x3EB0_C6F7_A0B5_ED8C, "9.999999999999997e-7"), (0x3EB0_C6F7_A0B5_ED8D, "0.000001"),
            (0x41B3_DE43_5555_5553, "333333333.3333332"), (0x41B3_DE43_5555_5554, "333333333.33333325"),
            (0x41B3_DE43_5555_5555, "333333333.3333333"), (0x41B3_DE43_5555_5556, "333333333.3333334"),
            (0x41B3_DE43_5555_5557, "333333333.33333343"),
            (0xBECB_F647_612F_3696, "-0.0000033333333333333333"),
            (0x4314_3FF3_C1CB_0959, "1424953923781206.2"),
        ] as [(UInt64, String)])
    func rfc8785NumberTable(bits: UInt64, expected: String) throws {
        let value = JSONValue.double(Double(bitPattern: bits))
        #expect(value.canonicalJSON == expected)
        // The canonical text parses back to the same double.
        let back = try JSONValue(parsing: expected)
        switch back {
        case .int(let i): #expect(Double(i) == Double(bitPattern: bits))
        case .double(let d): #expect(d == Double(bitPattern: bits))
        default: Issue.record("not a number: \(back)")
        }
    }

    @Test func moreNumberForms() {
        let cases: [(Double, String)] = [
            (1, "1"), (-1.5, "-1.5"), (0.1, "0.1"), (100, "100"), (1e20, "100000000000000000000"),
            (1e21, "1e+21"), (1.5e21, "1.5e+21"), (1e-6, "0.000001"), (1e-7, "1e-7"), (1.25e-7, "1.25e-7"),
            (123456.789, "123456.789"), (-0.0, "0"), (2.5e-5, "0.000025"), (1e300, "1e+300"),
        ]
        for (d, text) in cases {
            #expect(JSONValue.double(d).canonicalJSON == text, "\(d)")
        }
        #expect(ECMAScriptNumber.string(.nan) == "null")
        #expect(JSONValue.array([.double(.infinity), .double(-.infinity)]).canonicalJSON == "[null,null]")
    }

    /// Integers up to 2^53 are exact; larger ones are written like the double they round to.
    @Test func integersBeyond2To53() {
        #expect(JSONValue.int(9_007_199_254_740_992).canonicalJSON == "9007199254740992")
        #expect(JSONValue.int(-9_007_199_254_740_992).canonicalJSON == "-9007199254740992")
        #expect(JSONValue.int(9_007_199_254_740_993).canonicalJSON == "9007199254740992")
        #expect(JSONValue.int(.max).canonicalJSON == "9223372036854776000")
        #expect(JSONValue.int(.min).canonicalJSON == "-9223372036854776000")
        #expect(JSONValue.int(1_152_921_504_606_846_977).canonicalJSON == "1152921504606847000")
        // The compact form keeps every bit.
        #expect(JSONValue.int(.max).jsonString == "9223372036854775807")
        #expect(JSONValue.int(.min).jsonString == "-9223372036854775808")
    }

    @Test func stringEscaping() {
        #expect(JSONValue.string("\u{8}\u{9}\u{A}\u{C}\u{D}\"\\").canonicalJSON == #""\b\t\n\f\r\"\\""#)
        #expect(JSONValue.string("\u{0}\u{1}\u{1F}\u{7F}").canonicalJSON == "\"\\u0000\\u0001\\u001f\u{7F}\"")
        #expect(JSONValue.string("/é€😀\u{2028}").canonicalJSON == "\"/é€😀\u{2028}\"")
        #expect(JSONValue.string("").canonicalJSON == #""""#)
    }

    /// The writer skips plain bytes eight at a time: put each byte that needs escaping at every
    /// position around the word boundaries.
    @Test func escapesAtEveryPositionOfTheWordScan() {
        let specials: [(String, String)] = [
            ("\"", "\\\""), ("\\", "\\\\"), ("\n", "\\n"), ("\u{1}", "\\u0001"),
            ("\u{1F}", "\\u001f"), ("é", "é"), ("\u{7F}", "\u{7F}"), (" ", " "),
        ]
        for length in 0..<20 {
            let plain = String(repeating: "x", count: length)
            for (raw, escaped) in specials {
                let value = JSONValue.string(plain + raw + plain + raw)
                #expect(value.canonicalJSON == "\"" + plain + escaped + plain + escaped + "\"", "\(length) \(escaped)")
            }
        }
    }

    @Test func compactFormKeepsDoubleness() throws {
        #expect(JSONValue.double(1).jsonString == "1.0")
        #expect(JSONValue.double(-0.0).jsonString == "-0.0")
        #expect(JSONValue.double(1e21).jsonString == "1e+21")
        #expect(JSONValue.double(2.5).jsonString == "2.5")
        #expect(JSONValue.double(Double(bitPattern: 0x4430_0000_0000_0000)).jsonString == "295147905179352830000.0")
        #expect(try JSONValue(parsing: JSONValue.double(1).jsonString) == .double(1))
        let v: JSONValue = ["b": [1, 2.0, "x"], "a": nil]
        #expect(v.jsonString == #"{"a":null,"b":[1,2.0,"x"]}"#)
        #expect(String(decoding: v.jsonData, as: UTF8.self) == v.jsonString)
        #expect(String(decoding: v.canonicalJSONData, as: UTF8.self) == #"{"a":null,"b":[1,2,"x"]}"#)
    }

    @Test func utf16OrderDiffersFromScalarOrder() {
        // U+FFFF sorts after U+10000 in UTF-16 (surrogates come first), before it by scalar.
        #expect(utf16Precedes("\u{10000}", "\u{FFFF}"))
        #expect(!utf16Precedes("\u{FFFF}", "\u{10000}"))
        #expect(utf16Precedes("\u{D7FF}", "\u{10000}"))
        #expect(utf16Precedes("a", "ab"))
        #expect(!utf16Precedes("ab", "ab"))
        let v: JSONValue = .object(["\u{FFFF}": 1, "\u{10000}": 2, "\u{E000}": 3, "z": 4])
        #expect(v.canonicalJSON == "{\"z\":4,\"\u{10000}\":2,\"\u{E000}\":3,\"\u{FFFF}\":1}")
    }

    /// Seeded property test: for random values, parse(jsonString(v)) == v exactly, and the
    /// canonical form is a fixed point of parse-then-canonicalize.
    @Test func randomRoundTripAndFixedPoint() throws {
        var g = SeededGenerator(seed: 0x4A53_4F4E)
        for i in 0..<3_000 {
            let v = RandomJSON.value(&g)
            let compact = v.jsonString
            let back = try JSONValue(parsing: compact)
            #expect(back == v, "case \(i): \(compact)")
            let canon = v.canonicalJSON
            let reparsed = try JSONValue(parsing: canon)
            #expect(reparsed.canonicalJSON == canon, "case \(i): \(canon)")
            // The canonical text is also valid for Foundation's parser.
            #expect((try? JSONSerialization.jsonObject(with: Data(canon.utf8), options: [.fragmentsAllowed])) != nil)
        }
    }

    /// Differential against an ECMAScript engine (Node's `JSON.stringify`, which is what RFC 8785
    /// specifies for numbers and strings): random doubles (raw bit patterns) and random strings.
    /// Reported as skipped, with the reason, when `node` is not installed.
    @Test(
        .enabled(
            if: (ExternalTool.find("node") ?? ExternalTool.find("nodejs")) != nil,
            "node not found: the ECMAScript differential needs it"))
    func differentialAgainstNodeJSONStringify() throws {
        let node = try #require(ExternalTool.find("node") ?? ExternalTool.find("nodejs"), "node not found")
        var g = SeededGenerator(seed: 0xEC3A)
        var values: [JSONValue] = []
        var lines: [String] = []
        for i in 0..<4_000 {
            if i % 4 == 3 {
                let s = RandomJSON.string(&g)
                values.append(.string(s))
                lines.append("s " + SHA1.hex(Array(s.utf8)))
            } else {
                var d = RandomJSON.double(&g)
                if i % 4 == 2 { d = Double(bitPattern: g.next()) }
                if !d.isFinite { d = 1 }
                values.append(.double(d))
                lines.append("n " + String(d.bitPattern, radix: 16))
            }
        }
        let script = """
            const lines = require('fs').readFileSync(0, 'utf8').split('\\n').filter(l => l.length);
            const out = lines.map(l => {
              const [k, h] = l.split(' ');
              if (k === 'n') { const b = Buffer.alloc(8); b.writeBigUInt64BE(BigInt('0x' + h)); return JSON.stringify(b.readDoubleBE(0)); }
              return JSON.stringify(Buffer.from(h, 'hex').toString('utf8'));
            });
            process.stdout.write(out.join('\\n') + '\\n');
            """
        let (status, output) = try ExternalTool.filter(
            node, ["-e", script], input: Data((lines.joined(separator: "\n") + "\n").utf8))
        #expect(status == 0)
        let expected = String(decoding: output, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            .map(String.init)
        try #require(expected.count >= values.count)
        for (value, js) in zip(values, expected) {
            #expect(value.canonicalJSON == js, "\(value)")
        }
    }

    /// Differential: numbers formatted by us parse back to the same double with Foundation.
    @Test func randomDoublesRoundTripThroughFoundation() throws {
        var g = SeededGenerator(seed: 7)
        for _ in 0..<20_000 {
            let d = RandomJSON.double(&g)
            let text = JSONValue.double(d).canonicalJSON
            #expect(Double(text) == d, "\(d) -> \(text)")
        }
    }
}
