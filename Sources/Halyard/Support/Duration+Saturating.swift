// The one place a `Duration` becomes a count of whole units. Every conversion here saturates:
// a duration beyond what the result type can hold gives that type's bound, never a trap and
// never a wrapped value — for every input, `.seconds(Int64.max)`, `.seconds(Int64.min)` and
// sums beyond them (which `Duration.components` itself would trap on) included. Each rounds
// one stated way; a caller that wants a floor (a timeout of at least 1 ms), a ceiling below
// the bound (Redis's expiry) or another integer type adapts the result at its call site.

extension Duration {
    /// Whole nanoseconds, truncated toward zero, saturating at `Int64.min` and `Int64.max`
    /// (about ±292 years).
    package var saturatingNanoseconds: Int64 {
        wholeUnits(attosecondsPerUnit: 1_000_000_000, roundingUp: false)
    }

    /// Whole milliseconds, truncated toward zero (1.9 ms is 1, -1.9 ms is -1), saturating at
    /// `Int64.min` and `Int64.max`.
    package var saturatingMilliseconds: Int64 {
        wholeUnits(attosecondsPerUnit: 1_000_000_000_000_000, roundingUp: false)
    }

    /// Whole milliseconds, rounded up toward +∞ (0.1 ms is 1, -1.9 ms is -1), saturating at
    /// `Int64.min` and `Int64.max`: a deadline or timeout that must not end early.
    package var saturatingMillisecondsRoundedUp: Int64 {
        wholeUnits(attosecondsPerUnit: 1_000_000_000_000_000, roundingUp: true)
    }

    /// Whole seconds, truncated toward zero, saturating at `Int64.min` and `Int64.max` (the
    /// same as `components.seconds` wherever that does not trap).
    package var saturatingSeconds: Int64 {
        wholeUnits(attosecondsPerUnit: 1_000_000_000_000_000_000, roundingUp: false)
    }

    /// Whole seconds, rounded up toward +∞ (1 ns is 1 s), saturating at `Int64.min` and
    /// `Int64.max`.
    package var saturatingSecondsRoundedUp: Int64 {
        wholeUnits(attosecondsPerUnit: 1_000_000_000_000_000_000, roundingUp: true)
    }

    /// Seconds with their fraction, as a `Double` (a `TimeInterval`): `seconds + attoseconds /
    /// 1e18`. A duration beyond ±`Int64.max` seconds counts as that many (no trap).
    package var fractionalSeconds: Double {
        if self >= .seconds(Int64.max) { return Double(Int64.max) }
        if self <= .seconds(Int64.min) { return Double(Int64.min) }
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// The count of whole `attosecondsPerUnit` units, truncated toward zero or rounded up,
    /// saturating at `Int64`'s bounds. Beyond the bounds the comparisons (exact, on the
    /// duration's own 128-bit value) answer before `components` is read; within them the
    /// count fits, and so does every step of its computation: `components` gives seconds and
    /// attoseconds of the same sign, each part smaller in magnitude than the whole.
    @inline(__always)
    private func wholeUnits(attosecondsPerUnit: Int64, roundingUp: Bool) -> Int64 {
        let unit = Duration(
            secondsComponent: attosecondsPerUnit / 1_000_000_000_000_000_000,
            attosecondsComponent: attosecondsPerUnit % 1_000_000_000_000_000_000)
        if self >= unit * Int64.max { return .max }
        if self <= unit * Int64.min { return .min }
        let (seconds, attoseconds) = components
        let unitsPerSecond = 1_000_000_000_000_000_000 / attosecondsPerUnit
        let whole = seconds * unitsPerSecond + attoseconds / attosecondsPerUnit
        // Truncation already rounded a negative value up; only a positive rest adds one (and
        // `self` is below `Int64.max` units here, so the sum fits).
        return roundingUp && attoseconds % attosecondsPerUnit > 0 ? whole + 1 : whole
    }
}
