/// The shared tier's call latencies over the last minute, for ``SharedCacheStats/callLatencyP50``
/// and ``SharedCacheStats/callLatencyP99`` (docs/fleet.md, "What an operator sees"): a Redis
/// that got slow an hour into the tier's life shows within a minute, and one that recovered
/// stops showing a minute later.
///
/// Six bucket sets (``RedisClientStats/LatencyHistogram``, 50 µs … 1 s) of 10 s each, keyed
/// by the 10-s slot of the tier's clock (the service's injected clock, never wall time) they
/// cover; a percentile merges the current slot and the five before it, so it covers between the
/// last 50 and 60 s. A set is reused once its slot has left the window. A pure value: the
/// time is passed in.
///
/// ```swift
/// var window = SharedCacheLatencyWindow()
/// window.record(.milliseconds(2), now: clock.monotonicNow)
/// window.percentile(0.99, now: clock.monotonicNow)   // 2 ms (its bucket's upper bound)
/// ```
struct SharedCacheLatencyWindow: Sendable {
    /// How long one bucket set covers.
    static let slotLength: Duration = .seconds(10)
    /// How many bucket sets the window holds: the window is `slotLength` × `slotCount`.
    static let slotCount = 6

    private struct Slot: Sendable {
        /// The slot of the clock this set covers (its time divided by ``slotLength``).
        var index: Int64
        var histogram = RedisClientStats.LatencyHistogram()
    }

    private var slots: [Slot] = []

    /// The slot of the clock that `now` falls in.
    static func slot(of now: Duration) -> Int64 {
        Int64((max(.zero, now) / slotLength).rounded(.down))
    }

    /// Records one call's latency at `now`.
    mutating func record(_ latency: Duration, now: Duration) {
        let index = Self.slot(of: now)
        if let last = slots.indices.last, slots[last].index == index {
            slots[last].histogram.record(latency)
            return
        }
        // A new slot: the sets that left the window go, so there are never more than six.
        slots.removeAll { $0.index <= index - Int64(Self.slotCount) || $0.index > index }
        var slot = Slot(index: index)
        slot.histogram.record(latency)
        slots.append(slot)
    }

    /// The latencies of the window that ends at `now`, merged.
    func histogram(now: Duration) -> RedisClientStats.LatencyHistogram {
        let index = Self.slot(of: now)
        var merged = RedisClientStats.LatencyHistogram()
        for slot in slots where slot.index > index - Int64(Self.slotCount) && slot.index <= index {
            merged.merge(slot.histogram)
        }
        return merged
    }

    /// The latency at or under which a `fraction` of the window's calls ended: its bucket's
    /// upper bound (never understated); nil with no call in the window, or over 1 s.
    func percentile(_ fraction: Double, now: Duration) -> Duration? {
        histogram(now: now).percentile(fraction)
    }
}
