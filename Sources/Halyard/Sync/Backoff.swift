import Foundation

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
/// fixed seeds; the tests and the benchmark workload use it too.
package struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    package init(seed: UInt64) { state = seed }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A double uniform in [0, 1).
    package mutating func unit() -> Double { Double(next() >> 11) * 0x1.0p-53 }
}
