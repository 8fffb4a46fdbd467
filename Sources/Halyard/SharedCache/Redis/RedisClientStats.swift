/// What one ``RedisClient`` did, for the operator's graphs (docs/fleet.md, "What an operator
/// sees"): calls and their latency, how many wait for the connection, reconnects, and failures by
/// ``RedisError/Category``.
///
/// ```swift
/// let stats = client.stats
/// print(stats.calls, stats.latency.percentile(0.99) ?? .zero, stats.waiting, stats.reconnects)
/// print(stats.errors[.failover, default: 0], stats.errors[.timeout, default: 0])
/// ```
package struct RedisClientStats: Sendable, Hashable {
    /// Calls made (``RedisClient/pipeline(_:deadline:)`` and everything built on it), ended or not.
    package var calls = 0
    /// Exchanges that ended (one per call; one for the calls a shared-tier lane sent together),
    /// by how long they took from the call to its end, the wait for a connection (and a
    /// connect) included; failed ones too.
    package var latency = LatencyHistogram()
    /// Calls waiting for the connection now (another call holds it). Always 0 under the
    /// shared tier, whose lane queue hands a client one exchange at a time.
    package var waiting = 0
    /// The most calls that waited at once.
    package var mostWaiting = 0
    /// Calls holding the connection now (0 or 1).
    package var inFlight = 0
    /// Connections open now (0 or 1).
    package var open = 0
    /// Connections opened: the first one and every reconnect.
    package var connectionsOpened = 0
    /// Connections opened after one was dropped (a failure, a failover reply): reconnects.
    package var reconnects = 0
    /// Failed calls by class, and error replies that did not fail their call (`-OOM`, `-ERR`)
    /// by theirs. Closing the client is not counted.
    package var errors: [RedisError.Category: Int] = [:]

    package init() {}

    /// Call latencies in fixed buckets (microseconds, roughly logarithmic up to 1 s, then one
    /// open bucket): percentiles are a bucket's upper bound, so they never understate.
    package struct LatencyHistogram: Sendable, Hashable {
        /// Each bucket's upper bound, in microseconds.
        package static let bounds: [Int64] = [
            50, 100, 150, 200, 300, 400, 500, 750, 1_000, 1_500, 2_000, 3_000, 5_000, 7_500, 10_000, 15_000, 20_000,
            25_000, 30_000, 50_000, 100_000, 250_000, 500_000, 1_000_000,
        ]
        /// Counts per bucket; the last one holds everything above the last bound.
        package private(set) var counts = [Int](repeating: 0, count: bounds.count + 1)
        /// Latencies recorded.
        package private(set) var count = 0

        package init() {}

        /// Adds `other`'s counts to these (the tier's figures over its clients).
        package mutating func merge(_ other: LatencyHistogram) {
            for index in counts.indices { counts[index] += other.counts[index] }
            count += other.count
        }

        /// Records one latency.
        package mutating func record(_ duration: Duration) {
            let micros = RedisClientStats.microseconds(duration)
            var index = 0
            while index < Self.bounds.count && micros > Self.bounds[index] { index += 1 }
            counts[index] += 1
            count += 1
        }

        /// The latency at or under which a `fraction` (0...1) of the calls ended: the upper
        /// bound of its bucket; nil with no call, or when it is in the open bucket (over 1 s).
        package func percentile(_ fraction: Double) -> Duration? {
            guard count > 0 else { return nil }
            let rank = max(1, Int((Double(count) * min(max(fraction, 0), 1)).rounded(.up)))
            var seen = 0
            for (index, bucket) in counts.enumerated() {
                seen += bucket
                if seen >= rank {
                    return index < Self.bounds.count ? .microseconds(Self.bounds[index]) : nil
                }
            }
            return nil
        }
    }

    static func microseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        guard seconds < 1_000_000 else { return .max }
        return max(0, seconds * 1_000_000 + attoseconds / 1_000_000_000_000)
    }
}
