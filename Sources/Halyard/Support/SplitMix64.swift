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
    package mutating func unit() -> Double { Double(unitInterval: next()) }
}

extension Double {
    /// `bits` mapped into `[0, 1)`: its top 53 bits over 2^53 (the one place Halyard turns random
    /// or hash bits into a fraction).
    @inline(__always)
    package init(unitInterval bits: UInt64) {
        self = Double(bits >> 11) * 0x1p-53
    }
}
