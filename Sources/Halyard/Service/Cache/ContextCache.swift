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

        /// The policy's facts of this context (``ContextPolicy/Held``), read and written as one.
        var held: ContextPolicy.Held {
            @inline(__always) get {
                ContextPolicy.Held(
                    confirmedAt: confirmedAt, retryAt: retryAt, failures: failures, sheds: sheds, probed: probed)
            }
            @inline(__always) set {
                confirmedAt = newValue.confirmedAt
                retryAt = newValue.retryAt
                failures = newValue.failures
                sheds = newValue.sheds
                probed = newValue.probed
            }
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
