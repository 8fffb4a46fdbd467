/// The per-context results of an in-process service (docs/in-process.md, "Per-context
/// results"): for a context seen recently, the snapshot of every flag evaluated for it, with
/// the definitions generation (and, when a rule reads `$flagd.timestamp`, the second) it was
/// evaluated for. A result of an older generation is never served: the next read of that
/// context evaluates again, so a change of definitions reaches every context without a request.
///
/// Keyed by the warm path's memo entry of the context (``FittingMemo/Entry``), which stands
/// for the whole context byte for byte — private attributes included, which the fingerprint
/// leaves out but rules see. An item holds its entry strongly, so the identity cannot be
/// reused while the item lives. Bounded by count and estimated bytes (``FlagServiceOptions/maxContexts``,
/// ``FlagServiceOptions/maxCacheBytes``), split over shards each with its own lock and share;
/// a full shard evicts an arbitrary item (it costs one evaluation, never a request).
final class InProcessMemo: Sendable {
    /// One context's results.
    struct Item: Sendable {
        /// The context (its identity is the key).
        let entry: FittingMemo.Entry
        /// The generation the results were evaluated from.
        let generation: UInt64
        /// The second they were evaluated at (`$flagd.timestamp`).
        let second: Int64
        /// The results, with the context's fingerprint.
        let snapshot: Snapshot
        /// Estimated bytes (the snapshot's, its key table and fixed details shared).
        let bytes: Int
    }

    private struct Shard: Sendable {
        var items: [ObjectIdentifier: Item] = [:]
        var bytes = 0
        var evictions = 0
    }

    static let shardCount = 16
    private let shards: [Locked<Shard>]
    private let perCount: Int
    private let perBytes: Int

    init(maxContexts: Int, maxBytes: Int) {
        shards = (0..<Self.shardCount).map { _ in Locked(Shard()) }
        perCount = max(1, maxContexts / Self.shardCount)
        perBytes = max(1, maxBytes / Self.shardCount)
    }

    private func shard(_ id: ObjectIdentifier) -> Locked<Shard> {
        var h = UInt(bitPattern: id.hashValue)
        h ^= h >> 17
        return shards[Int(h % UInt(Self.shardCount))]
    }

    /// The item held for `entry`, if any (whatever its generation: the caller decides).
    func item(_ entry: FittingMemo.Entry) -> Item? {
        let id = ObjectIdentifier(entry)
        return shard(id).withLock { $0.items[id] }
    }

    /// Holds `item` for its entry (replacing an older one), evicting arbitrary items of the
    /// shard beyond its share. An item larger than a shard's byte share is not held.
    func store(_ item: Item) {
        let id = ObjectIdentifier(item.entry)
        // Evicted items are released after the lock (their snapshots' deinit runs there).
        var evicted: [Item] = []
        shard(id).withLock { s in
            if let old = s.items.removeValue(forKey: id) {
                s.bytes -= old.bytes
                evicted.append(old)
            }
            guard item.bytes <= perBytes else { return }
            while !s.items.isEmpty, s.items.count >= perCount || s.bytes + item.bytes > perBytes {
                let removed = s.items.remove(at: s.items.startIndex)
                s.bytes -= removed.value.bytes
                s.evictions += 1
                evicted.append(removed.value)
            }
            s.items[id] = item
            s.bytes += item.bytes
        }
        _ = evicted
    }

    /// Drops every item (at `close()`).
    func removeAll() {
        var dropped: [[ObjectIdentifier: Item]] = []
        for shard in shards {
            shard.withLock { s in
                dropped.append(s.items)
                s.items = [:]
                s.bytes = 0
            }
        }
        _ = dropped
    }

    /// Items held, their estimated bytes, and evictions so far.
    var totals: (count: Int, bytes: Int, evictions: Int) {
        var totals = (count: 0, bytes: 0, evictions: 0)
        for shard in shards {
            shard.withLock { s in
                totals.count += s.items.count
                totals.bytes += s.bytes
                totals.evictions += s.evictions
            }
        }
        return totals
    }
}
