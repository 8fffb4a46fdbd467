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
