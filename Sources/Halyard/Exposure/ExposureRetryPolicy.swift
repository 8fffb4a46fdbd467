import Foundation

/// How one upload attempt ended, as the exposure pipeline sees it.
package enum ExposureUploadOutcome: Sendable, Hashable {
    /// A 2xx response: the batch was delivered.
    case delivered
    /// A retryable failure (5xx, 408, 429 or a transport error); `retryAfter` is the delay the
    /// server asked for, when it sent a usable `Retry-After`.
    case retry(retryAfter: Duration?)
    /// A non-retryable status: the batch is dropped.
    case rejected(status: Int)

    /// Classifies an HTTP response.
    package static func classify(status: Int, retryAfterHeader: String?, wallNow: Date) -> ExposureUploadOutcome {
        switch status {
        case 200..<300:
            return .delivered
        case 408, 429, 500..<600:
            let delay = retryAfterHeader.flatMap { ExposureRetryAfter.parse($0, now: wallNow) }
            return .retry(retryAfter: delay)
        default:
            return .rejected(status: status)
        }
    }
}

/// Exponential backoff with full jitter for exposure uploads.
package struct ExposureBackoff: Sendable, Hashable {
    /// The first delay's upper bound.
    package var base: Duration
    /// The largest delay's upper bound.
    package var maximum: Duration
    /// The longest `Retry-After` honoured; longer requests wait this long.
    package var retryAfterCap: Duration = .seconds(3_600)

    /// Creates a policy.
    package init(base: Duration, maximum: Duration) {
        self.base = base
        self.maximum = maximum
    }

    /// The delay before attempt number `failures + 1`, after `failures` (≥ 1) consecutive
    /// failures: uniformly in `[0, min(maximum, base · 2^(failures-1))]` via `unit` in `[0, 1)`,
    /// or the server's `Retry-After` (capped) when it gave one.
    package func delay(failures: Int, retryAfter: Duration?, unit: Double) -> Duration {
        if let retryAfter {
            return min(max(retryAfter, .zero), retryAfterCap)
        }
        let exponent = min(max(failures - 1, 0), 40)
        var ceiling = base
        for _ in 0..<exponent {
            ceiling = ceiling * 2
            if ceiling >= maximum { ceiling = maximum; break }
        }
        ceiling = min(ceiling, maximum)
        let u = unit.isNaN ? 0 : min(max(unit, 0), 1)
        return ceiling * u
    }
}

/// Parses an HTTP `Retry-After` value for exposure uploads: delay-seconds (`"120"`), an HTTP-date
/// (`"Wed, 21 Oct 2015 07:28:00 GMT"`, plus the obsolete RFC 850 and asctime forms) or an
/// ISO-8601 date-time (`"2015-10-21T07:28:00Z"`, fractional seconds and `±hh:mm` offsets allowed).
///
/// Kept internal to the exposure pipeline (the sync engine has its own parser).
package enum ExposureRetryAfter {
    /// The delay from `now` the value asks for (zero for dates in the past), or `nil` when the
    /// value is not understood.
    package static func parse(_ value: String, now: Date) -> Duration? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if text.isEmpty { return nil }
        let bytes = Array(text.utf8)
        if bytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            if bytes.count > 10 { return .seconds(Int64(UInt32.max)) }
            return .seconds(Int64(text) ?? 0)
        }
        let date = httpDate(bytes) ?? iso8601(bytes)
        guard let date else { return nil }
        let seconds = date - now.timeIntervalSince1970
        if !(seconds > 0) { return .zero }
        if seconds > 1e9 { return .seconds(1_000_000_000) }
        return .milliseconds(Int64((seconds * 1000).rounded(.up)))
    }

    // MARK: - Dates

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// Unix seconds of a proleptic Gregorian date-time (UTC).
    static func unixSeconds(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) -> Double? {
        guard (1...12).contains(month), (1...31).contains(day), (0...23).contains(hour),
            (0...59).contains(minute), (0...60).contains(second), (1...9999).contains(year)
        else { return nil }
        // Days from civil (Howard Hinnant's algorithm).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        return Double(days * 86_400 + hour * 3_600 + minute * 60 + second)
    }

    private struct Scanner {
        let b: [UInt8]
        var i = 0
        var atEnd: Bool { i >= b.count }
        mutating func skipSpaces() { while i < b.count, b[i] == 0x20 { i += 1 } }
        mutating func number(minDigits: Int, maxDigits: Int) -> Int? {
            var n = 0, d = 0
            while i < b.count, d < maxDigits, b[i] >= 0x30, b[i] <= 0x39 {
                n = n * 10 + Int(b[i] - 0x30); i += 1; d += 1
            }
            return d >= minDigits ? n : nil
        }
        mutating func expect(_ c: UInt8) -> Bool {
            if i < b.count, b[i] == c { i += 1; return true }
            return false
        }
        mutating func word() -> String {
            let start = i
            while i < b.count, (b[i] | 0x20) >= 0x61, (b[i] | 0x20) <= 0x7A { i += 1 }
            return String(decoding: b[start..<i], as: UTF8.self).lowercased()
        }
    }

    private static func month(_ name: String) -> Int? {
        months.firstIndex(of: name).map { $0 + 1 }
    }

    private static func time(_ s: inout Scanner) -> (Int, Int, Int)? {
        guard let h = s.number(minDigits: 2, maxDigits: 2), s.expect(0x3A),
            let m = s.number(minDigits: 2, maxDigits: 2), s.expect(0x3A),
            let sec = s.number(minDigits: 2, maxDigits: 2)
        else { return nil }
        return (h, m, sec)
    }

    /// IMF-fixdate, RFC 850 and asctime.
    static func httpDate(_ bytes: [UInt8]) -> Double? {
        var s = Scanner(b: bytes)
        let weekday = s.word()
        guard weekday.count >= 3 else { return nil }
        if s.expect(0x2C) {
            s.skipSpaces()
            guard let day = s.number(minDigits: 1, maxDigits: 2) else { return nil }
            if s.expect(0x2D) {
                // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
                guard let mon = month(s.word()), s.expect(0x2D),
                    let yy = s.number(minDigits: 2, maxDigits: 4)
                else { return nil }
                s.skipSpaces()
                guard let (h, m, sec) = time(&s) else { return nil }
                s.skipSpaces()
                guard s.word() == "gmt" else { return nil }
                s.skipSpaces()
                guard s.atEnd else { return nil }
                let year = yy < 100 ? (yy < 70 ? 2000 + yy : 1900 + yy) : yy
                return unixSeconds(year: year, month: mon, day: day, hour: h, minute: m, second: sec)
            }
            // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
            s.skipSpaces()
            guard let mon = month(s.word()) else { return nil }
            s.skipSpaces()
            guard let year = s.number(minDigits: 4, maxDigits: 4) else { return nil }
            s.skipSpaces()
            guard let (h, m, sec) = time(&s) else { return nil }
            s.skipSpaces()
            let zone = s.word()
            guard zone == "gmt" || zone == "utc" else { return nil }
            s.skipSpaces()
            guard s.atEnd else { return nil }
            return unixSeconds(year: year, month: mon, day: day, hour: h, minute: m, second: sec)
        }
        // asctime: Sun Nov  6 08:49:37 1994
        s.skipSpaces()
        guard let mon = month(s.word()) else { return nil }
        s.skipSpaces()
        guard let day = s.number(minDigits: 1, maxDigits: 2) else { return nil }
        s.skipSpaces()
        guard let (h, m, sec) = time(&s) else { return nil }
        s.skipSpaces()
        guard let year = s.number(minDigits: 4, maxDigits: 4) else { return nil }
        s.skipSpaces()
        guard s.atEnd else { return nil }
        return unixSeconds(year: year, month: mon, day: day, hour: h, minute: m, second: sec)
    }

    /// `YYYY-MM-DDThh:mm:ss[.fff](Z|±hh:mm|±hhmm)`; a missing zone means UTC.
    static func iso8601(_ bytes: [UInt8]) -> Double? {
        var s = Scanner(b: bytes)
        guard let year = s.number(minDigits: 4, maxDigits: 4), s.expect(0x2D),
            let mon = s.number(minDigits: 2, maxDigits: 2), s.expect(0x2D),
            let day = s.number(minDigits: 2, maxDigits: 2)
        else { return nil }
        guard s.expect(0x54) || s.expect(0x74) || s.expect(0x20) else { return nil }
        guard let (h, m, sec) = time(&s) else { return nil }
        var fraction = 0.0
        if s.expect(0x2E) || s.expect(0x2C) {
            var scale = 0.1
            var digits = 0
            while !s.atEnd, s.b[s.i] >= 0x30, s.b[s.i] <= 0x39 {
                fraction += Double(s.b[s.i] - 0x30) * scale
                scale /= 10; s.i += 1; digits += 1
            }
            if digits == 0 { return nil }
        }
        var offset = 0
        if s.expect(0x5A) || s.expect(0x7A) {
            offset = 0
        } else if !s.atEnd {
            let sign: Int
            if s.expect(0x2B) { sign = 1 } else if s.expect(0x2D) { sign = -1 } else { return nil }
            guard let oh = s.number(minDigits: 2, maxDigits: 2), oh <= 23 else { return nil }
            _ = s.expect(0x3A)
            guard let om = s.number(minDigits: 2, maxDigits: 2), om <= 59 else { return nil }
            offset = sign * (oh * 3_600 + om * 60)
        }
        guard s.atEnd, let base = unixSeconds(year: year, month: mon, day: day, hour: h, minute: m, second: sec) else {
            return nil
        }
        return base + fraction - Double(offset)
    }
}
