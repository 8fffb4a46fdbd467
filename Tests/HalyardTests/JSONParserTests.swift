import Foundation
import Testing

@testable import Halyard

@Suite struct JSONParserTests {
    func parse(_ s: String, limits: JSONParsingLimits = .default) throws(JSONParseError) -> JSONValue {
        try JSONValue(parsing: s, limits: limits)
    }

    func error(_ s: String, limits: JSONParsingLimits = .default) -> JSONParseError? {
        do throws(JSONParseError) {
            _ = try parse(s, limits: limits)
            return nil
        } catch {
            return error
        }
    }

    func error(bytes: [UInt8], limits: JSONParsingLimits = .default) -> JSONParseError? {
        do throws(JSONParseError) {
            _ = try JSONValue(parsing: Data(bytes), limits: limits)
            return nil
        } catch {
            return error
        }
    }

    @Test func scalars() throws {
        #expect(try parse("null") == .null)
        #expect(try parse("true") == .bool(true))
        #expect(try parse("false") == .bool(false))
        #expect(try parse(" \t\r\n\"x\" \n") == .string("x"))
        #expect(try parse("[]") == .array([]))
        #expect(try parse("{}") == .object([:]))
        #expect(
            try parse(#"{"a":[1,{"b":null}],"c":"d"}"#)
                == .object(["a": .array([.int(1), .object(["b": .null])]), "c": .string("d")]))
    }

    @Test func integerFloatDistinction() throws {
        #expect(try parse("1") == .int(1))
        #expect(try parse("-0") == .int(0))
        #expect(try parse("1.0") == .double(1.0))
        #expect(try parse("1e0") == .double(1.0))
        #expect(try parse("1E+2") == .double(100))
        #expect(try parse("-2.5e-3") == .double(-0.0025))
        #expect(try parse("0.1") == .double(0.1))
        #expect(try parse("123456789012345678") == .int(123_456_789_012_345_678))
    }

    @Test func int64BoundsAndOverflowToDouble() throws {
        #expect(try parse("9223372036854775807") == .int(.max))
        #expect(try parse("-9223372036854775808") == .int(.min))
        #expect(try parse("9223372036854775808") == .double(9_223_372_036_854_775_808.0))
        #expect(try parse("-9223372036854775809") == .double(-9_223_372_036_854_775_809.0))
        #expect(try parse("123456789012345678901234567890") == .double(1.2345678901234568e29))
    }

    @Test func doublesAreCorrectlyRounded() throws {
        // Cases outside the exact fast path must match the standard library's conversion.
        let literals = [
            "0.1", "3.141592653589793", "2.2250738585072014e-308", "5e-324",
            "1.7976931348623157e308", "9007199254740993.0", "0.30000000000000004",
            "123456789012345678901234567890e-10", "1e22", "1e23", "4.35e-15",
            "1e-400", "0.000000000000000000000000000001",
        ]
        for literal in literals {
            let expected = try #require(Double(literal), "the standard library parses \(literal)")
            #expect(try parse(literal) == .double(expected), "\(literal)")
        }
    }

    @Test func stringsAndEscapes() throws {
        #expect(try parse(#""a\"b\\c\/d\b\f\n\r\t""#) == .string("a\"b\\c/d\u{8}\u{c}\n\r\t"))
        #expect(try parse(#""\u0041\u00e9\u20AC""#) == .string("Aé€"))
        #expect(try parse(#""\ud83d\ude00""#) == .string("😀"))
        #expect(try parse("\"héllo 😀\"") == .string("héllo 😀"))
        #expect(try parse(#""\u0000""#) == .string("\u{0}"))
        #expect(try parse(#""plain then \n escape é""#) == .string("plain then \n escape é"))
    }

    // MARK: Rejections, each with its offset.

    @Test func rejectsEmptyAndTruncated() {
        #expect(error("") == JSONParseError(.unexpectedEndOfInput, offset: 0))
        #expect(error("   ") == JSONParseError(.unexpectedEndOfInput, offset: 3))
        #expect(error("[1,") == JSONParseError(.unexpectedEndOfInput, offset: 3))
        #expect(error(#"{"a""#) == JSONParseError(.unexpectedEndOfInput, offset: 4))
        #expect(error(#""abc"#) == JSONParseError(.unexpectedEndOfInput, offset: 4))
        #expect(error("tru") == JSONParseError(.unexpectedEndOfInput, offset: 3))
        #expect(error("1.") == JSONParseError(.unexpectedEndOfInput, offset: 2))
        #expect(error(#""\u12"#) == JSONParseError(.unexpectedEndOfInput, offset: 5))
    }

    @Test func rejectsUnexpectedCharacters() {
        #expect(error("[1 2]") == JSONParseError(.unexpectedCharacter(UInt8(ascii: "2")), offset: 3))
        #expect(error("{1:2}") == JSONParseError(.unexpectedCharacter(UInt8(ascii: "1")), offset: 1))
        #expect(error(#"{"a" 1}"#) == JSONParseError(.unexpectedCharacter(UInt8(ascii: "1")), offset: 5))
        #expect(error("[1,]") == JSONParseError(.unexpectedCharacter(UInt8(ascii: "]")), offset: 3))
        #expect(error(#"{"a":1,}"#) == JSONParseError(.unexpectedCharacter(UInt8(ascii: "}")), offset: 7))
        #expect(error("'a'") == JSONParseError(.unexpectedCharacter(UInt8(ascii: "'")), offset: 0))
        #expect(error("+1") == JSONParseError(.unexpectedCharacter(UInt8(ascii: "+")), offset: 0))
        #expect(error(".5") == JSONParseError(.unexpectedCharacter(UInt8(ascii: ".")), offset: 0))
        // A byte-order mark is not accepted.
        #expect(error(bytes: [0xEF, 0xBB, 0xBF, 0x31]) == JSONParseError(.unexpectedCharacter(0xEF), offset: 0))
        // Form feed is not JSON whitespace.
        #expect(error("\u{c}1") == JSONParseError(.unexpectedCharacter(0x0C), offset: 0))
    }

    @Test func rejectsBadLiterals() {
        #expect(error("nul1") == JSONParseError(.invalidLiteral, offset: 0))
        #expect(error("[truE]") == JSONParseError(.invalidLiteral, offset: 1))
        #expect(error("True") == JSONParseError(.unexpectedCharacter(UInt8(ascii: "T")), offset: 0))
    }

    @Test func rejectsNonFinite() {
        #expect(error("NaN") == JSONParseError(.nonFiniteLiteral, offset: 0))
        #expect(error("[Infinity]") == JSONParseError(.nonFiniteLiteral, offset: 1))
        #expect(error("[1, -Infinity]") == JSONParseError(.nonFiniteLiteral, offset: 4))
        // Only NaN/Inf... are reported as non-finite literals; other capitals are just unexpected.
        #expect(error("Null") == JSONParseError(.unexpectedCharacter(UInt8(ascii: "N")), offset: 0))
        #expect(error("[-I]") == JSONParseError(.invalidNumber, offset: 1))
        #expect(error("1e400") == JSONParseError(.numberOutOfRange, offset: 0))
        #expect(error("[-1e99999999999999999999]") == JSONParseError(.numberOutOfRange, offset: 1))
    }

    @Test func rejectsMalformedNumbers() {
        #expect(error("01") == JSONParseError(.leadingZero, offset: 0))
        #expect(error("[-012]") == JSONParseError(.leadingZero, offset: 2))
        #expect(error("-00") == JSONParseError(.leadingZero, offset: 1))
        #expect(error("-") == JSONParseError(.unexpectedEndOfInput, offset: 1))
        #expect(error("[-a]") == JSONParseError(.invalidNumber, offset: 1))
        #expect(error("[1.e5]") == JSONParseError(.invalidNumber, offset: 1))
        #expect(error("[1e+]") == JSONParseError(.invalidNumber, offset: 1))
        #expect(error("0x10") == JSONParseError(.trailingData, offset: 1))
    }

    @Test func rejectsInvalidUTF8() {
        let q = UInt8(ascii: "\"")
        // Lone continuation byte, overlong "/", encoded surrogate U+D800, above U+10FFFF,
        // truncated sequence, 0xFF.
        #expect(error(bytes: [q, 0x61, 0x80, q]) == JSONParseError(.invalidUTF8, offset: 2))
        #expect(error(bytes: [q, 0xC0, 0xAF, q]) == JSONParseError(.invalidUTF8, offset: 1))
        #expect(error(bytes: [q, 0xE0, 0x80, 0xAF, q]) == JSONParseError(.invalidUTF8, offset: 1))
        #expect(error(bytes: [q, 0xED, 0xA0, 0x80, q]) == JSONParseError(.invalidUTF8, offset: 1))
        #expect(error(bytes: [q, 0xF4, 0x90, 0x80, 0x80, q]) == JSONParseError(.invalidUTF8, offset: 1))
        #expect(error(bytes: [q, 0xF0, 0x8F, 0xBF, 0xBF, q]) == JSONParseError(.invalidUTF8, offset: 1))
        #expect(error(bytes: [q, 0xE2, 0x82, q]) == JSONParseError(.invalidUTF8, offset: 1))
        #expect(error(bytes: [q, 0xFF, q]) == JSONParseError(.invalidUTF8, offset: 1))
        // Invalid UTF-8 after an escape and in a member name.
        #expect(error(bytes: [q, 0x5C, 0x6E, 0xC3, q]) == JSONParseError(.invalidUTF8, offset: 3))
        #expect(error(bytes: [0x7B, q, 0xC3, 0x28, q, 0x3A, 0x31, 0x7D]) == JSONParseError(.invalidUTF8, offset: 2))
        // Non-ASCII outside strings.
        #expect(error(bytes: [0x5B, 0xC3, 0xA9, 0x5D]) == JSONParseError(.unexpectedCharacter(0xC3), offset: 1))
        // Valid multi-byte sequences at the edges of each range are accepted.
        #expect(
            error(bytes: [
                q, 0xC2, 0x80, 0xDF, 0xBF, 0xE0, 0xA0, 0x80, 0xED, 0x9F, 0xBF, 0xEF, 0xBF, 0xBF,
                0xF0, 0x90, 0x80, 0x80, 0xF4, 0x8F, 0xBF, 0xBF, q,
            ]) == nil)
    }

    @Test func rejectsBadStrings() {
        #expect(error("\"a\u{1}\"") == JSONParseError(.controlCharacterInString, offset: 2))
        #expect(error("\"a\nb\"") == JSONParseError(.controlCharacterInString, offset: 2))
        #expect(error(#""\x""#) == JSONParseError(.invalidEscape, offset: 1))
        #expect(error(#""ab\'""#) == JSONParseError(.invalidEscape, offset: 3))
        #expect(error(#""\u12G4""#) == JSONParseError(.invalidUnicodeEscape, offset: 1))
        #expect(error(#""\ud800""#) == JSONParseError(.unpairedSurrogate, offset: 1))
        #expect(error(#""\udc00\ud800""#) == JSONParseError(.unpairedSurrogate, offset: 1))
        #expect(error(#""x\ud800\u0041""#) == JSONParseError(.unpairedSurrogate, offset: 2))
        #expect(error(#""x\ud800\n""#) == JSONParseError(.unpairedSurrogate, offset: 2))
        #expect(error(#""\ud800\ud800""#) == JSONParseError(.unpairedSurrogate, offset: 1))
    }

    @Test func rejectsDuplicateMembers() {
        #expect(error(#"{"a":1,"a":2}"#) == JSONParseError(.duplicateMemberName("a"), offset: 7))
        // Equal after unescaping.
        #expect(error(#"{"a":1, "\u0061":2}"#) == JSONParseError(.duplicateMemberName("a"), offset: 8))
        // Same name in different objects is fine.
        #expect(error(#"{"a":{"a":1},"b":{"a":2}}"#) == nil)
    }

    @Test func rejectsTrailingData() {
        #expect(error("{} {}") == JSONParseError(.trailingData, offset: 3))
        #expect(error("1 2") == JSONParseError(.trailingData, offset: 2))
        #expect(error("null\u{0}") == JSONParseError(.trailingData, offset: 4))
    }

    @Test func enforcesLimits() {
        let small = JSONParsingLimits(maxInputBytes: 10, maxDepth: 2, maxObjectMembers: 2)
        #expect(error("[1,2,3,4,5,6]", limits: small) == JSONParseError(.inputTooLarge(limit: 10), offset: 10))
        #expect(error("[[1]]", limits: small) == nil)
        #expect(error("[[[1]]]", limits: small) == JSONParseError(.nestingTooDeep(limit: 2), offset: 2))
        #expect(error(#"{"a":{}}"#, limits: small) == nil)
        #expect(error(#"{"a":1}"#, limits: small) == nil)
        #expect(
            error(
                #"{"a":1,"b":2,"c":3}"#, limits: JSONParsingLimits(maxInputBytes: 100, maxDepth: 2, maxObjectMembers: 2)
            )
                == JSONParseError(.tooManyMembers(limit: 2), offset: 13))
        // The stack-safety ceiling applies whatever the caller asks.
        let huge = JSONParsingLimits(maxInputBytes: 1 << 20, maxDepth: .max, maxObjectMembers: 10)
        let deep = String(repeating: "[", count: 100_000)
        #expect(
            error(deep, limits: huge)
                == JSONParseError(
                    .nestingTooDeep(limit: JSONParsingLimits.maxSupportedDepth),
                    offset: JSONParsingLimits.maxSupportedDepth))
    }

    /// The deepest document the parser accepts (`maxSupportedDepth`, 128 levels) fits in a
    /// 512 KiB thread stack (Apple platforms' secondary-thread default) even in a debug build,
    /// so the recursive parser is safe on secondary threads. (512 levels did not fit in 1 MiB in
    /// a debug build: that is why the ceiling is 128.)
    @Test func maxSupportedDepthFitsInASmallStack() async throws {
        let depth = JSONParsingLimits.maxSupportedDepth
        let text = String(repeating: "[{\"a\":", count: depth / 2) + "1" + String(repeating: "}]", count: depth / 2)
        let limits = JSONParsingLimits(maxInputBytes: 1 << 20, maxDepth: depth, maxObjectMembers: 10)
        let parsed = try await Wait.result("the parse on a 512 KiB thread") {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let thread = Thread {
                    continuation.resume(returning: (try? JSONValue(parsing: text, limits: limits)) != nil)
                }
                thread.stackSize = 512 << 10
                thread.start()
            }
        }
        #expect(parsed)
    }

    @Test func presets() {
        #expect(JSONParsingLimits.context.maxInputBytes == 65_536)
        #expect(JSONParsingLimits.context.maxDepth == 32)
        #expect(JSONParsingLimits.ofrepResponse.maxInputBytes == 8 * 1_048_576)
        let body = "{\"flags\":[\"" + String(repeating: "x", count: 2 << 20) + "\"]}"
        #expect(error(body)?.kind == .inputTooLarge(limit: 1 << 20))
        #expect(error(body, limits: .ofrepResponse) == nil)
    }

    @Test func errorDescriptionsNameProblemAndOffset() throws {
        let e = try #require(error(#"{"a":1,"a":2}"#))
        #expect(e.description == #"invalid JSON at byte 7: duplicate member name "a""#)
        #expect(try #require(error("[1 2]")).description == "invalid JSON at byte 3: unexpected character '2'")
    }

    @Test func dataAndStringAndRawEntryPointsAgree() throws {
        let text = #"{"k":[1,2.5,"é\n"],"n":null}"#
        let a = try JSONValue(parsing: text)
        let b = try JSONValue(parsing: Data(text.utf8))
        let c = try Array(text.utf8).withUnsafeBytes { try JSONValue(parsing: $0) }
        #expect(a == b && b == c)
    }

    /// The string scanner skips plain bytes eight at a time: put each kind of special byte at
    /// every position around the word boundaries and check the result byte by byte.
    @Test func specialBytesAtEveryPositionOfTheWordScan() throws {
        for length in 0..<20 {
            let plain = String(repeating: "a", count: length)
            #expect(try JSONValue(parsing: "\"\(plain)\"") == .string(plain))
            #expect(try JSONValue(parsing: "[\"\(plain)\\n\(plain)\"]") == .array([.string(plain + "\n" + plain)]))
            #expect(try JSONValue(parsing: "\"\(plain)é\(plain)\"") == .string(plain + "é" + plain))
            #expect(try JSONValue(parsing: "\"\(plain)\u{7F}~ \(plain)\"") == .string(plain + "\u{7F}~ " + plain))
            #expect(
                error("\"\(plain)\u{1F}\(plain)\"") == JSONParseError(.controlCharacterInString, offset: 1 + length))
            #expect(error("\"\(plain)\u{0}\"") == JSONParseError(.controlCharacterInString, offset: 1 + length))
            #expect(
                error(bytes: [0x22] + Array(plain.utf8) + [0xFF, 0x22])
                    == JSONParseError(.invalidUTF8, offset: 1 + length))
            #expect(error("\"\(plain)") == JSONParseError(.unexpectedEndOfInput, offset: 1 + length))
            // Bytes just above and below the special values stay plain.
            #expect(try JSONValue(parsing: "\"\(plain)!#[]\(plain)\"") == .string(plain + "!#[]" + plain))
        }
    }

    /// Pathological inputs finish quickly (linear time): long escape strings, many members,
    /// deep nesting at the limit.
    @Test func pathologicalInputsAreFast() throws {
        let clock = ContinuousClock()
        let escapes = "\"" + String(repeating: "\\u00e9\\n", count: 8_000) + "\""
        let members = "{" + (0..<5_000).map { "\"m\($0)\":\($0)" }.joined(separator: ",") + "}"
        let nested = String(repeating: "[", count: 100_000)
        let deepInput = JSONParsingLimits(maxInputBytes: 1 << 20, maxDepth: 32, maxObjectMembers: 10_000)
        let elapsed = try clock.measure {
            for _ in 0..<5 {
                _ = try JSONValue(parsing: escapes)
                _ = try JSONValue(parsing: members)
                #expect(error(nested, limits: deepInput)?.kind == .nestingTooDeep(limit: 32))
            }
        }
        #expect(elapsed < .seconds(5))
    }
}
