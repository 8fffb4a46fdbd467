import Foundation

/// Parses a `Retry-After` header value into a delay from `now` (wall clock).
///
/// Accepted forms (SPEC §5): delay-seconds (`120`), HTTP-date (IMF-fixdate
/// `Sun, 06 Nov 1994 08:49:37 GMT`, the obsolete RFC 850 and asctime forms), and ISO-8601
/// (`2026-11-30T07:00:00Z`, with or without fractional seconds, `Z` or `±hh:mm`). A date in the
/// past gives `.zero`. Anything else gives `nil` (the header is ignored and normal backoff applies).
/// Delays are capped at ``maxDelay`` so a broken header cannot stop refreshes for longer than a day.
enum RetryAfter {
    /// The largest delay honoured (24 h).
    static let maxDelay: Duration = .seconds(86_400)

    static func parse(_ raw: String, now: Date) -> Duration? {
        let value = raw.trimmingCharacters(in: .whitespaces)
        guard !value.isEmpty, value.utf8.count <= 64 else { return nil }
        if value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            // delay-seconds; very long digit strings saturate at the cap.
            guard let seconds = Int64(value) else { return maxDelay }
            return min(.seconds(seconds), maxDelay)
        }
        guard let date = httpDate(value) ?? iso8601(value) else { return nil }
        let interval = date.timeIntervalSince(now)
        guard interval > 0 else { return .zero }
        guard interval < 86_400 else { return maxDelay }
        return .milliseconds(Int64((interval * 1000).rounded(.up)))
    }

    private static func formatter(_ format: String) -> DateFormatter {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = format
        f.isLenient = false
        return f
    }

    static func httpDate(_ value: String) -> Date? {
        // DateFormatter is not Sendable; build per call (this path runs once per 429).
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"] {
            let normalized = format.hasPrefix("EEE MMM") ? value.split(separator: " ").joined(separator: " ") : value
            if let date = formatter(format).date(from: normalized) { return date }
        }
        return nil
    }

    static func iso8601(_ value: String) -> Date? {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = f.date(from: value) { return date }
        f.formatOptions = [.withInternetDateTime]
        return f.date(from: value)
    }
}

/// Exponential backoff with full jitter between a floor and a ceiling.
///
/// After the n-th consecutive failure the ceiling is `min(maximum, initial × 2^(n-1))` and the
/// delay is drawn uniformly from `[initial, ceiling]`, so it always stays within
/// `[initial, maximum]` (1 s … 5 min by default).
struct Backoff: Sendable, Hashable {
    var initial: Duration
    var maximum: Duration

    /// The ceiling after `failures` consecutive failures (`failures >= 1`).
    func ceiling(failures: Int) -> Duration {
        let lower = max(initial, .milliseconds(1))
        let upper = max(maximum, lower)
        var c = lower
        var n = 1
        while n < failures && c < upper {
            c = c * 2
            n += 1
        }
        return min(c, upper)
    }

    /// The delay after `failures` consecutive failures, with `unit` uniform in [0, 1).
    func delay(failures: Int, unit: Double) -> Duration {
        let lower = max(initial, .milliseconds(1))
        let top = ceiling(failures: failures)
        let span = top - lower
        let u = min(max(unit, 0), 1)
        return lower + span * u
    }
}

/// A small deterministic random source (SplitMix64) so the refresh machine can be tested with
/// fixed seeds.
struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A double uniform in [0, 1).
    mutating func unit() -> Double { Double(next() >> 11) * 0x1.0p-53 }
}
