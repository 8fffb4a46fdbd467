package import Foundation

/// Parses an HTTP `Retry-After` value into a delay from `now` (wall clock), for the sync
/// engine (docs/protocol.md) and the exposure uploader (docs/exposures.md) alike.
///
/// Accepted forms: delay-seconds (`"120"`), an HTTP-date (IMF-fixdate
/// `"Wed, 21 Oct 2015 07:28:00 GMT"`, the obsolete RFC 850 and asctime forms) and an ISO-8601
/// date-time (`"2015-10-21T07:28:00Z"`, fractional seconds and `Z`/`±hh:mm` offsets allowed). A
/// date in the past gives `.zero`; anything else gives `nil` (the header is ignored and normal
/// backoff applies). Delays are capped at ``maxDelay`` (1 h, SPEC §5: one constant wherever a
/// `Retry-After` is honoured) so a broken or hostile header cannot stop traffic for longer; the
/// retry itself is drawn by ``jitteredFloor(_:unit:)``. A hand-written scanner rather than
/// `DateFormatter`: no locale, no shared mutable formatter, the same result on every platform.
package enum RetryAfter {
    /// The largest delay honoured (1 h), wherever a `Retry-After` is: bulk requests, uploads,
    /// event streams, a service's pause and its per-context failure records (SPEC §5).
    package static let maxDelay: Duration = .seconds(3_600)

    /// The delay from `now` the value asks for (zero for dates in the past), or `nil` when the
    /// value is not understood.
    package static func parse(_ value: String, now: Date) -> Duration? {
        let text = value.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty, text.utf8.count <= 64 else { return nil }
        let bytes = Array(text.utf8)
        if bytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            // delay-seconds; very long digit strings saturate at the cap.
            guard let seconds = Int64(text) else { return maxDelay }
            return min(.seconds(seconds), maxDelay)
        }
        let date = httpDate(bytes) ?? iso8601(bytes)
        guard let date else { return nil }
        let seconds = date - now.timeIntervalSince1970
        if !(seconds > 0) { return .zero }
        if seconds >= Double(maxDelay.components.seconds) { return maxDelay }
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
