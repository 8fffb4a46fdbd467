import CHalyardAtomics
import Foundation

/// The service's context cache: fingerprint → immutable snapshot, bounded by count and by
/// estimated bytes, least recently used evicted first (docs/service.md, "The cache").
///
/// **No global lock.** The cache is split into shards (a power of two, up to 64) chosen by the
/// fingerprint's leading hex digits — SHA-1 output, so uniformly spread (fewer shards when the
/// bounds are small: each keeps at least 2 entries and 64 KiB). Each shard has its own
/// lock, its own LRU list and its own share of the count bound (`maxContexts / shards`); the
/// byte bound is one atomic reservation for the whole cache (``ByteBudget``), so one context
/// larger than `maxBytes / shards` is still held (others are evicted to make room: its shard's
/// first, then other shards' one lock at a time) and the total never exceeds the bound. Two
/// requests contend only when their contexts fall in the same shard. A hit holds the shard lock for a dictionary
/// probe, a relink to the list head and a retain of the snapshot; everything slower — building
/// snapshots, releasing evicted ones — happens outside it.
///
/// **Safe eviction.** An entry holds a strong reference to its snapshot, and so does every
/// ``ContextFlags`` view made from it. Evicting or replacing an entry drops only the cache's
/// reference; a snapshot is freed when the last view holding it is gone (ARC), never under a
/// reader. Evicted snapshots are released after the shard lock is dropped.
///
/// Each shard also holds the single-flight table of its contexts (fingerprint → ``ContextFlight``),
/// so "is it cached, is it being fetched, join or start the fetch" is one decision under one lock.
final class ContextCache: Sendable {
    /// One cached context (an LRU node): always values (a context with none has a
    /// ``FailureRecord`` instead).
    struct Node {
        var key: String
        /// The values held (nil only in a free slot).
        var snapshot: Snapshot?
        /// Whether the one probe before expiry was sent (docs/service.md, "Recovery").
        var probed: Bool = false
        /// Refreshes shed in a row (their retry time grows with it).
        var sheds: UInt8 = 0
        /// When the values were last confirmed by the control plane (monotonic).
        var confirmedAt: Duration
        /// No fetch for this context before this time (per-context backoff, invalid contexts).
        var retryAt: Duration
        /// Consecutive failed fetches for this context.
        var failures: Int
        /// Estimated bytes held (snapshot plus the entry's own overhead).
        var bytes: Int
        var prev: Int32
        var next: Int32
        /// Its place in the shard's ``Shard/streamUses`` when it was used since the last stream
        /// wave, else -1 (`ContextCache+StreamUses.swift`).
        var useSlot: Int32 = -1
    }

    /// One shard: an index, an array of nodes with a free list, and a doubly-linked LRU list.
    struct Shard {
        var index: [String: Int32] = [:]
        var nodes: [Node] = []
        var free: [Int32] = []
        /// Most recently used.
        var head: Int32 = -1
        /// Least recently used.
        var tail: Int32 = -1
        var count = 0
        var bytes = 0
        var hits = 0
        var misses = 0
        var evictions = 0
        var flights: [String: ContextFlight] = [:]
        /// Inserts refused by the admission filter.
        var rejections = 0
        let maxCount: Int
        /// Contexts without values that failed (400, 403, a failed cold fetch): their code
        /// and backoff, apart from the entries (docs/service.md, "Failure records").
        var failureRecords: [String: FailureRecord] = [:]
        /// The most failure records held.
        let maxFailureRecords: Int
        /// Failure records dropped to make room for others.
        var failureEvictions = 0
        /// The frequency sketch of the admission filter (nil: plain LRU).
        var sketch: FrequencySketch?
        /// Entries used since the last stream wave, each once (its node's ``Node/useSlot``),
        /// kept only while a stream is connected (`ContextCache+StreamUses.swift`); their bytes
        /// are reserved in the byte budget and counted in ``streamUseBytes``.
        var streamUses: [StreamUse] = []
        /// Contexts used since the last wave while not in the cache (cold), by fingerprint: at
        /// most ``maxCount``; a wave takes them with ``streamUses``.
        var streamMisses: [String: StreamUse] = [:]
        /// The bytes reserved for ``streamUses`` and ``streamMisses``.
        var streamUseBytes = 0
        /// Fingerprints a wave has queued or is refreshing: not marked stale meanwhile.
        var streamQueued: Set<String> = []

        init(maxCount: Int, admission: Bool, maxFailureRecords: Int = 64) {
            self.maxCount = maxCount
            self.maxFailureRecords = max(1, maxFailureRecords)
            // Sized for a few entries and grown with the entries held (``FrequencySketch``),
            // never from `maxCount`, which may be `Int.max`.
            sketch = admission ? FrequencySketch(entries: min(maxCount, FrequencySketch.initialEntries)) : nil
        }

        /// Records a failure of a context without values, replacing its earlier record. When
        /// the table is full, the record whose retry time comes first goes (it is the least
        /// useful: its context may be fetched soonest anyway); no entry is ever evicted.
        mutating func recordFailure(_ key: String, _ record: FailureRecord) {
            if failureRecords[key] == nil, failureRecords.count >= maxFailureRecords,
                let first = failureRecords.min(by: { $0.value.retryAt < $1.value.retryAt })?.key
            {
                failureRecords.removeValue(forKey: first)
                failureEvictions += 1
            }
            failureRecords[key] = record
        }

        /// Removes the entry for `key` (its values are dropped: a 400 or 403 for a context
        /// whose values expired or were refused) and returns its bytes to `budget`.
        mutating func drop(_ key: String, budget: ByteBudget) -> Snapshot? {
            guard let i = index[key] else { return nil }
            budget.release(nodes[Int(i)].bytes)
            return remove(i, budget: budget)
        }

        /// Counts a request for `key` in the admission filter's sketch (nothing without one).
        mutating func recordAccess(_ key: String) {
            sketch?.increment(key)
        }

        func find(_ key: String) -> Int32? { index[key] }

        /// ``find(_:)`` through a link a caller keeps for `key` (a fitting-memo entry's
        /// ``FittingMemo/Entry/cacheNode``, read and written only under this shard's lock): the
        /// linked node when it holds `key` now, else the index's answer, which then becomes the
        /// link. A node holds one key at a time and every held key's node is its index entry,
        /// so a node whose key is `key` is the one the index would give; a stale link (the
        /// entry evicted, replaced by another context, or never held) fails that comparison
        /// and costs the probe it saved. Saves hashing the 40-character fingerprint and the
        /// probe (~690 instructions a hit, measured) for one string comparison.
        func find(_ key: String, linkedBy link: UnsafeMutablePointer<Int32>) -> Int32? {
            let i = link.pointee
            if i >= 0, Int(i) < nodes.count, nodes[Int(i)].key == key { return i }
            guard let found = index[key] else { return nil }
            link.pointee = found
            return found
        }

        /// Moves node `i` to the head (most recently used).
        mutating func touch(_ i: Int32) {
            guard head != i else { return }
            unlink(i)
            pushFront(i)
        }

        private mutating func unlink(_ i: Int32) {
            let prev = nodes[Int(i)].prev
            let next = nodes[Int(i)].next
            if prev >= 0 { nodes[Int(prev)].next = next } else { head = next }
            if next >= 0 { nodes[Int(next)].prev = prev } else { tail = prev }
            nodes[Int(i)].prev = -1
            nodes[Int(i)].next = -1
        }

        private mutating func pushFront(_ i: Int32) {
            nodes[Int(i)].prev = -1
            nodes[Int(i)].next = head
            if head >= 0 { nodes[Int(head)].prev = i }
            head = i
            if tail < 0 { tail = i }
        }

        /// Removes node `i` and returns its snapshot (to be released outside the lock). A use
        /// the stream recorded for it leaves with it (its bytes back to `budget`): the context
        /// is not held any more, so there is nothing to refresh, and the node may be reused.
        mutating func remove(_ i: Int32, budget: ByteBudget) -> Snapshot? {
            dropStreamUse(of: i, budget: budget)
            unlink(i)
            let node = nodes[Int(i)]
            index.removeValue(forKey: node.key)
            nodes[Int(i)].snapshot = nil
            nodes[Int(i)].key = ""
            free.append(i)
            count -= 1
            bytes -= node.bytes
            return node.snapshot
        }

        /// What ``upsert(_:budget:)`` did.
        struct Upsert {
            /// Snapshots dropped (to release outside the lock).
            var dropped: [Snapshot] = []
            /// Whether the entry is held now.
            var stored = false
            /// Bytes the entry still needs when this shard could not free them alone (the
            /// caller frees them from other shards, outside this lock, and tries again).
            var needsRoom = 0
            var evicted = 0
        }

        /// Removes the least recently used entry other than `key`; false when there is none.
        private mutating func evictTail(sparing key: String, budget: ByteBudget, into result: inout Upsert) -> Bool {
            var victim = tail
            while victim >= 0, nodes[Int(victim)].key == key { victim = nodes[Int(victim)].prev }
            guard victim >= 0 else { return false }
            budget.release(nodes[Int(victim)].bytes)
            if let snapshot = remove(victim, budget: budget) { result.dropped.append(snapshot) }
            result.evicted += 1
            evictions += 1
            return true
        }

        /// Inserts or replaces the entry for `node.key` and makes it the most recent. The count
        /// bound is this shard's share; the byte bound is the whole cache's (`budget`, a
        /// reservation: the total never exceeds it), freed from this shard's least recently
        /// used entries first. An entry this shard cannot make room for alone returns
        /// ``Upsert/needsRoom`` (held: nothing changed).
        mutating func upsert(_ node: Node, budget: ByteBudget) -> Upsert {
            var result = Upsert()
            let existing = index[node.key]
            if existing == nil {
                sketch?.reserve(entries: count + 1)
                // Admission: when the insert would evict, the newcomer must have been asked for
                // more often (recently) than the entry it would push out.
                if let sketch, count >= maxCount, tail >= 0,
                    sketch.frequency(node.key) <= sketch.frequency(nodes[Int(tail)].key)
                {
                    rejections += 1
                    return result
                }
                while count >= maxCount, evictTail(sparing: node.key, budget: budget, into: &result) {}
            }
            let need = node.bytes - (existing.map { nodes[Int($0)].bytes } ?? 0)
            if need > 0 {
                while !budget.reserve(need) {
                    guard evictTail(sparing: node.key, budget: budget, into: &result) else {
                        result.needsRoom = need
                        return result
                    }
                }
            } else if need < 0 {
                budget.release(-need)
            }
            result.stored = true
            if let i = index[node.key] {
                if let old = nodes[Int(i)].snapshot, old !== node.snapshot { result.dropped.append(old) }
                bytes += node.bytes - nodes[Int(i)].bytes
                let (prev, next, useSlot) = (nodes[Int(i)].prev, nodes[Int(i)].next, nodes[Int(i)].useSlot)
                nodes[Int(i)] = node
                nodes[Int(i)].prev = prev
                nodes[Int(i)].next = next
                nodes[Int(i)].useSlot = useSlot
                touch(i)
                return result
            }
            let i: Int32
            if let reused = free.popLast() {
                i = reused
                nodes[Int(i)] = node
                nodes[Int(i)].useSlot = -1
            } else {
                i = Int32(nodes.count)
                nodes.append(node)
                nodes[Int(i)].useSlot = -1
            }
            index[node.key] = i
            count += 1
            bytes += node.bytes
            pushFront(i)
            adoptStreamMiss(node.key, into: i)
            return result
        }

        /// Evicts the least recently used entry (for another shard's oversized entry).
        mutating func evictOne(budget: ByteBudget) -> Upsert {
            var result = Upsert()
            _ = evictTail(sparing: "", budget: budget, into: &result)
            return result
        }
    }

    /// The whole cache's byte bound as an atomic reservation: bytes are reserved before an
    /// entry is stored (a reservation that would pass the bound fails), released when one
    /// leaves, so the total held never exceeds `limit`, however entries spread over shards.
    struct ByteBudget: @unchecked Sendable {
        let gauges: UnsafeMutablePointer<hal_atomic_word>
        let limit: Int

        /// Reserves `n` bytes; false (nothing reserved) when the total would pass the bound.
        func reserve(_ n: Int) -> Bool {
            var current = hal_load_relaxed(gauges)
            while true {
                let next = Int(bitPattern: current) + n
                if next > limit { return false }
                if hal_compare_exchange(gauges, &current, UInt(bitPattern: next)) { break }
            }
            let now = Int(bitPattern: current) + n
            var peak = hal_load_relaxed(gauges + 1)
            while now > Int(bitPattern: peak) {
                if hal_compare_exchange(gauges + 1, &peak, UInt(bitPattern: now)) { break }
            }
            return true
        }

        /// Returns `n` bytes.
        func release(_ n: Int) {
            guard n != 0 else { return }
            _ = hal_fetch_add(gauges, UInt(bitPattern: -n))
        }

        /// Bytes free now.
        var free: Int { limit - Int(bitPattern: hal_load_relaxed(gauges)) }
    }

    let shards: [Locked<Shard>]
    private let mask: Int
    /// [bytes held now, peak bytes held], updated when entries change (never on a hit).
    private nonisolated(unsafe) let gauges = UnsafeMutablePointer<hal_atomic_word>.allocate(capacity: 2)
    /// The fixed per-entry overhead counted beside the snapshot: the node, its index slot and
    /// the fingerprint key (a 40-byte string on the heap).
    static let entryOverhead = MemoryLayout<Node>.stride + 32 + Snapshot.block(32 + 41)

    /// The smallest byte share a shard gets (fewer shards are used for small bounds).
    static let minShardBytes = 64 << 10

    /// The most failure records the whole cache holds (docs/service.md, "Failure records").
    static let maxFailureRecords = 4_096

    init(maxContexts: Int, maxBytes: Int, admission: Bool = false) {
        // Up to 64 shards, each with at least 2 entries and 64 KiB of the bounds, so one
        // context's values (a few KiB for 64 flags) always fit in its shard's share.
        var count = 1
        while count < 64 && count * 2 * 2 <= maxContexts && count * 2 * Self.minShardBytes <= maxBytes { count *= 2 }
        mask = count - 1
        let perCount = max(1, maxContexts / count)
        // Not sized from maxContexts: a small cache's contexts fail as often as a large one's.
        let perFailures = Self.maxFailureRecords / count
        shards = (0..<count).map { _ in
            Locked(Shard(maxCount: perCount, admission: admission, maxFailureRecords: perFailures))
        }
        gauges.initialize(repeating: hal_atomic_word(value: 0), count: 2)
        budget = ByteBudget(gauges: gauges, limit: maxBytes)
    }

    /// The byte bound of the whole cache.
    let budget: ByteBudget

    /// The shard index of a fingerprint.
    @inline(__always)
    func shardIndex(for fingerprint: String) -> Int {
        var value = 0
        var utf8 = fingerprint.utf8.makeIterator()
        for _ in 0..<4 {
            guard let c = utf8.next() else { break }
            value = value << 4 | Int(c <= 57 ? c &- 48 : (c | 0x20) &- 87) & 0xF
        }
        return value & mask
    }

    /// Stores `node` in shard `home` after freeing `needed` bytes from the other shards'
    /// least recently used entries (one shard lock at a time, never two). Returns the
    /// snapshots dropped (release them outside any lock) and whether the entry is held. An
    /// entry larger than the whole bound is not held.
    func storeMakingRoom(_ node: Node, home: Int, needed: Int) -> (dropped: [Snapshot], stored: Bool) {
        var dropped: [Snapshot] = []
        guard node.bytes <= budget.limit else { return (dropped, false) }
        var need = needed
        for _ in 0..<3 {
            var idle = 0
            var j = (home + 1) & mask
            while budget.free < need, idle < shards.count {
                let freed = shards[j].withLock { $0.evictOne(budget: budget) }
                dropped += freed.dropped
                idle = freed.evicted == 0 ? idle + 1 : 0
                j = (j + 1) & mask
            }
            let result = shards[home].withLock { s -> Shard.Upsert in
                // A newer answer for the same context stored meanwhile wins.
                if let i = s.find(node.key), s.nodes[Int(i)].confirmedAt > node.confirmedAt { return Shard.Upsert() }
                return s.upsert(node, budget: budget)
            }
            dropped += result.dropped
            if result.needsRoom == 0 { return (dropped, result.stored) }
            need = result.needsRoom
        }
        return (dropped, false)
    }

    deinit { gauges.deallocate() }

    /// The shard of a fingerprint: its first hex digits (uniform: SHA-1 output).
    @inline(__always)
    func shard(for fingerprint: String) -> Locked<Shard> {
        shards[shardIndex(for: fingerprint)]
    }

    /// Bytes held now (estimated, docs/service.md).
    var bytesHeld: Int { Int(bitPattern: hal_load_relaxed(gauges)) }
    /// The most bytes held at once since the cache was created.
    var peakBytesHeld: Int { Int(bitPattern: hal_load_relaxed(gauges + 1)) }

    /// The shard counters summed (one lock at a time; never all at once).
    func totals() -> (
        count: Int, bytes: Int, hits: Int, misses: Int, evictions: Int, flights: Int, rejections: Int, failures: Int,
        failureEvictions: Int
    ) {
        var t = (
            count: 0, bytes: 0, hits: 0, misses: 0, evictions: 0, flights: 0, rejections: 0, failures: 0,
            failureEvictions: 0
        )
        for shard in shards {
            shard.withLock { s in
                t.count += s.count
                t.bytes += s.bytes
                t.hits += s.hits
                t.misses += s.misses
                t.evictions += s.evictions
                t.flights += s.flights.count
                t.rejections += s.rejections
                t.failures += s.failureRecords.count
                t.failureEvictions += s.failureEvictions
            }
        }
        return t
    }
}

/// A count-min sketch of recent requests, for the admission filter (TinyLFU): four rows of
/// 4-bit-saturating counters (kept in bytes), about 8 counters per entry, halved every
/// `10 × entries` increments so old popularity fades.
///
/// Sized for the entries its shard holds, not for the shard's bound (which may be `Int.max`):
/// it starts at ``initialEntries`` and doubles (``reserve(entries:)``) as the shard fills, so
/// it takes 32-64 bytes per entry held (at most ``maxWidth`` counters a row: 16 MiB).
struct FrequencySketch {
    /// The entries a new sketch is sized for.
    static let initialEntries = 64
    /// The widest row (counters).
    static let maxWidth = 1 << 22
    private var counters: [UInt8]
    private var mask: Int
    private var additions = 0
    private var resetAfter: Int

    init(entries: Int) {
        let width = Self.width(for: entries)
        counters = [UInt8](repeating: 0, count: width * 4)
        mask = width - 1
        resetAfter = width / 8 * 10
    }

    /// Counters a row (a power of two, at least 64, at most ``maxWidth``).
    var width: Int { mask + 1 }

    private static func width(for entries: Int) -> Int {
        let wanted = entries > maxWidth / 8 ? maxWidth : max(entries, 0) * 8
        var width = 64
        while width < wanted { width *= 2 }
        return width
    }

    /// Widens the rows to about 8 counters per entry for `entries`. Each counter is copied to
    /// both halves of its doubled row (a slot's index keeps its low bits), so every estimate
    /// stays what it was.
    mutating func reserve(entries: Int) {
        let wanted = Self.width(for: entries)
        guard wanted > width else { return }
        let old = counters
        let oldWidth = width
        counters = [UInt8](repeating: 0, count: wanted * 4)
        for row in 0..<4 {
            for j in 0..<wanted { counters[row * wanted + j] = old[row * oldWidth + (j & (oldWidth - 1))] }
        }
        mask = wanted - 1
        resetAfter = wanted / 8 * 10
    }

    /// 64 bits of the fingerprint beyond the shard digits (hex: uniform).
    private static func hash(_ key: String) -> UInt64 {
        var value: UInt64 = 0
        var index = 0
        for c in key.utf8 {
            if index >= 4 && index < 20 {
                value = value << 4 | UInt64((c <= 57 ? c &- 48 : (c | 0x20) &- 87) & 0xF)
            }
            index += 1
        }
        return value
    }

    private func slot(_ hash: UInt64, _ row: Int) -> Int {
        let mixed = (hash &+ UInt64(row) &* 0x9E37_79B9_7F4A_7C15) &* 0xBF58_476D_1CE4_E5B9
        return row * (mask + 1) + Int(truncatingIfNeeded: mixed >> 32) & mask
    }

    mutating func increment(_ key: String) {
        let h = Self.hash(key)
        for row in 0..<4 {
            let i = slot(h, row)
            if counters[i] < 15 { counters[i] += 1 }
        }
        additions += 1
        if additions >= resetAfter {
            for i in counters.indices { counters[i] >>= 1 }
            additions /= 2
        }
    }

    func frequency(_ key: String) -> UInt8 {
        let h = Self.hash(key)
        var least: UInt8 = 15
        for row in 0..<4 { least = min(least, counters[slot(h, row)]) }
        return least
    }
}

/// A context without values that failed (400, 403, a failed cold fetch): why it serves
/// defaults and when it may be fetched again. Kept in its shard's own small table, apart from
/// the entries: it never evicts a servable entry, takes no room in `maxContexts` or
/// `maxCacheBytes`, and no admission policy refuses it (docs/service.md, "Failure records").
struct FailureRecord: Sendable, Hashable {
    /// What the context is served meanwhile.
    var code: FlagErrorCode
    /// No fetch for this context before this time (monotonic).
    var retryAt: Duration
    /// Consecutive failed fetches (its backoff step).
    var failures: Int
}
