import Foundation

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
