import Foundation

// The statistics and number formatting every benchmark harness prints its figures with: one
// definition, so a median or a p99 means the same thing in every report.

/// The `p` quantile of `values` (`p` in `0...1`), linearly interpolated between the two nearest
/// ranks of the sorted values (numpy's default, R's type 7); `nan` when `values` is empty.
///
/// `values` need not be sorted (they are sorted here); `percentile(values, 0.5)` is the median.
public func percentile(_ values: [Double], _ p: Double) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    let position = min(max(p, 0), 1) * Double(sorted.count - 1)
    let lower = Int(position.rounded(.down))
    let upper = min(lower + 1, sorted.count - 1)
    return sorted[lower] + (sorted[upper] - sorted[lower]) * (position - Double(lower))
}

/// The median of `values`: the middle value, or the mean of the two middle values when the count
/// is even (``percentile(_:_:)`` at 0.5); `nan` when `values` is empty.
public func median(_ values: [Double]) -> Double {
    percentile(values, 0.5)
}

/// `value` with `digits` digits after the decimal point (`fmt(3.14159)` is `"3.14"`).
public func fmt(_ value: Double, _ digits: Int = 2) -> String {
    String(format: "%.\(digits)f", value)
}

/// `value` with about 3 significant digits (no decimals from 100 on, 1 from 10, 2 from 1, 3
/// below), or `"-"` when it is not finite.
public func fmt(significant value: Double) -> String {
    guard value.isFinite else { return "-" }
    let magnitude = abs(value)
    if magnitude >= 100 { return String(format: "%.0f", value) }
    if magnitude >= 10 { return String(format: "%.1f", value) }
    if magnitude >= 1 { return String(format: "%.2f", value) }
    return String(format: "%.3f", value)
}
