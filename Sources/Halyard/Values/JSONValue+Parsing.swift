public import Foundation

// MARK: - Limits

/// Per-call limits for the strict JSON parser.
///
/// Every limit is checked while parsing, so a document that breaks one is rejected as soon as
/// the offending byte is reached, in time proportional to the bytes read so far.
///
/// Presets:
/// - ``default``: the generic parser — 1 MiB of input, depth 64, 10,000 members per object.
/// - ``context``: evaluation contexts (docs/context.md) — 64 KiB, depth 32, 1,000 members per object.
/// - ``ofrepResponse``: OFREP bulk responses and cache files — 8 MiB, depth 64,
///   100,000 members per object.
///
/// ```swift
/// let body = try JSONValue(parsing: data, limits: .ofrepResponse)
/// ```
public struct JSONParsingLimits: Sendable, Hashable {
    /// The largest accepted input, in bytes (UTF-8).
    public var maxInputBytes: Int
    /// The deepest accepted nesting of arrays and objects. The outermost container is at
    /// depth 1, so `maxDepth: 1` accepts `[1]` but not `[[1]]`. Values above
    /// ``maxSupportedDepth`` are treated as ``maxSupportedDepth`` (the parser is recursive and
    /// must not exhaust a thread's stack).
    public var maxDepth: Int
    /// The largest accepted number of members in any one object (arrays are bounded by
    /// ``maxInputBytes`` only).
    public var maxObjectMembers: Int

    /// The hard ceiling applied to ``maxDepth`` whatever the caller asks for (128). The parser is
    /// recursive; 128 levels fit in a 512 KiB thread stack even in a debug build.
    public static let maxSupportedDepth = 128

    /// Creates limits.
    /// - Parameters:
    ///   - maxInputBytes: the largest accepted input in bytes.
    ///   - maxDepth: the deepest accepted nesting (outermost container = 1), at most
    ///     ``maxSupportedDepth``.
    ///   - maxObjectMembers: the largest number of members of any one object.
    public init(maxInputBytes: Int, maxDepth: Int, maxObjectMembers: Int) {
        self.maxInputBytes = maxInputBytes
        self.maxDepth = maxDepth
        self.maxObjectMembers = maxObjectMembers
    }

    /// Generic defaults: 1 MiB input, depth 64, 10,000 members per object.
    public static let `default` = JSONParsingLimits(
        maxInputBytes: 1 << 20, maxDepth: 64, maxObjectMembers: 10_000)

    /// Evaluation-context defaults (docs/context.md): 64 KiB input, depth 32, 1,000 members per object
    /// (the top-level object's members include `targetingKey` and `kind`).
    public static let context = JSONParsingLimits(
        maxInputBytes: 64 << 10, maxDepth: 32, maxObjectMembers: 1_000)

    /// OFREP response and cache-file defaults (docs/protocol.md): 8 MiB input, depth 64,
    /// 100,000 members per object.
    public static let ofrepResponse = JSONParsingLimits(
        maxInputBytes: 8 << 20, maxDepth: 64, maxObjectMembers: 100_000)
}

// MARK: - Errors

/// A JSON document was rejected: what was wrong (``kind``) and where (``offset``).
///
/// ``offset`` is the zero-based byte offset, in the UTF-8 input, of the byte at which the
/// problem was detected (for example the first byte of an invalid UTF-8 sequence, the `\` of a
/// bad escape, the opening `"` of a duplicate member name, or the `[`/`{` that is one level too
/// deep). For ``Kind/inputTooLarge(limit:)`` it is the limit itself (the first byte beyond it).
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong with the input.
    public enum Kind: Sendable, Hashable {
        /// The input ended before the document was complete (includes empty input).
        case unexpectedEndOfInput
        /// A byte that cannot start or continue the current token.
        case unexpectedCharacter(UInt8)
        /// `NaN`, `Infinity` or `-Infinity`: not JSON.
        case nonFiniteLiteral
        /// A number with a superfluous leading zero such as `01` or `-00`.
        case leadingZero
        /// A malformed number such as `1.`, `.5`, `1e`, `-` or `+1`.
        case invalidNumber
        /// A number whose magnitude does not fit in a finite double (such as `1e400`).
        case numberOutOfRange
        /// A malformed literal: something that starts like `true`, `false` or `null` but is not.
        case invalidLiteral
        /// Bytes that are not well-formed UTF-8 (overlong forms, encoded surrogates, values
        /// above U+10FFFF, truncated or stray continuation bytes).
        case invalidUTF8
        /// An unescaped control character (U+0000–U+001F) inside a string.
        case controlCharacterInString
        /// A backslash followed by something other than `" \ / b f n r t u`.
        case invalidEscape
        /// `\u` not followed by four hexadecimal digits.
        case invalidUnicodeEscape
        /// A `\uD800`–`\uDFFF` escape that is not part of a high+low surrogate pair.
        case unpairedSurrogate
        /// The same member name appears twice in one object.
        case duplicateMemberName(String)
        /// Non-whitespace bytes after the complete document.
        case trailingData
        /// The input is larger than ``JSONParsingLimits/maxInputBytes``.
        case inputTooLarge(limit: Int)
        /// Arrays/objects nest deeper than ``JSONParsingLimits/maxDepth``.
        case nestingTooDeep(limit: Int)
        /// An object has more members than ``JSONParsingLimits/maxObjectMembers``.
        case tooManyMembers(limit: Int)
    }

    /// What was wrong.
    public let kind: Kind
    /// The zero-based byte offset at which the problem was detected.
    public let offset: Int

    /// Creates an error (public so that tests and wrappers can build expected values).
    public init(_ kind: Kind, offset: Int) {
        self.kind = kind
        self.offset = offset
    }

    /// A readable, single-line description such as
    /// `invalid JSON at byte 12: duplicate member name "a"`.
    public var description: String {
        let what: String
        switch kind {
        case .unexpectedEndOfInput: what = "unexpected end of input"
        case .unexpectedCharacter(let b):
            if b >= 0x21 && b < 0x7F {
                what = "unexpected character '\(Character(Unicode.Scalar(b)))'"
            } else {
                what = "unexpected byte 0x\(String(b, radix: 16, uppercase: true))"
            }
        case .nonFiniteLiteral: what = "NaN and Infinity are not JSON"
        case .leadingZero: what = "number with a leading zero"
        case .invalidNumber: what = "malformed number"
        case .numberOutOfRange: what = "number out of the range of a double"
        case .invalidLiteral: what = "invalid literal (expected true, false or null)"
        case .invalidUTF8: what = "invalid UTF-8"
        case .controlCharacterInString: what = "unescaped control character in string"
        case .invalidEscape: what = "invalid escape sequence"
        case .invalidUnicodeEscape: what = "invalid \\u escape (need four hex digits)"
        case .unpairedSurrogate: what = "unpaired UTF-16 surrogate escape"
        case .duplicateMemberName(let name): what = "duplicate member name \(JSONValue.string(name).jsonString)"
        case .trailingData: what = "unexpected data after the JSON document"
        case .inputTooLarge(let limit): what = "input larger than \(limit) bytes"
        case .nestingTooDeep(let limit): what = "nesting deeper than \(limit) levels"
        case .tooManyMembers(let limit): what = "object with more than \(limit) members"
        }
        return "invalid JSON at byte \(offset): \(what)"
    }
}

// MARK: - Entry points

extension JSONValue {
    /// Parses one strict RFC 8259 JSON document from UTF-8 bytes, with
    /// ``JSONParsingLimits/default`` limits.
    ///
    /// Integers written without fraction or exponent that fit in `Int64` become ``int(_:)``;
    /// every other number becomes ``double(_:)`` (integers beyond `Int64` included, never
    /// wrapped). Duplicate member names, invalid UTF-8, unpaired surrogate escapes, leading
    /// zeros, `NaN`/`Infinity`, a byte-order mark and trailing data are rejected.
    /// - Throws: ``JSONParseError`` naming the problem and its byte offset.
    public init(parsing data: Data) throws(JSONParseError) {
        try self.init(parsing: data, limits: .default)
    }

    /// Parses one strict RFC 8259 JSON document from UTF-8 bytes with the given limits.
    /// - Throws: ``JSONParseError`` naming the problem and its byte offset.
    public init(parsing data: Data, limits: JSONParsingLimits) throws(JSONParseError) {
        let result = data.withUnsafeBytes { raw in
            JSONValue.parseResult(UnsafeRawBufferPointer(raw), limits: limits)
        }
        self = try result.get()
    }

    /// Parses one strict RFC 8259 JSON document from a string (its UTF-8 form), with
    /// ``JSONParsingLimits/default`` limits.
    /// - Throws: ``JSONParseError``; offsets count UTF-8 bytes of `text`.
    public init(parsing text: String) throws(JSONParseError) {
        try self.init(parsing: text, limits: .default)
    }

    /// Parses one strict RFC 8259 JSON document from a string (its UTF-8 form) with the given
    /// limits.
    /// - Throws: ``JSONParseError``; offsets count UTF-8 bytes of `text`.
    public init(parsing text: String, limits: JSONParsingLimits) throws(JSONParseError) {
        var text = text
        let result = text.withUTF8 { buffer in
            JSONValue.parseResult(UnsafeRawBufferPointer(buffer), limits: limits)
        }
        self = try result.get()
    }

    /// Parses one strict RFC 8259 JSON document from raw UTF-8 bytes with the given limits.
    /// - Throws: ``JSONParseError``.
    public init(parsing bytes: UnsafeRawBufferPointer, limits: JSONParsingLimits = .default)
        throws(JSONParseError)
    {
        self = try JSONValue.parseResult(bytes, limits: limits).get()
    }

    static func parseResult(_ bytes: UnsafeRawBufferPointer, limits: JSONParsingLimits)
        -> Result<JSONValue, JSONParseError>
    {
        if bytes.count > limits.maxInputBytes {
            return .failure(
                JSONParseError(
                    .inputTooLarge(limit: limits.maxInputBytes),
                    offset: max(0, limits.maxInputBytes)))
        }
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            return .failure(JSONParseError(.unexpectedEndOfInput, offset: 0))
        }
        var parser = StrictJSONParser(
            base: base.assumingMemoryBound(to: UInt8.self), count: bytes.count, limits: limits)
        do {
            return .success(try parser.parseDocument())
        } catch {
            return .failure(error)
        }
    }
}

// MARK: - The parser

/// A recursive-descent parser over raw UTF-8 bytes. Every byte is examined a bounded number of
/// times, so parsing is linear in the input size; recursion depth is bounded by the limits.
struct StrictJSONParser {
    let base: UnsafePointer<UInt8>
    let count: Int
    let maxDepth: Int
    let maxMembers: Int
    var pos = 0
    var depth = 0
    /// Reused buffer for strings that contain escapes.
    var scratch: [UInt8] = []

    init(base: UnsafePointer<UInt8>, count: Int, limits: JSONParsingLimits) {
        self.base = base
        self.count = count
        self.maxDepth = min(max(limits.maxDepth, 0), JSONParsingLimits.maxSupportedDepth)
        self.maxMembers = max(limits.maxObjectMembers, 0)
    }

    @inline(__always)
    func fail(_ kind: JSONParseError.Kind, at offset: Int) -> JSONParseError {
        JSONParseError(kind, offset: offset)
    }

    @inline(__always)
    mutating func skipWhitespace() {
        while pos < count {
            let b = base[pos]
            if b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 { pos += 1 } else { return }
        }
    }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        if pos != count { throw fail(.trailingData, at: pos) }
        return value
    }

    mutating func parseValue() throws(JSONParseError) -> JSONValue {
        guard pos < count else { throw fail(.unexpectedEndOfInput, at: pos) }
        switch base[pos] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try parseNumber()
        case UInt8(ascii: "N") where hasPrefix("NaN", at: pos),
            UInt8(ascii: "I") where hasPrefix("Inf", at: pos):
            throw fail(.nonFiniteLiteral, at: pos)
        case let b:
            throw fail(.unexpectedCharacter(b), at: pos)
        }
    }

    /// Whether the input at `offset` starts with `prefix`.
    func hasPrefix(_ prefix: StaticString, at offset: Int) -> Bool {
        let n = prefix.utf8CodeUnitCount
        guard offset + n <= count else { return false }
        for i in 0..<n where base[offset + i] != prefix.utf8Start[i] { return false }
        return true
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let start = pos
        let n = literal.utf8CodeUnitCount
        let lit = literal.utf8Start
        for i in 0..<n {
            guard start + i < count else { throw fail(.unexpectedEndOfInput, at: start + i) }
            if base[start + i] != lit[i] { throw fail(.invalidLiteral, at: start) }
        }
        pos = start + n
    }

    // MARK: Containers

    mutating func enter() throws(JSONParseError) {
        depth += 1
        if depth > maxDepth { throw fail(.nestingTooDeep(limit: maxDepth), at: pos) }
    }

    mutating func parseArray() throws(JSONParseError) -> JSONValue {
        try enter()
        pos += 1  // [
        var items: [JSONValue] = []
        skipWhitespace()
        if pos < count && base[pos] == UInt8(ascii: "]") {
            pos += 1
            depth -= 1
            return .array(items)
        }
        while true {
            skipWhitespace()
            items.append(try parseValue())
            skipWhitespace()
            guard pos < count else { throw fail(.unexpectedEndOfInput, at: pos) }
            let b = base[pos]
            if b == UInt8(ascii: ",") {
                pos += 1
            } else if b == UInt8(ascii: "]") {
                pos += 1
                depth -= 1
                return .array(items)
            } else {
                throw fail(.unexpectedCharacter(b), at: pos)
            }
        }
    }

    mutating func parseObject() throws(JSONParseError) -> JSONValue {
        try enter()
        pos += 1  // {
        skipWhitespace()
        if pos < count && base[pos] == UInt8(ascii: "}") {
            pos += 1
            depth -= 1
            return .object([:])
        }
        // Room for six members without rehashing (typical OFREP items have five).
        var members = [String: JSONValue](minimumCapacity: 6)
        var memberCount = 0
        while true {
            skipWhitespace()
            guard pos < count else { throw fail(.unexpectedEndOfInput, at: pos) }
            let keyStart = pos
            guard base[pos] == UInt8(ascii: "\"") else {
                throw fail(.unexpectedCharacter(base[pos]), at: pos)
            }
            memberCount += 1
            if memberCount > maxMembers { throw fail(.tooManyMembers(limit: maxMembers), at: keyStart) }
            let name = try parseString()
            skipWhitespace()
            guard pos < count else { throw fail(.unexpectedEndOfInput, at: pos) }
            guard base[pos] == UInt8(ascii: ":") else {
                throw fail(.unexpectedCharacter(base[pos]), at: pos)
            }
            pos += 1
            skipWhitespace()
            let value = try parseValue()
            if members.updateValue(value, forKey: name) != nil {
                throw fail(.duplicateMemberName(name), at: keyStart)
            }
            skipWhitespace()
            guard pos < count else { throw fail(.unexpectedEndOfInput, at: pos) }
            let b = base[pos]
            if b == UInt8(ascii: ",") {
                pos += 1
            } else if b == UInt8(ascii: "}") {
                pos += 1
                depth -= 1
                return .object(members)
            } else {
                throw fail(.unexpectedCharacter(b), at: pos)
            }
        }
    }

    // MARK: Strings

    /// Parses a string whose opening quote is at `pos`; leaves `pos` after the closing quote.
    mutating func parseString() throws(JSONParseError) -> String {
        pos += 1  // opening quote
        let start = pos
        // Fast path: plain ASCII without escapes. Skip eight plain bytes at a time: a word is
        // plain when it has no '"', no '\\', no byte below 0x20 and no byte at or above 0x80.
        var i = pos
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        while i &+ 8 <= count {
            let w = UInt64(littleEndian: UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self))
            let q = w ^ (ones &* 0x22)
            let bs = w ^ (ones &* 0x5C)
            let special = ((q &- ones) & ~q) | ((bs &- ones) & ~bs) | ((w &- ones &* 0x20) & ~w) | w
            if special & highs != 0 { break }
            i &+= 8
        }
        while i < count {
            let b = base[i]
            if b == UInt8(ascii: "\"") {
                pos = i + 1
                return String(
                    decoding: UnsafeBufferPointer(start: base + start, count: i - start),
                    as: UTF8.self)
            }
            if b == UInt8(ascii: "\\") || b < 0x20 || b >= 0x80 { break }
            i += 1
        }
        // General path: validate UTF-8; switch to the scratch buffer at the first escape.
        var escaped = false
        scratch.removeAll(keepingCapacity: true)
        while i < count {
            let b = base[i]
            if b == UInt8(ascii: "\"") {
                pos = i + 1
                if !escaped {
                    return String(
                        decoding: UnsafeBufferPointer(start: base + start, count: i - start),
                        as: UTF8.self)
                }
                return String(decoding: scratch, as: UTF8.self)
            }
            if b == UInt8(ascii: "\\") {
                if !escaped {
                    escaped = true
                    scratch.append(contentsOf: UnsafeBufferPointer(start: base + start, count: i - start))
                }
                i = try parseEscape(at: i)
                continue
            }
            if b < 0x20 { throw fail(.controlCharacterInString, at: i) }
            if b < 0x80 {
                if escaped { scratch.append(b) }
                i += 1
                continue
            }
            let n = try validateUTF8Sequence(at: i)
            if escaped { scratch.append(contentsOf: UnsafeBufferPointer(start: base + i, count: n)) }
            i += n
        }
        throw fail(.unexpectedEndOfInput, at: count)
    }

    /// Validates one multi-byte UTF-8 sequence starting at `i`; returns its length.
    @inline(__always)
    func validateUTF8Sequence(at i: Int) throws(JSONParseError) -> Int {
        let b0 = base[i]
        @inline(__always) func cont(_ j: Int) -> UInt8? {
            guard j < count else { return nil }
            let b = base[j]
            return b & 0xC0 == 0x80 ? b : nil
        }
        switch b0 {
        case 0xC2...0xDF:
            guard cont(i + 1) != nil else { throw fail(.invalidUTF8, at: i) }
            return 2
        case 0xE0...0xEF:
            guard let b1 = cont(i + 1), cont(i + 2) != nil else { throw fail(.invalidUTF8, at: i) }
            if b0 == 0xE0 && b1 < 0xA0 { throw fail(.invalidUTF8, at: i) }  // overlong
            if b0 == 0xED && b1 >= 0xA0 { throw fail(.invalidUTF8, at: i) }  // surrogate
            return 3
        case 0xF0...0xF4:
            guard let b1 = cont(i + 1), cont(i + 2) != nil, cont(i + 3) != nil else {
                throw fail(.invalidUTF8, at: i)
            }
            if b0 == 0xF0 && b1 < 0x90 { throw fail(.invalidUTF8, at: i) }  // overlong
            if b0 == 0xF4 && b1 >= 0x90 { throw fail(.invalidUTF8, at: i) }  // > U+10FFFF
            return 4
        default:
            throw fail(.invalidUTF8, at: i)
        }
    }

    @inline(__always)
    func hexValue(_ b: UInt8) -> UInt32? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(b &- UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(b &- UInt8(ascii: "a") &+ 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(b &- UInt8(ascii: "A") &+ 10)
        default: nil
        }
    }

    /// Reads four hex digits after `\u` at `i` (the backslash).
    func readHex4(at i: Int) throws(JSONParseError) -> UInt32 {
        guard i + 6 <= count else {
            // Report a truncated escape as the end of input only when the bytes present are hex.
            var j = i + 2
            while j < count {
                if hexValue(base[j]) == nil { throw fail(.invalidUnicodeEscape, at: i) }
                j += 1
            }
            throw fail(.unexpectedEndOfInput, at: count)
        }
        var v: UInt32 = 0
        for j in (i + 2)..<(i + 6) {
            guard let h = hexValue(base[j]) else { throw fail(.invalidUnicodeEscape, at: i) }
            v = v << 4 | h
        }
        return v
    }

    /// Decodes the escape whose backslash is at `i` into `scratch`; returns the next index.
    mutating func parseEscape(at i: Int) throws(JSONParseError) -> Int {
        guard i + 1 < count else { throw fail(.unexpectedEndOfInput, at: count) }
        let c = base[i + 1]
        switch c {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"):
            scratch.append(c)
        case UInt8(ascii: "b"): scratch.append(0x08)
        case UInt8(ascii: "f"): scratch.append(0x0C)
        case UInt8(ascii: "n"): scratch.append(0x0A)
        case UInt8(ascii: "r"): scratch.append(0x0D)
        case UInt8(ascii: "t"): scratch.append(0x09)
        case UInt8(ascii: "u"):
            let unit = try readHex4(at: i)
            var scalar = unit
            var next = i + 6
            if unit >= 0xD800 && unit <= 0xDBFF {
                // Needs a following \uDC00-\uDFFF.
                guard next + 1 < count, base[next] == UInt8(ascii: "\\"), base[next + 1] == UInt8(ascii: "u")
                else {
                    if next >= count || (next + 1 >= count && base[next] == UInt8(ascii: "\\")) {
                        throw fail(.unexpectedEndOfInput, at: count)
                    }
                    throw fail(.unpairedSurrogate, at: i)
                }
                let low = try readHex4(at: next)
                guard low >= 0xDC00 && low <= 0xDFFF else { throw fail(.unpairedSurrogate, at: i) }
                scalar = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                next += 6
            } else if unit >= 0xDC00 && unit <= 0xDFFF {
                throw fail(.unpairedSurrogate, at: i)
            }
            appendUTF8(scalar)
            return next
        default:
            throw fail(.invalidEscape, at: i)
        }
        return i + 2
    }

    @inline(__always)
    mutating func appendUTF8(_ v: UInt32) {
        if v < 0x80 {
            scratch.append(UInt8(v))
        } else if v < 0x800 {
            scratch.append(UInt8(0xC0 | (v >> 6)))
            scratch.append(UInt8(0x80 | (v & 0x3F)))
        } else if v < 0x10000 {
            scratch.append(UInt8(0xE0 | (v >> 12)))
            scratch.append(UInt8(0x80 | ((v >> 6) & 0x3F)))
            scratch.append(UInt8(0x80 | (v & 0x3F)))
        } else {
            scratch.append(UInt8(0xF0 | (v >> 18)))
            scratch.append(UInt8(0x80 | ((v >> 12) & 0x3F)))
            scratch.append(UInt8(0x80 | ((v >> 6) & 0x3F)))
            scratch.append(UInt8(0x80 | (v & 0x3F)))
        }
    }

    // MARK: Numbers

    @inline(__always)
    func isDigit(_ j: Int) -> Bool {
        j < count && base[j] &- UInt8(ascii: "0") < 10
    }

    mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = pos
        var i = pos
        let negative = base[i] == UInt8(ascii: "-")
        if negative {
            i += 1
            guard i < count else { throw fail(.unexpectedEndOfInput, at: i) }
            if hasPrefix("Inf", at: i) { throw fail(.nonFiniteLiteral, at: start) }
            guard isDigit(i) else { throw fail(.invalidNumber, at: start) }
        }
        // Integer part.
        let intStart = i
        if base[i] == UInt8(ascii: "0") {
            i += 1
            if isDigit(i) { throw fail(.leadingZero, at: intStart) }
        } else {
            while isDigit(i) { i += 1 }
        }
        let intEnd = i
        var isInteger = true
        if i < count && base[i] == UInt8(ascii: ".") {
            isInteger = false
            i += 1
            guard isDigit(i) else {
                if i >= count { throw fail(.unexpectedEndOfInput, at: i) }
                throw fail(.invalidNumber, at: start)
            }
            while isDigit(i) { i += 1 }
        }
        if i < count && (base[i] == UInt8(ascii: "e") || base[i] == UInt8(ascii: "E")) {
            isInteger = false
            i += 1
            if i < count && (base[i] == UInt8(ascii: "+") || base[i] == UInt8(ascii: "-")) { i += 1 }
            guard isDigit(i) else {
                if i >= count { throw fail(.unexpectedEndOfInput, at: i) }
                throw fail(.invalidNumber, at: start)
            }
            while isDigit(i) { i += 1 }
        }
        pos = i

        if isInteger && intEnd - intStart <= 19 {
            // Accumulate as a negative number so that Int64.min is representable.
            var acc: Int64 = 0
            var overflow = false
            for j in intStart..<intEnd {
                let d = Int64(base[j] &- UInt8(ascii: "0"))
                let (m, o1) = acc.multipliedReportingOverflow(by: 10)
                let (s, o2) = m.subtractingReportingOverflow(d)
                if o1 || o2 { overflow = true; break }
                acc = s
            }
            if !overflow {
                if negative { return .int(acc) }
                if acc != Int64.min { return .int(-acc) }
            }
        }
        let d = try parseDouble(start: start, end: i, negative: negative, intStart: intStart)
        return .double(d)
    }

    private static let exactPowersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]

    /// Converts a validated number literal to a correctly rounded double.
    func parseDouble(start: Int, end: Int, negative: Bool, intStart: Int) throws(JSONParseError) -> Double {
        // Fast path (exact): at most 15 significant digits... collect mantissa and exponent.
        var mantissa: UInt64 = 0
        var digits = 0
        var exp10 = 0
        var i = intStart
        var simple = true
        while i < end {
            let b = base[i]
            if b == UInt8(ascii: ".") { i += 1; continue }
            if b == UInt8(ascii: "e") || b == UInt8(ascii: "E") { break }
            if b != UInt8(ascii: "0") || digits > 0 {
                if digits >= 19 { simple = false; break }
                mantissa = mantissa &* 10 &+ UInt64(b &- UInt8(ascii: "0"))
                digits += 1
            }
            i += 1
        }
        if simple {
            // Count fraction digits for the decimal exponent.
            var j = intStart
            while j < end && base[j] != UInt8(ascii: ".") && base[j] | 0x20 != UInt8(ascii: "e") { j += 1 }
            if j < end && base[j] == UInt8(ascii: ".") {
                var k = j + 1
                while k < end && base[k] | 0x20 != UInt8(ascii: "e") { k += 1 }
                exp10 -= k - j - 1
                j = k
            }
            if j < end {  // exponent part
                var k = j + 1
                var expNegative = false
                if base[k] == UInt8(ascii: "-") {
                    expNegative = true; k += 1
                } else if base[k] == UInt8(ascii: "+") {
                    k += 1
                }
                var e = 0
                while k < end {
                    if e < 100_000 { e = e * 10 + Int(base[k] &- UInt8(ascii: "0")) }
                    k += 1
                }
                exp10 += expNegative ? -e : e
            }
            if mantissa == 0 { return negative ? -0.0 : 0.0 }
            if mantissa <= (1 << 53) && exp10 >= -22 && exp10 <= 22 {
                var v = Double(mantissa)
                if exp10 < 0 { v /= Self.exactPowersOfTen[-exp10] } else { v *= Self.exactPowersOfTen[exp10] }
                return negative ? -v : v
            }
        }
        // Slow path: the standard library's correctly rounded conversion.
        let text = String(decoding: UnsafeBufferPointer(start: base + start, count: end - start), as: UTF8.self)
        guard let v = Double(text), v.isFinite else { throw fail(.numberOutOfRange, at: start) }
        return v
    }
}
