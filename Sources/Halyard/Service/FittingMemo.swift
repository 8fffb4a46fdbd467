/// The warm path's memo: `EvaluationContext` → its ``FittedContext``, so a context seen
/// recently is not validated, serialized, sorted and hashed (SHA-1) again on every request
/// (SPEC §12, docs/service.md, "The warm path").
///
/// Keyed by a hash of the context computed in one pass, and checked with an exact comparison
/// (FittingMemo+Key.swift): two different contexts never share an entry, even when their
/// hashes collide (they share a table slot and are told apart byte for byte). Bounded by count
/// and by estimated bytes, split over shards (each with its own lock and its share of both
/// bounds): a million distinct users cannot grow it. A full shard evicts an arbitrary entry
/// (the table's first): a memo miss costs one fitting, nothing is fetched for it.
final class FittingMemo: Sendable {
    /// One memoized context.
    struct Entry {
        /// The memo's copy of the context (it shares storage with the caller's).
        let context: EvaluationContext
        /// Its attribute hashes, ascending, with their indices in ``context``'s attributes.
        let order: [StoredAttribute]
        let fitted: FittedContext
        let bytes: Int
    }

    /// The entries of one hash: nearly always one (``more`` is empty, no allocation).
    private struct Slot {
        var first: Entry
        var more: [Entry] = []

        func find(_ context: EvaluationContext, _ hashes: UnsafeMutableBufferPointer<UInt64>) -> FittedContext? {
            if first.matches(context, hashes) { return first.fitted }
            for e in more where e.matches(context, hashes) { return e.fitted }
            return nil
        }

        var bytes: Int { more.reduce(first.bytes) { $0 + $1.bytes } }
        var count: Int { 1 + more.count }
    }

    private struct Shard {
        var table: [UInt64: Slot] = [:]
        var count = 0
        var bytes = 0
    }

    /// The most entries and estimated bytes held.
    let maxCount: Int
    let maxBytes: Int
    private let shards: [Locked<Shard>]
    private let perCount: Int
    private let perBytes: Int
    private let keys: HashKeys

    /// - Parameter keys: the hash's words; random by default (tests pass
    ///   ``HashKeys/colliding`` to make every context collide).
    init(maxCount: Int, maxBytes: Int, keys: HashKeys = .random()) {
        self.maxCount = max(0, maxCount)
        self.maxBytes = max(0, maxBytes)
        self.keys = keys
        let count = 16
        shards = (0..<count).map { _ in Locked(Shard()) }
        perCount = self.maxCount / count
        perBytes = self.maxBytes / count
    }

    /// The estimated bytes of an entry: the fitted context's strings (its canonical JSON and
    /// fingerprint, and its members, about the JSON's size again), the key's copy of the
    /// context (about the JSON's size), its sorted attribute hashes, and a fixed overhead for
    /// the table slot and object headers.
    static func estimatedBytes(_ fitted: FittedContext, attributes: Int) -> Int {
        3 * (fitted.canonicalJSON.utf8.count + 16) + 32 * attributes + 544
    }

    private func shard(_ hash: UInt64) -> Locked<Shard> {
        shards[Int(truncatingIfNeeded: hash >> 60) & (shards.count - 1)]
    }

    /// The fitted form of `context` when it is memoized.
    func fitted(_ context: EvaluationContext) -> FittedContext? {
        withUnsafeTemporaryAllocation(of: UInt64.self, capacity: context.attributes.count) { hashes in
            let hash = keys.hash(context, into: hashes)
            return shard(hash).withLock { $0.table[hash]?.find(context, hashes) }
        }
    }

    /// The fitted form of `context`: memoized, or made by `fit` and memoized (nothing is kept
    /// when `fit` throws, or when the memo has no room at all).
    func fitted(
        _ context: EvaluationContext, fit: (EvaluationContext) throws(ContextError) -> FittedContext
    ) throws(ContextError) -> FittedContext {
        // The probe: the hash, and on a hit the fitted context; on a miss the sorted attribute
        // hashes the entry will keep.
        let probe = withUnsafeTemporaryAllocation(of: UInt64.self, capacity: context.attributes.count) {
            hashes -> (UInt64, FittedContext?, [UInt64]) in
            let hash = keys.hash(context, into: hashes)
            if let hit = shard(hash).withLock({ $0.table[hash]?.find(context, hashes) }) { return (hash, hit, []) }
            return (hash, nil, Array(hashes))
        }
        if let hit = probe.1 { return hit }
        let hash = probe.0
        let fitted = try fit(context)
        var order: [StoredAttribute] = []
        order.reserveCapacity(context.attributes.count)
        for (n, index) in context.attributes.indices.enumerated() {
            order.append(StoredAttribute(hash: probe.2[n], index: index))
        }
        order.sort { $0.hash < $1.hash }
        let entry = Entry(
            context: context, order: order, fitted: fitted,
            bytes: Self.estimatedBytes(fitted, attributes: context.attributes.count))
        guard perCount > 0, entry.bytes <= perBytes else { return fitted }
        let evicted = shard(hash).withLock { s -> [Slot] in
            var evicted: [Slot] = []
            while !s.table.isEmpty, s.count >= perCount || s.bytes + entry.bytes > perBytes {
                let (_, slot) = s.table.remove(at: s.table.startIndex)
                s.count -= slot.count
                s.bytes -= slot.bytes
                evicted.append(slot)
            }
            if s.table[hash] == nil {
                s.table[hash] = Slot(first: entry)
            } else {
                s.table[hash]?.more.append(entry)
            }
            s.count += 1
            s.bytes += entry.bytes
            return evicted
        }
        _ = evicted  // released here, outside the lock
        return fitted
    }

    /// Entries and estimated bytes held now (one shard lock at a time).
    var totals: (count: Int, bytes: Int) {
        var t = (count: 0, bytes: 0)
        for shard in shards {
            shard.withLock { s in
                t.count += s.count
                t.bytes += s.bytes
            }
        }
        return t
    }
}
