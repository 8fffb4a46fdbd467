/// The warm path's memo: `EvaluationContext` → its ``FittedContext``, so a context seen
/// recently is not validated, serialized, sorted and hashed (SHA-1) again on every request
/// (SPEC §12, docs/service.md, "The warm path").
///
/// Keyed by the context's own `Hashable` hash (computed once per lookup) and checked with
/// `==`, so two different contexts never share an entry. Bounded by count and by estimated
/// bytes, split over shards (each with its own lock and its share of both bounds): a million
/// distinct users cannot grow it. A full shard evicts an arbitrary entry (the dictionary's
/// first): a memo miss costs one fitting, nothing is fetched for it.
final class FittingMemo: Sendable {
    private struct Key: Hashable {
        let hash: Int
        let context: EvaluationContext

        func hash(into hasher: inout Hasher) { hasher.combine(hash) }

        static func == (a: Key, b: Key) -> Bool { a.hash == b.hash && a.context == b.context }
    }

    private struct Entry {
        let fitted: FittedContext
        let bytes: Int
    }

    private struct Shard {
        var table: [Key: Entry] = [:]
        var bytes = 0
    }

    /// The most entries and estimated bytes held.
    let maxCount: Int
    let maxBytes: Int
    private let shards: [Locked<Shard>]
    private let perCount: Int
    private let perBytes: Int

    init(maxCount: Int, maxBytes: Int) {
        self.maxCount = max(0, maxCount)
        self.maxBytes = max(0, maxBytes)
        let count = 16
        shards = (0..<count).map { _ in Locked(Shard()) }
        perCount = self.maxCount / count
        perBytes = self.maxBytes / count
    }

    /// The estimated bytes of an entry: the fitted context's strings (its canonical JSON and
    /// fingerprint, and its members, about the JSON's size again), the key's copy of the
    /// context (about the JSON's size), and a fixed overhead for the dictionary slot and
    /// object headers.
    static func estimatedBytes(_ fitted: FittedContext) -> Int {
        3 * (fitted.canonicalJSON.utf8.count + 16) + 512
    }

    /// The fitted form of `context` when it is memoized.
    func fitted(_ context: EvaluationContext) -> FittedContext? {
        let key = Key(hash: context.hashValue, context: context)
        return shards[key.hash & (shards.count - 1)].withLock { $0.table[key]?.fitted }
    }

    /// The fitted form of `context`: memoized, or made by `fit` and memoized (nothing is kept
    /// when `fit` throws, or when the memo has no room at all).
    func fitted(
        _ context: EvaluationContext, fit: (EvaluationContext) throws(ContextError) -> FittedContext
    ) throws(ContextError) -> FittedContext {
        let key = Key(hash: context.hashValue, context: context)
        let shard = shards[key.hash & (shards.count - 1)]
        if let hit = shard.withLock({ $0.table[key]?.fitted }) { return hit }
        let fitted = try fit(context)
        let entry = Entry(fitted: fitted, bytes: Self.estimatedBytes(fitted))
        guard perCount > 0, entry.bytes <= perBytes else { return fitted }
        let evicted = shard.withLock { s -> [Key: Entry] in
            var evicted: [Key: Entry] = [:]
            while !s.table.isEmpty, s.table.count >= perCount || s.bytes + entry.bytes > perBytes {
                let (k, v) = s.table.remove(at: s.table.startIndex)
                s.bytes -= v.bytes
                evicted[k] = v
            }
            if let old = s.table.updateValue(entry, forKey: key) { s.bytes -= old.bytes }
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
                t.count += s.table.count
                t.bytes += s.bytes
            }
        }
        return t
    }
}
