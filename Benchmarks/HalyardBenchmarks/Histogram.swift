/// A log-linear histogram of per-read latencies, in units of 1/16 ns, with 32 sub-buckets per
/// power of two (about 3 % resolution). Fixed size, no allocation while recording.
struct Histogram {
    static let subBits = 5
    static let sub = 1 << subBits  // 32
    static let bucketCount = 2 * sub + (64 - subBits - 1) * sub
    static let unitsPerNs = 16.0

    var counts: [UInt64] = Array(repeating: 0, count: Histogram.bucketCount)
    var total: UInt64 = 0

    @inline(__always)
    static func index(_ v: UInt64) -> Int {
        if v < UInt64(2 * sub) { return Int(v) }
        let e = 63 - v.leadingZeroBitCount  // >= subBits + 1
        let s = Int((v >> UInt64(e - subBits)) & UInt64(sub - 1))
        return 2 * sub + (e - subBits - 1) * sub + s
    }

    /// The middle of bucket `i`, in units.
    static func value(_ i: Int) -> Double {
        if i < 2 * sub { return Double(i) }
        let e = (i - 2 * sub) / sub + subBits + 1
        let s = (i - 2 * sub) % sub
        let low = Double(sub + s) * Double(UInt64(1) << UInt64(e - subBits))
        let width = Double(UInt64(1) << UInt64(e - subBits))
        return low + width / 2
    }

    /// Records one timed batch: `batchNs` nanoseconds for `reads` reads.
    @inline(__always)
    mutating func record(batchNs: UInt64, reads: Int) {
        let units = batchNs &* 16 / UInt64(reads)
        counts.withUnsafeMutableBufferPointer { $0[Histogram.index(units)] &+= 1 }
        total &+= 1
    }

    mutating func merge(_ other: Histogram) {
        for i in 0..<counts.count { counts[i] += other.counts[i] }
        total += other.total
    }

    /// The per-read latency in ns at quantile `q` (0...1), or nil when empty.
    func quantileNs(_ q: Double) -> Double? {
        guard total > 0 else { return nil }
        let rank = UInt64((q * Double(total)).rounded(.up))
        var seen: UInt64 = 0
        for (i, c) in counts.enumerated() where c > 0 {
            seen += c
            if seen >= max(rank, 1) { return Histogram.value(i) / Histogram.unitsPerNs }
        }
        return Histogram.value(counts.count - 1) / Histogram.unitsPerNs
    }
}
