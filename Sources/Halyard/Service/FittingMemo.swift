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
    /// One memoized context: its binary form (FittingMemo+Key.swift) in one buffer it owns —
    /// the head, then the attribute records sorted by hash — and its fitted form. Immutable
    /// after `init` (hence `@unchecked Sendable`: the pointers are written only there and freed
    /// in `deinit`); one reference per table slot, so a lookup retains nothing but the hit.
    final class Entry: @unchecked Sendable {
        let key: UnsafeMutableRawPointer
        let head: Int
        let records: UnsafeMutablePointer<Record>
        let recordCount: Int
        let privateAttributes: Set<String>
        let fitted: FittedContext
        let bytes: Int

        /// The entry for a probed context: its bytes copied, the records sorted by hash.
        init(_ probe: Probe, privateAttributes: Set<String>, fitted: FittedContext) {
            let n = probe.records.count
            key = UnsafeMutableRawPointer.allocate(byteCount: max(1, probe.bytes.count), alignment: 8)
            records = UnsafeMutablePointer<Record>.allocate(capacity: max(1, n))
            var sorted = Array(probe.records)
            sorted.sort { $0.hash < $1.hash }
            if let from = probe.bytes.baseAddress { key.copyMemory(from: from, byteCount: probe.head) }
            var at = probe.head
            for (i, r) in sorted.enumerated() {
                if let from = probe.bytes.baseAddress {
                    (key + at).copyMemory(from: from + Int(r.start), byteCount: Int(r.count))
                }
                records[i] = Record(hash: r.hash, start: Int32(at), count: r.count)
                at += Int(r.count)
            }
            head = probe.head
            recordCount = n
            self.privateAttributes = privateAttributes
            self.fitted = fitted
            bytes = FittingMemo.estimatedBytes(fitted, key: probe.bytes.count, records: n)
        }

        deinit {
            key.deallocate()
            records.deallocate()
        }
    }

    /// The entries of one hash: nearly always one (``more`` is empty, no allocation).
    private struct Slot {
        var first: Entry
        var more: [Entry] = []

        /// `mutating` (it changes nothing) so that `table[hash]?.find(...)` lends the slot in
        /// place through the dictionary's modify accessor: its getter would copy the slot.
        mutating func find(_ probe: Probe, _ privateAttributes: Set<String>) -> FittedContext? {
            if first.matches(probe, privateAttributes) { return first.fitted }
            for e in more where e.matches(probe, privateAttributes) { return e.fitted }
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
    /// fingerprint, and its members, about the JSON's size again), the key's binary form and
    /// records, and a fixed overhead for the table slot, the arrays' and objects' headers.
    static func estimatedBytes(_ fitted: FittedContext, key: Int, records: Int) -> Int {
        2 * (fitted.canonicalJSON.utf8.count + 16) + key + 16 * records + 512
    }

    private func shard(_ hash: UInt64) -> Locked<Shard> {
        shards[Int(truncatingIfNeeded: hash >> 60) & (shards.count - 1)]
    }

    /// The fitted form of `context` when it is memoized.
    func fitted(_ context: EvaluationContext) -> FittedContext? {
        Self.withProbe(context, keys: keys) { probe in
            shard(probe.hash).withLock { $0.table[probe.hash]?.find(probe, context.privateAttributes) }
        }
    }

    /// The fitted form of `context`: memoized, or made by `fit` and memoized (nothing is kept
    /// when `fit` throws, or when the memo has no room at all).
    func fitted(
        _ context: EvaluationContext, fit: (EvaluationContext) throws(ContextError) -> FittedContext
    ) throws(ContextError) -> FittedContext {
        enum Found {
            case hit(FittedContext)
            case miss(UInt64, Result<Entry, ContextError>)
        }
        // A miss fits inside the probe (its bytes become the entry's key); nothing else runs there.
        let found = Self.withProbe(context, keys: keys) { probe -> Found in
            if let hit = shard(probe.hash).withLock({ $0.table[probe.hash]?.find(probe, context.privateAttributes) }) {
                return .hit(hit)
            }
            do throws(ContextError) {
                let fitted = try fit(context)
                return .miss(
                    probe.hash, .success(Entry(probe, privateAttributes: context.privateAttributes, fitted: fitted)))
            } catch {
                return .miss(probe.hash, .failure(error))
            }
        }
        let hash: UInt64
        let entry: Entry
        switch found {
        case .hit(let fitted): return fitted
        case .miss(_, .failure(let error)): throw error
        case .miss(let h, .success(let e)):
            hash = h
            entry = e
        }
        guard perCount > 0, entry.bytes <= perBytes else { return entry.fitted }
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
        return entry.fitted
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
