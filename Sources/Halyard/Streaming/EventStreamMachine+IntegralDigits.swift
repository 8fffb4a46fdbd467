// The big-integer formatter of the routing (EventStreamMachine+Routing.swift): a number parameter as its digits.

extension EventStreamMachine {
    /// An integral, finite `value` written out in decimal digits (`1e20` → `100000000000000000000`).
    static func integralDigits(_ value: Double) -> String {
        if let exact = Int64(exactly: value) { return String(exact) }
        // |value| >= 2^63: significand × 2^exponent, doubled digit by digit (little-endian).
        var digits = Array(String(value.significandBitPattern | (1 << 52)).utf8.reversed().map { Int($0 - 48) })
        for _ in 0..<(Int(value.exponent) - 52) {
            var carry = 0
            for i in digits.indices {
                let doubled = digits[i] * 2 + carry
                digits[i] = doubled % 10
                carry = doubled / 10
            }
            if carry > 0 { digits.append(carry) }
        }
        let text = String(decoding: digits.reversed().map { UInt8($0 + 48) }, as: UTF8.self)
        return value < 0 ? "-" + text : text
    }
}
