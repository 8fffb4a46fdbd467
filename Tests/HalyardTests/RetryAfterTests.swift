import Foundation
import Testing

@_spi(Fuzzing) @testable import Halyard

/// `Retry-After` (`Support/RetryAfter.swift`, shared by the refresh, exposure and OTLP paths):
/// delay seconds, the three HTTP-date forms and ISO 8601, capped at `RetryAfter.maxDelay`.
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
}
