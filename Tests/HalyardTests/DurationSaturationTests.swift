import Foundation
import Testing

@testable import Halyard

/// The one `Duration` → count conversion (`Support/Duration+Saturating.swift`): each rounding
/// at zero, below one unit, at the exact bounds of `Int64` and beyond them, and the call sites
/// that adapt it (two of which trapped on a huge duration before it existed).
@Suite struct DurationSaturationTests {
    /// One attosecond, the smallest step a `Duration` has.
    static let attosecond = Duration(secondsComponent: 0, attosecondsComponent: 1)

    /// A duration beyond `Int64.max` seconds, where `components` itself would trap.
    static let beyondSeconds = Duration.seconds(Int64.max) * 4

    /// Every conversion of `d`, in one tuple: nanoseconds, milliseconds (truncated and rounded
    /// up), seconds (truncated and rounded up).
    static func all(_ d: Duration) -> [Int64] {
        [
            d.saturatingNanoseconds, d.saturatingMilliseconds, d.saturatingMillisecondsRoundedUp,
            d.saturatingSeconds, d.saturatingSecondsRoundedUp,
        ]
    }

    @Test func zeroIsZeroInEveryUnit() {
        #expect(Self.all(.zero) == [0, 0, 0, 0, 0])
        #expect(Duration.zero.fractionalSeconds == 0)
    }

    @Test func aPartOfOneUnitTruncatesTowardZeroOrRoundsUp() {
        #expect(Self.all(Self.attosecond) == [0, 0, 1, 0, 1])
        #expect(Self.all(.nanoseconds(1)) == [1, 0, 1, 0, 1])
        #expect(Self.all(.microseconds(500)) == [500_000, 0, 1, 0, 1])
        #expect(Self.all(.microseconds(1999)) == [1_999_000, 1, 2, 0, 1])
        // Negative: truncation toward zero is already the ceiling.
        #expect(Self.all(.zero - Self.attosecond) == [0, 0, 0, 0, 0])
        #expect(Self.all(.nanoseconds(-1)) == [-1, 0, 0, 0, 0])
        #expect(Self.all(.microseconds(-1500)) == [-1_500_000, -1, -1, 0, 0])
    }

    @Test func wholeUnitsAreExact() {
        #expect(Self.all(.seconds(2)) == [2_000_000_000, 2000, 2000, 2, 2])
        #expect(Self.all(.milliseconds(-7)) == [-7_000_000, -7, -7, 0, 0])
        #expect(Duration.milliseconds(1500).fractionalSeconds == 1.5)
        #expect(Duration.milliseconds(-250).fractionalSeconds == -0.25)
    }

    @Test func attosecondsCarryIntoTheUnitsBelowASecond() {
        let almostTwo =
            Duration.seconds(1) + Duration(secondsComponent: 0, attosecondsComponent: 999_999_999_999_999_999)
        #expect(Self.all(almostTwo) == [1_999_999_999, 1999, 2000, 1, 2])
        // -1 s and -1 as: components (-1, -1), the same sign in both parts.
        let justBelowMinusOne = Duration(secondsComponent: -2, attosecondsComponent: 999_999_999_999_999_999)
        #expect(Self.all(justBelowMinusOne) == [-1_000_000_000, -1000, -1000, -1, -1])
    }

    @Test func theExactBoundsOfEachUnitAndOneAttosecondEitherSide() {
        let maxNanoseconds = Duration.nanoseconds(Int64.max)
        #expect(maxNanoseconds.saturatingNanoseconds == .max)
        #expect((maxNanoseconds + Self.attosecond).saturatingNanoseconds == .max)
        #expect((maxNanoseconds - Self.attosecond).saturatingNanoseconds == .max - 1)
        let minNanoseconds = Duration.nanoseconds(Int64.min)
        #expect(minNanoseconds.saturatingNanoseconds == .min)
        #expect((minNanoseconds - Self.attosecond).saturatingNanoseconds == .min)
        #expect((minNanoseconds + Self.attosecond).saturatingNanoseconds == .min + 1)

        let maxMilliseconds = Duration.milliseconds(Int64.max)
        #expect(maxMilliseconds.saturatingMilliseconds == .max)
        #expect(maxMilliseconds.saturatingMillisecondsRoundedUp == .max)
        #expect((maxMilliseconds - Self.attosecond).saturatingMilliseconds == .max - 1)
        #expect((maxMilliseconds - Self.attosecond).saturatingMillisecondsRoundedUp == .max)
        #expect((maxMilliseconds + Self.attosecond).saturatingMilliseconds == .max)
        #expect((maxMilliseconds + Self.attosecond).saturatingMillisecondsRoundedUp == .max)
        let minMilliseconds = Duration.milliseconds(Int64.min)
        #expect(minMilliseconds.saturatingMilliseconds == .min)
        #expect((minMilliseconds + Self.attosecond).saturatingMilliseconds == .min + 1)
        #expect((minMilliseconds + Self.attosecond).saturatingMillisecondsRoundedUp == .min + 1)
        #expect((minMilliseconds - Self.attosecond).saturatingMillisecondsRoundedUp == .min)

        // The first duration whose milliseconds overflow `seconds * 1000`.
        let firstOverflow = Duration.seconds(Int64.max / 1000 + 1)
        #expect(firstOverflow.saturatingMilliseconds == .max)
        #expect((.zero - firstOverflow).saturatingMilliseconds == .min)
    }

    @Test func hugeDurationsSaturateAtTheBoundsInEveryUnit() {
        #expect(Self.all(.seconds(Int64.max)) == [.max, .max, .max, .max, .max])
        #expect(Self.all(.seconds(Int64.min)) == [.min, .min, .min, .min, .min])
        let almostMax = Duration.seconds(Int64.max) + .nanoseconds(999_999_999)
        #expect(Self.all(almostMax) == [.max, .max, .max, .max, .max])
        // Beyond what `components` can give: no trap either.
        #expect(Self.all(Self.beyondSeconds) == [.max, .max, .max, .max, .max])
        #expect(Self.all(.zero - Self.beyondSeconds) == [.min, .min, .min, .min, .min])
        #expect(Duration.seconds(Int64.max).fractionalSeconds == Double(Int64.max))
        #expect(Self.beyondSeconds.fractionalSeconds == Double(Int64.max))
        #expect((.zero - Self.beyondSeconds).fractionalSeconds == Double(Int64.min))
    }

    // MARK: - The call sites' adapters

    /// `SharedFetchPlan` compares entry ages in wall milliseconds with `refreshAfter` and
    /// `maxStaleness`: a huge one (an hour's worth of anything would do; the public options
    /// accept `.seconds(Int64.max)`) used to trap the first shared-cache fetch.
    @Test func theSharedCachePlanTakesAHugeRefreshAfterAndMaxStaleness() throws {
        var options = FlagServiceOptions(baseURL: try #require(URL(string: "https://flags.example")), key: "srv-1")
        options.refreshAfter = .seconds(Int64.max)
        options.maxStaleness = .seconds(Int64.max)
        let plan = SharedFetchPlan(options: options, streamLearning: nil)
        #expect(plan.refreshAfterMilliseconds == .max)
        #expect(plan.maxStalenessMilliseconds == .max)

        options.refreshAfter = .milliseconds(30_500) + .microseconds(999)
        options.maxStaleness = .seconds(600)
        let usual = SharedFetchPlan(options: options, streamLearning: nil)
        #expect(usual.refreshAfterMilliseconds == 30_500)  // truncated, as before
        #expect(usual.maxStalenessMilliseconds == 600_000)
    }

    /// Redis's `PX`: rounded up, at least 1, at most `Int64.max / 2`.
    @Test func redisExpiriesRoundUpWithinTheirBounds() {
        #expect(RedisCommand.milliseconds(.microseconds(1)) == 1)
        #expect(RedisCommand.milliseconds(.milliseconds(-5)) == 1)
        #expect(RedisCommand.milliseconds(.seconds(Int64.min)) == 1)
        #expect(RedisCommand.milliseconds(.nanoseconds(1_000_001)) == 2)
        #expect(RedisCommand.milliseconds(.seconds(Int64.max)) == Int64.max / 2)
        #expect(RedisSocket.pollMilliseconds(.seconds(Int64.max)) == Int32.max)
    }

    /// Halyard's deadline around a transport, the exposure window and the coarse clock.
    @Test func theOtherAdaptersSaturateToo() {
        #expect(GuardedTransport.dispatchInterval(.seconds(Int64.max)) == .nanoseconds(Int.max))
        #expect(GuardedTransport.dispatchInterval(.seconds(-1)) == .nanoseconds(0))
        #expect(GuardedTransport.dispatchInterval(.milliseconds(3)) == .nanoseconds(3_000_000))
        #expect(ExposureOptions.wholeSeconds(.milliseconds(1)) == 1)
        #expect(ExposureOptions.wholeSeconds(.seconds(-3)) == 0)
        // `seconds + 1` for the fraction trapped here before.
        #expect(ExposureOptions.wholeSeconds(.seconds(Int64.max) + .nanoseconds(1)) == .max)
        #expect(ExposureRecorder.seconds(.milliseconds(2999)) == 2)
        #expect(ExposureRecorder.seconds(Self.beyondSeconds) == .max)
    }

    #if os(Linux)
        /// The curl driver's poll timeout: whole milliseconds and one, so it wakes after a
        /// deadline, not before. A far deadline's `seconds * 1000` used to trap the driver's
        /// thread (and with it every curl transfer of the process).
        @Test func curlsPollTimeoutSaturatesForAFarDeadline() {
            #expect(CurlMulti.millisecondsAndOne(.seconds(Int64.max)) == .max)
            #expect(CurlMulti.millisecondsAndOne(Self.beyondSeconds) == .max)
            #expect(CurlMulti.millisecondsAndOne(.seconds(Int64.min)) == .min + 1)
            #expect(CurlMulti.millisecondsAndOne(.zero) == 1)
            #expect(CurlMulti.millisecondsAndOne(.microseconds(500)) == 1)
            #expect(CurlMulti.millisecondsAndOne(.microseconds(-500)) == 1)
            #expect(CurlMulti.millisecondsAndOne(.milliseconds(5)) == 6)
            #expect(CurlEasyOptions.milliseconds(Self.beyondSeconds) == .max)
        }
    #endif
}
