import Foundation

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
