import Foundation

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
