/// The de-duplication table: for each (key, variant, fingerprint) identity still inside its window,
/// the coarse second its window ends. Bounded: expired entries are pruned as time passes (a few
/// per call), and beyond `capacity` the entries whose window ends first are evicted.
package struct ExposureDedupTable: Sendable {
    /// The window end of each live identity (a de-duplication key).
    private var ends: [UInt64: UInt32] = [:]
    /// The identities in the order their windows started (so end), with the end they were given:
    /// an entry whose end no longer matches ``ends`` was renewed or evicted.
    private var order = ExposureFIFO<(hash: UInt64, end: UInt32)>()
    /// The hard cap on entries.
    package let capacity: Int
    /// Entries evicted early because of the cap.
    package private(set) var evicted = 0

    /// Creates a table holding at most `capacity` entries.
    package init(capacity: Int) { self.capacity = max(1, capacity) }

    /// The number of live entries.
    package var count: Int { ends.count }

    /// If `hash` was seen in a window that has not ended at `now`, that window's end; otherwise
    /// starts a window `[now, now + window)` and returns `nil`.
    package mutating func check(_ hash: UInt64, now: UInt32, window: UInt32) -> UInt32? {
        prune(now: now, limit: 16)
        if let end = ends[hash], end > now { return end }
        let end = now &+ window < now ? UInt32.max : now + window
        ends[hash] = end
        order.append((hash, end))
        while ends.count > capacity || order.count > 2 * capacity {
            guard let oldest = order.popFirst() else { break }
            if ends[oldest.hash] == oldest.end {
                ends.removeValue(forKey: oldest.hash)
                if oldest.end > now { evicted += 1 }
            }
        }
        return nil
    }

    /// Forgets up to `limit` entries whose window has ended.
    package mutating func prune(now: UInt32, limit: Int) {
        var n = 0
        while n < limit, let oldest = order.first, oldest.end <= now {
            order.popFirst()
            if ends[oldest.hash] == oldest.end { ends.removeValue(forKey: oldest.hash) }
            n += 1
        }
    }
}
