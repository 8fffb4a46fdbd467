import Foundation

/// Zipf(s) over ranks 0..<n by inverse CDF (binary search over the cumulative weights), as
/// `halyard-bench-service` draws its contexts.
struct Zipf: Sendable {
    /// `cdf[k]`: the probability of a rank `<= k`.
    let cdf: [Double]

    init(n: Int, s: Double) {
        var cdf = [Double](repeating: 0, count: n)
        var total = 0.0
        for k in 0..<n {
            total += 1 / pow(Double(k + 1), s)
            cdf[k] = total
        }
        for k in 0..<n { cdf[k] /= total }
        self.cdf = cdf
    }

    /// The rank drawn by `u` in `[0, 1)`.
    func sample(_ u: Double) -> Int {
        var lo = 0
        var hi = cdf.count - 1
        while lo < hi {
            let mid = (lo + hi) / 2
            if cdf[mid] < u { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
}

/// SplitMix64: a seeded generator, so a worker's sequence of contexts is the same in both modes.
struct SplitMix64 {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A double in `[0, 1)`.
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
