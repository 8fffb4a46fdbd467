/// Least-squares slope of a series of (seconds, bytes) samples: the growth rate the process tests
/// assert on (issue 20), less sensitive to one late page fault than "last minus first".
enum MemorySlope {
    /// The slope in bytes per second of the least-squares line through `points`; `nil` with fewer
    /// than two points or when every point has the same time.
    static func bytesPerSecond(_ points: [(seconds: Double, bytes: Double)]) -> Double? {
        guard points.count >= 2 else { return nil }
        let n = Double(points.count)
        let meanT = points.reduce(0) { $0 + $1.seconds } / n
        let meanB = points.reduce(0) { $0 + $1.bytes } / n
        var covariance = 0.0
        var variance = 0.0
        for point in points {
            covariance += (point.seconds - meanT) * (point.bytes - meanB)
            variance += (point.seconds - meanT) * (point.seconds - meanT)
        }
        guard variance > 0 else { return nil }
        return covariance / variance
    }

    /// The slope over the points from the middle of the run on (`seconds >= half`).
    static func lastHalf(_ points: [(seconds: Double, bytes: Double)], runSeconds: Double) -> Double? {
        bytesPerSecond(points.filter { $0.seconds >= runSeconds / 2 })
    }
}
