public import Foundation

extension JSONValue {
    /// Canonical JSON (RFC 8785, JCS) for this value.
    ///
    /// - Object members are sorted by the UTF-16 code units of their names; no whitespace.
    /// - Strings use the minimal escaping of RFC 8785: `\b \t \n \f \r \" \\`, `\u00xx`
    ///   (lowercase hex) for the other control characters, everything else literal.
    /// - Numbers use the ECMAScript `Number.prototype.toString` form (shortest round-trip
    ///   digits; `1e+21`, `1e-7`, `-0` → `0`).
    /// - An ``int(_:)`` whose magnitude is at most 2^53 is written exactly. A larger one is
    ///   written as ECMAScript would write the double nearest to it (JCS numbers are IEEE
    ///   doubles), so `.int(9223372036854775807)` becomes `9223372036854776000`. Use
    ///   ``jsonString`` when the exact 64-bit value matters.
    /// - A non-finite double (which the parser never produces) is written as `null`, as
    ///   ECMAScript's `JSON.stringify` does.
    public var canonicalJSON: String {
        var out = JSONWriter(canonical: true)
        out.write(self)
        return out.string
    }

    /// Canonical JSON (see ``canonicalJSON``) as UTF-8 bytes.
    public var canonicalJSONData: Data {
        var out = JSONWriter(canonical: true)
        out.write(self)
        return Data(out.bytes)
    }

    /// Compact JSON text for request bodies and files: no whitespace, members sorted like
    /// ``canonicalJSON`` (so the output is deterministic), the same string escaping, integers
    /// written exactly (all 64 bits), doubles in the shortest round-trip ECMAScript form with
    /// `.0` added when that form has neither fraction nor exponent (`1.0`, `-0.0`), so that
    /// the integer/float distinction survives. Parsing the result with
    /// ``init(parsing:)-(String)`` gives back an equal value (non-finite doubles, which the
    /// parser never produces, are written as `null`).
    public var jsonString: String {
        var out = JSONWriter(canonical: false)
        out.write(self)
        return out.string
    }

    /// ``jsonString`` as UTF-8 bytes.
    public var jsonData: Data {
        var out = JSONWriter(canonical: false)
        out.write(self)
        return Data(out.bytes)
    }
}

/// Compares two strings by their UTF-16 code units (the member order of RFC 8785).
///
/// Works on UTF-8 bytes: UTF-8 byte order equals code-point order, which differs from UTF-16
/// order only between U+E000–U+FFFF (lead bytes EE/EF) and supplementary scalars (lead bytes
/// F0–F4, surrogate pairs in UTF-16, which sort before U+E000).
func utf16Precedes(_ a: String, _ b: String) -> Bool {
    if let r = a.utf8.withContiguousStorageIfAvailable({ ua in
        b.utf8.withContiguousStorageIfAvailable { ub in utf16Precedes(ua, ub) }
    }), let r {
        return r
    }
    var a = a
    var b = b
    return a.withUTF8 { ua in
        b.withUTF8 { ub in utf16Precedes(ua, ub) }
    }
}

func utf16Precedes(_ ua: UnsafeBufferPointer<UInt8>, _ ub: UnsafeBufferPointer<UInt8>) -> Bool {
    let n = min(ua.count, ub.count)
    var i = 0
    // Skip the common prefix eight bytes at a time (names often share long prefixes).
    if n >= 8, let pa = ua.baseAddress, let pb = ub.baseAddress {
        let ra = UnsafeRawPointer(pa), rb = UnsafeRawPointer(pb)
        while i &+ 8 <= n {
            let x = ra.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            let y = rb.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            if x != y {
                i &+= (UInt64(littleEndian: x) ^ UInt64(littleEndian: y)).trailingZeroBitCount / 8
                break
            }
            i &+= 8
        }
    }
    while i < n {
        let x = ua[i]
        let y = ub[i]
        if x != y {
            let xHighBMP = x == 0xEE || x == 0xEF
            let yHighBMP = y == 0xEE || y == 0xEF
            if xHighBMP && y >= 0xF0 { return false }
            if yHighBMP && x >= 0xF0 { return true }
            return x < y
        }
        i += 1
    }
    return ua.count < ub.count
}

/// Appends JSON text to a byte buffer.
struct JSONWriter {
    var bytes: [UInt8] = []
    let canonical: Bool

    init(canonical: Bool, capacity: Int = 256) {
        self.canonical = canonical
        bytes.reserveCapacity(capacity)
    }

    var string: String { String(decoding: bytes, as: UTF8.self) }

    mutating func write(_ value: JSONValue) {
        switch value {
        case .null: append("null")
        case .bool(let b): append(b ? "true" : "false")
        case .int(let i):
            if canonical && i.magnitude > (1 << 53) {
                writeDouble(Double(i))
            } else {
                writeInt(i)
            }
        case .double(let d): writeDouble(d)
        case .string(let s): writeString(s)
        case .array(let items):
            bytes.append(UInt8(ascii: "["))
            var first = true
            for item in items {
                if !first { bytes.append(UInt8(ascii: ",")) }
                first = false
                write(item)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            var first = true
            for name in JSONWriter.sortedNames(members.keys) {
                if !first { bytes.append(UInt8(ascii: ",")) }
                first = false
                writeString(name)
                bytes.append(UInt8(ascii: ":"))
                write(members[name]!)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    static func sortedNames<C: Collection>(_ names: C) -> [String] where C.Element == String {
        var names = Array(names)
        if names.count > 1 { names.sort(by: utf16Precedes) }
        return names
    }

    @inline(__always)
    mutating func append(_ s: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    mutating func writeInt(_ i: Int64) {
        if i == 0 { bytes.append(UInt8(ascii: "0")); return }
        var m = i.magnitude
        if i < 0 { bytes.append(UInt8(ascii: "-")) }
        // At most 20 digits.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { buf in
            var n = 20
            while m > 0 {
                n -= 1
                buf[n] = UInt8(ascii: "0") &+ UInt8(m % 10)
                m /= 10
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buf[n..<20]))
        }
    }

    mutating func writeString(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
        let done: Void? = s.utf8.withContiguousStorageIfAvailable { appendEscaped($0) }
        if done == nil {
            var s = s
            s.withUTF8 { appendEscaped($0) }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends string content with RFC 8785 escaping; runs of plain bytes are copied at once.
    mutating func appendEscaped(_ u: UnsafeBufferPointer<UInt8>) {
        var runStart = 0
        var i = 0
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        while i < u.count {
            // Skip eight bytes at a time while they hold no '"', no '\\' and no control byte.
            if let base = u.baseAddress {
                while i &+ 8 <= u.count {
                    let w = UInt64(littleEndian: UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self))
                    let q = w ^ (ones &* 0x22)
                    let bs = w ^ (ones &* 0x5C)
                    let special = ((q &- ones) & ~q) | ((bs &- ones) & ~bs) | ((w &- ones &* 0x20) & ~w)
                    if special & highs != 0 { break }
                    i &+= 8
                }
                if i >= u.count { break }
            }
            let b = u[i]
            if b >= 0x20 && b != UInt8(ascii: "\"") && b != UInt8(ascii: "\\") {
                i &+= 1
                continue
            }
            if runStart < i { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: u[runStart..<i])) }
            bytes.append(UInt8(ascii: "\\"))
            switch b {
            case UInt8(ascii: "\""): bytes.append(UInt8(ascii: "\""))
            case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\"))
            case 0x08: bytes.append(UInt8(ascii: "b"))
            case 0x09: bytes.append(UInt8(ascii: "t"))
            case 0x0A: bytes.append(UInt8(ascii: "n"))
            case 0x0C: bytes.append(UInt8(ascii: "f"))
            case 0x0D: bytes.append(UInt8(ascii: "r"))
            default:
                @inline(__always) func hex(_ v: UInt8) -> UInt8 { v < 10 ? v &+ 48 : v &+ 87 }
                bytes.append(UInt8(ascii: "u"))
                bytes.append(UInt8(ascii: "0"))
                bytes.append(UInt8(ascii: "0"))
                bytes.append(hex(b >> 4))
                bytes.append(hex(b & 0xF))
            }
            i &+= 1
            runStart = i
        }
        if runStart < u.count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: u[runStart..<u.count])) }
    }

    mutating func writeDouble(_ d: Double) {
        guard d.isFinite else { append("null"); return }
        if d == 0 {
            // Canonical: both zeros are "0". Compact: keep the sign and the double-ness.
            if canonical { bytes.append(UInt8(ascii: "0")) } else { append(d.sign == .minus ? "-0.0" : "0.0") }
            return
        }
        let start = bytes.count
        // Integral values below 2^53 in magnitude: exact digits, no exponent (fast path).
        if d.magnitude < 9_007_199_254_740_992, d == d.rounded(.towardZero) {
            writeInt(Int64(d))
        } else {
            ECMAScriptNumber.append(d, to: &bytes)
        }
        if !canonical {
            // Compact form: make sure the literal reads back as a double, not an integer.
            var integral = true
            for b in bytes[start...] where b == UInt8(ascii: ".") || b == UInt8(ascii: "e") {
                integral = false
                break
            }
            if integral { append(".0") }
        }
    }
}

/// ECMAScript `Number.prototype.toString` formatting of finite, non-zero doubles, from the
/// shortest round-trip digits that Swift's `Double.description` produces.
enum ECMAScriptNumber {
    /// The ECMAScript form of `d` as a string (`0` for both zeros, `null` when non-finite).
    static func string(_ d: Double) -> String {
        var w = JSONWriter(canonical: true, capacity: 32)
        w.writeDouble(d)
        return w.string
    }

    static func append(_ d: Double, to out: inout [UInt8]) {
        // Shortest round-trip digits d1...dk and exponent n such that |d| = 0.d1...dk × 10^n,
        // read from Swift's description ("1.5", "0.001", "1e-07", "1.0000000000000001e+23").
        var text = d.description
        text.withUTF8 { u in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { digits in
                var k = 0
                var negative = false
                var pointPosition = -1
                var leadingZeros = 0
                var exponent = 0
                var i = 0
                if i < u.count && u[i] == UInt8(ascii: "-") { negative = true; i += 1 }
                while i < u.count {
                    let b = u[i]
                    if b == UInt8(ascii: ".") {
                        pointPosition = k + leadingZeros
                    } else if b == UInt8(ascii: "e") || b == UInt8(ascii: "E") {
                        i += 1
                        var expNegative = false
                        if i < u.count && (u[i] == UInt8(ascii: "-") || u[i] == UInt8(ascii: "+")) {
                            expNegative = u[i] == UInt8(ascii: "-")
                            i += 1
                        }
                        var e = 0
                        while i < u.count { e = e * 10 + Int(u[i] &- UInt8(ascii: "0")); i += 1 }
                        exponent = expNegative ? -e : e
                        break
                    } else if b == UInt8(ascii: "0") && k == 0 {
                        leadingZeros += 1
                    } else if k < 32 {
                        digits[k] = b
                        k += 1
                    }
                    i += 1
                }
                let integerDigits = pointPosition >= 0 ? pointPosition : k + leadingZeros
                var n = integerDigits - leadingZeros + exponent
                while k > 0 && digits[k - 1] == UInt8(ascii: "0") { k -= 1 }
                if k == 0 { out.append(UInt8(ascii: "0")); return }
                let ds = UnsafeBufferPointer(start: digits.baseAddress!, count: k)
                if negative { out.append(UInt8(ascii: "-")) }
                if k <= n && n <= 21 {
                    out.append(contentsOf: ds)
                    for _ in 0..<(n - k) { out.append(UInt8(ascii: "0")) }
                } else if 0 < n && n <= 21 {
                    out.append(contentsOf: ds[0..<n])
                    out.append(UInt8(ascii: "."))
                    out.append(contentsOf: ds[n...])
                } else if -6 < n && n <= 0 {
                    out.append(UInt8(ascii: "0"))
                    out.append(UInt8(ascii: "."))
                    for _ in 0..<(-n) { out.append(UInt8(ascii: "0")) }
                    out.append(contentsOf: ds)
                } else {
                    out.append(ds[0])
                    if k > 1 {
                        out.append(UInt8(ascii: "."))
                        out.append(contentsOf: ds[1...])
                    }
                    out.append(UInt8(ascii: "e"))
                    n -= 1
                    out.append(n < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+"))
                    let e = n.magnitude
                    if e >= 100 { out.append(UInt8(ascii: "0") &+ UInt8(e / 100)) }
                    if e >= 10 { out.append(UInt8(ascii: "0") &+ UInt8(e / 10 % 10)) }
                    out.append(UInt8(ascii: "0") &+ UInt8(e % 10))
                }
            }
        }
    }
}
