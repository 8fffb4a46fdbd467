import Foundation

/// Writes an exposure upload body by hand into a byte buffer (docs/exposures.md):
///
/// ```json
/// {"meta":{"sdk":"…","version":"…","appId":"…","installId":"…"},
///  "events":[{"kind":"exposure","key":"…","variant":"…"|null,"reason":"…",
///             "contextFingerprint":"…","creationDate":1800000000,"count":1}]}
/// ```
///
/// No whitespace. Strings are escaped per RFC 8259: `"` and `\` with a backslash, U+0000–U+001F
/// as `\b \f \n \r \t` or `\u00XX`, everything else (including non-ASCII) as its UTF-8 bytes.
package enum ExposureEncoder {
    /// The body for `events`.
    package static func encode(meta: ExposureMeta, events: [ExposureEvent]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(160 + events.count * 200)
        append(&out, #"{"meta":{"sdk":"#)
        appendString(&out, meta.sdk)
        append(&out, #","version":"#)
        appendString(&out, meta.version)
        append(&out, #","appId":"#)
        appendString(&out, meta.appId)
        append(&out, #","installId":"#)
        appendString(&out, meta.installId)
        append(&out, #"},"events":["#)
        var first = true
        for e in events {
            if !first { out.append(0x2C) }
            first = false
            append(&out, #"{"kind":"exposure","key":"#)
            appendString(&out, e.key)
            append(&out, #","variant":"#)
            if let v = e.variant { appendString(&out, v) } else { append(&out, "null") }
            append(&out, #","reason":"#)
            appendString(&out, e.reason)
            append(&out, #","contextFingerprint":"#)
            appendString(&out, e.contextFingerprint)
            append(&out, #","creationDate":"#)
            appendInteger(&out, e.creationDate)
            append(&out, #","count":"#)
            appendInteger(&out, Int64(e.count))
            out.append(0x7D)
        }
        append(&out, "]}")
        return out
    }

    @inline(__always)
    private static func append(_ out: inout [UInt8], _ literal: StaticString) {
        literal.withUTF8Buffer { out.append(contentsOf: $0) }
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    /// Appends `s` as a JSON string literal, quotes included.
    package static func appendString(_ out: inout [UInt8], _ s: String) {
        out.append(0x22)
        for b in s.utf8 {
            switch b {
            case 0x22: out.append(0x5C); out.append(0x22)
            case 0x5C: out.append(0x5C); out.append(0x5C)
            case 0x08: out.append(0x5C); out.append(0x62)
            case 0x0C: out.append(0x5C); out.append(0x66)
            case 0x0A: out.append(0x5C); out.append(0x6E)
            case 0x0D: out.append(0x5C); out.append(0x72)
            case 0x09: out.append(0x5C); out.append(0x74)
            case 0x00..<0x20:
                out.append(0x5C); out.append(0x75); out.append(0x30); out.append(0x30)
                out.append(hex[Int(b >> 4)]); out.append(hex[Int(b & 0xF)])
            default:
                out.append(b)
            }
        }
        out.append(0x22)
    }

    /// Appends the decimal digits of `value`.
    package static func appendInteger(_ out: inout [UInt8], _ value: Int64) {
        if value == 0 { out.append(0x30); return }
        var magnitude = value.magnitude
        if value < 0 { out.append(0x2D) }
        var digits:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
            ) =
                (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var n = 0
        withUnsafeMutableBytes(of: &digits) { buf in
            while magnitude > 0 {
                buf[n] = UInt8(magnitude % 10) + 0x30
                magnitude /= 10
                n += 1
            }
            while n > 0 {
                n -= 1
                out.append(buf[n])
            }
        }
    }
}
