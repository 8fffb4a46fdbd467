import Foundation
import Testing

@_spi(Fuzzing) @testable import Halyard

/// `Retry-After` (`Support/RetryAfter.swift`, shared by the refresh, stream, service, exposure
/// and OTLP paths): delay seconds, the three HTTP-date forms and ISO 8601, capped at
/// `RetryAfter.maxDelay` (1 h); and the jittered floor every caller waits
/// (`Support/RetryAfter+Floor.swift`): uniform in `[RA, RA + max(1 s, RA / 10)]`.
@Suite struct RetryAfterTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)  // 2027-01-15T08:00:00Z

    @Test func delaySeconds() {
        #expect(RetryAfter.parse("120", now: now) == .seconds(120))
        #expect(RetryAfter.parse(" 0 ", now: now) == .zero)
        #expect(RetryAfter.parse("99999999999999999999999", now: now) == RetryAfter.maxDelay)
        #expect(RetryAfter.parse("-5", now: now) == nil)
        #expect(RetryAfter.parse("1.5", now: now) == nil)
        #expect(RetryAfter.parse("", now: now) == nil)
        #expect(RetryAfter.parse("soon", now: now) == nil)
    }

    @Test func httpDates() {
        #expect(RetryAfter.parse("Fri, 15 Jan 2027 08:01:00 GMT", now: now) == .seconds(60))
        #expect(RetryAfter.parse("Friday, 15-Jan-27 08:01:00 GMT", now: now) == .seconds(60))
        #expect(RetryAfter.parse("Fri Jan 15 08:01:00 2027", now: now) == .seconds(60))
        #expect(RetryAfter.parse("Fri, 15 Jan 2027 07:00:00 GMT", now: now) == .zero)
    }

    @Test func iso8601() {
        #expect(RetryAfter.parse("2027-01-15T08:00:30Z", now: now) == .seconds(30))
        #expect(RetryAfter.parse("2027-01-15T08:00:30.500Z", now: now) == .milliseconds(30_500))
        #expect(RetryAfter.parse("2027-01-15T09:00:30+01:00", now: now) == .seconds(30))
        #expect(RetryAfter.parse("2027-01-16T09:00:30Z", now: now) == RetryAfter.maxDelay)
    }

    /// Issue 47 item 4: one 503 with `Retry-After: 86400` blocked a client for a day (the cap
    /// was 24 h); SPEC §5 says 1 h wherever a `Retry-After` is honoured.
    @Test("Retry-After is capped at 1 h: a day in seconds or as a date gives an hour")
    func cappedAtOneHour() {
        #expect(RetryAfter.parse("86400", now: now) == .seconds(3_600))
        #expect(RetryAfter.parse("3601", now: now) == .seconds(3_600))
        #expect(RetryAfter.parse("3599", now: now) == .seconds(3_599))
        #expect(RetryAfter.parse("Sat, 16 Jan 2027 08:00:00 GMT", now: now) == .seconds(3_600))
        #expect(RetryAfter.parse("2027-01-15T08:59:59Z", now: now) == .seconds(3_599))
        #expect(RetryAfter.maxDelay == .seconds(3_600))
    }

    /// Issue 47 item 6: the window every caller's retry is drawn from after a `Retry-After`.
    @Test("the window after a Retry-After is [RA, RA + max(1 s, RA/10)], RA capped at 1 h; none for 0 or less")
    func floorWindow() {
        #expect(RetryAfter.window(nil) == nil)
        #expect(RetryAfter.window(.zero) == nil)
        #expect(RetryAfter.window(.seconds(-5)) == nil)
        #expect(RetryAfter.window(.milliseconds(1)) == .milliseconds(1)...(.milliseconds(1_001)))
        #expect(RetryAfter.window(.seconds(5)) == .seconds(5)...(.seconds(6)))
        #expect(RetryAfter.window(.seconds(10)) == .seconds(10)...(.seconds(11)))
        #expect(RetryAfter.window(.seconds(600)) == .seconds(600)...(.seconds(660)))
        #expect(RetryAfter.window(.seconds(86_400)) == .seconds(3_600)...(.seconds(3_960)))
        #expect(RetryAfter.jitteredFloor(.seconds(600), unit: 0) == .seconds(600))
        #expect(RetryAfter.jitteredFloor(.seconds(600), unit: 1) == .seconds(660))
        #expect(RetryAfter.jitteredFloor(.seconds(600), unit: 0.5) == .seconds(630))
        #expect(RetryAfter.jitteredFloor(.seconds(600), unit: .nan) == .seconds(600))
        #expect(RetryAfter.jitteredFloor(.zero, unit: 0.5) == nil)
        #expect(RetryAfter.jitteredFloor(nil, unit: 0.5) == nil)
    }

    /// The draws with seeded randomness stay in the window and cover it: a fleet given one
    /// date spreads over all of it, not a corner.
    @Test("seeded draws stay within the window and cover every tenth of it")
    func floorDrawsCoverTheWindow() throws {
        for delay in [Duration.seconds(2), .seconds(120), .seconds(7_200)] {
            let window = try #require(RetryAfter.window(delay))
            let width = window.upperBound - window.lowerBound
            var random = SplitMix64(seed: 47)
            var tenths = Set<Int>()
            for _ in 0..<1_000 {
                let draw = try #require(RetryAfter.jitteredFloor(delay, unit: random.unit()))
                #expect(window.contains(draw), "\(draw) outside \(window)")
                tenths.insert(min(Int((draw - window.lowerBound) / width * 10), 9))
            }
            #expect(tenths == Set(0..<10), "\(delay): draws reached the tenths \(tenths.sorted())")
        }
    }

    /// The doubling ceiling the client's backoff, the service's pause and the stream's
    /// reconnect share (`Backoff.doubling`).
    @Test("the shared doubling ceiling: base × 2^(steps-1), at most the cap")
    func doublingCeiling() {
        #expect(Backoff.doubling(from: .seconds(1), steps: 0, cap: .seconds(30)) == .seconds(1))
        #expect(Backoff.doubling(from: .seconds(1), steps: 1, cap: .seconds(30)) == .seconds(1))
        #expect(Backoff.doubling(from: .seconds(1), steps: 4, cap: .seconds(30)) == .seconds(8))
        #expect(Backoff.doubling(from: .seconds(1), steps: 6, cap: .seconds(30)) == .seconds(30))
        #expect(Backoff.doubling(from: .seconds(1), steps: .max, cap: .seconds(30)) == .seconds(30))
        #expect(Backoff.doubling(from: .seconds(60), steps: 3, cap: .seconds(30)) == .seconds(30))
        #expect(Backoff.doubling(from: .zero, steps: .max, cap: .seconds(30)) == .zero)
    }
}
