import CHalyardAtomics

/// The warm path's memo: `EvaluationContext` → its ``FittedContext``, so a context seen
/// recently is not validated, serialized, sorted and hashed (SHA-1) again on every request
/// (SPEC §12, docs/service.md, "The warm path").
///
/// Keyed by a hash of the context computed in one pass, and checked with an exact comparison
/// (FittingMemo+Key.swift, FittingMemo+Matching.swift): two different contexts never share an entry, even when their
/// hashes collide (they share a table slot and are told apart byte for byte). Bounded by count
/// and by estimated bytes, split over shards (each with its own lock and its share of both
/// bounds): a million distinct users cannot grow it. A full shard evicts an arbitrary entry
/// (``Table/removeAny()``): a memo miss costs one fitting, nothing is fetched for it.
final class FittingMemo: Sendable {
    /// One memoized context: its binary form (FittingMemo+Key.swift, ContextEncoder.swift) and its fitted form.
    /// The binary form is one buffer the entry owns: first a table of the attribute records
    /// by hash (open addressing over ``slotMask`` + 1 slots, at most three quarters full; a
    /// slot is one word, ``slot(hash:start:count:)``, and an empty slot is 0, which no record
    /// is), then the bytes (the head, then the records in the probe's order). A probe finds
    /// each of its records in one or two steps, whatever order its dictionary iterates in,
    /// without an index to read first. Immutable after `init` but for ``cacheNode`` (hence
    /// `@unchecked Sendable`: the buffer is written only there and freed in `deinit`); one
    /// reference per table slot, so a lookup retains nothing but the hit.
    final class Entry: @unchecked Sendable {
        let slots: UnsafeMutablePointer<UInt64>
        /// The context cache's node last found holding this context (-1: none yet), so a hit
        /// skips hashing the fingerprint and probing the shard's index. Only a hint: read and
        /// written only under the lock of the cache shard of `fitted.fingerprint`, and trusted
        /// only when that node's key is this fingerprint (``ContextCache/Shard/find(_:linkedBy:)``).
        /// One word in the entry's buffer, after the records' table.
        let cacheNode: UnsafeMutablePointer<Int32>
        let slotMask: Int
        let key: UnsafeMutableRawPointer
        let head: Int
        /// The records held, or -1 for an entry whose bytes are too long for its table's
        /// 24-bit offsets (``maxKeyBytes``): it matches no probe and is never inserted.
        let recordCount: Int
        let privateAttributes: Set<String>
        let fitted: FittedContext
        let bytes: Int

        /// The longest binary form an entry's slots can address (16 MiB; a memo shard's byte
        /// share is at most 1 MiB at the service's settings, so no such entry is ever held).
        static let maxKeyBytes = 1 << 24

        /// The bits of a slot that hold its record's hash: the top 16 (the low ones chose
        /// the slot).
        static let hashBits: UInt64 = 0xFFFF << 48

        /// A record's slot: the top 16 bits of its hash, then its start and its length in 24
        /// bits each. 8 bytes a slot instead of a record's 16: the table of a 10-attribute
        /// context is 128 bytes, two cache lines, where a cold hit reads it.
        @inline(__always)
        static func slot(hash: UInt64, start: Int, count: Int) -> UInt64 {
            hash & hashBits | UInt64(truncatingIfNeeded: start) << 24 | UInt64(truncatingIfNeeded: count)
        }

        /// The bits of a slot that hold its record's start.
        static let startBits: UInt64 = 0xFF_FFFF << 24

        /// The start of the record in `slot`.
        @inline(__always)
        static func start(_ slot: UInt64) -> Int { Int(truncatingIfNeeded: (slot & startBits) >> 24) }

        /// The entry for a probed context: its records' table, then its bytes copied (head,
        /// then the records), in one allocation.
        init(_ probe: Probe, privateAttributes: Set<String>, fitted: FittedContext) {
            let n = probe.records.count
            let count = Self.tableCount(records: n)
            let table = count * MemoryLayout<UInt64>.stride
            let raw = UnsafeMutableRawPointer.allocate(
                byteCount: table + 8 + max(1, probe.bytes.count), alignment: 8)
            slots = raw.bindMemory(to: UInt64.self, capacity: count)
            slots.initialize(repeating: 0, count: count)
            slotMask = count - 1
            cacheNode = (raw + table).bindMemory(to: Int32.self, capacity: 1)
            cacheNode.initialize(to: -1)
            key = raw + table + 8
            let addressable = probe.bytes.count < Self.maxKeyBytes
            if let from = probe.bytes.baseAddress { key.copyMemory(from: from, byteCount: probe.head) }
            var at = probe.head
            for r in probe.records {
                if let from = probe.bytes.baseAddress {
                    (key + at).copyMemory(from: from + Int(r.start), byteCount: Int(r.count))
                }
                if addressable {
                    var slot = Int(truncatingIfNeeded: r.hash) & slotMask
                    while slots[slot] != 0 { slot = (slot + 1) & slotMask }
                    slots[slot] = Self.slot(hash: r.hash, start: at, count: Int(r.count))
                }
                at += Int(r.count)
            }
            head = probe.head
            recordCount = addressable ? n : -1
            self.privateAttributes = privateAttributes
            self.fitted = fitted
            bytes = FittingMemo.estimatedBytes(fitted, key: probe.bytes.count, slots: count)
        }

        deinit {
            UnsafeMutableRawPointer(slots).deallocate()
        }

        /// The slots of the records' table of an entry of `n` records: a power of two, at
        /// most three quarters full.
        @inline(__always)
        static func tableCount(records n: Int) -> Int {
            var count = 4
            while count &* 3 < n &* 4 { count <<= 1 }
            return count
        }

        /// The cache lines a probe asks for of the buffer of an entry of `n` records and
        /// `bytes` bytes: all of them, up to 32 (2 KiB; a larger context's comparison streams
        /// the rest).
        @inline(__always)
        static func bufferLines(records n: Int, bytes: Int) -> Int {
            min(32, (tableCount(records: n) &* 8 &+ 8 &+ bytes &+ 63) >> 6)
        }
    }

    /// One shard's entries: open addressing with linear probing, keyed by the memo's own 64-bit
    /// hash (keyed and mixed already: no second hash, unlike a `Dictionary`, whose lookup with
    /// its SipHash and modify accessor was ~1,000 instructions of a ~11,400-instruction warm
    /// request). Entries of one hash (a collision) sit in successive slots and are told apart
    /// by ``Entry/matches(_:_:)``. At most half full; grows by doubling, from 16 slots.
    struct Table {
        struct Slot {
            var hash: UInt64 = 0
            var entry: Entry?
            /// The address of the entry's buffer (its records' table, then its bytes), beside
            /// the entry so a probe asks for the buffer's lines while it waits for the entry's
            /// own. Only ever prefetched, never read through. Nonzero exactly when `entry` is
            /// set (``entry(_:_:)`` tests it to skip reading the reference).
            var buffer: UInt = 0
        }
        private(set) var slots: [Slot] = []
        private(set) var count = 0
        /// Where the next eviction starts looking (an arbitrary entry is evicted).
        private var cursor = 0

        private var mask: Int { slots.count - 1 }

        @inline(__always)
        private func home(_ hash: UInt64) -> Int { Int(truncatingIfNeeded: hash) & mask }

        /// The entry that exactly matches `probe`, if any.
        func entry(_ probe: Probe, _ privateAttributes: Set<String>) -> Entry? {
            guard count > 0 else { return nil }
            var i = home(probe.hash)
            // An occupied slot has a buffer. A cold entry's buffer lines are asked for at once
            // (a hint: never faults), before the entry is retained (an atomic write, which
            // waits for the object's line), not one dependent miss after another.
            while slots[i].buffer != 0 {
                if slots[i].hash == probe.hash {
                    // The object's first lines: its header (the reference count) and fields.
                    hal_prefetch_lines_for_write(objectAddress(i), 3)
                    hal_prefetch_lines(
                        UnsafeRawPointer(bitPattern: slots[i].buffer),
                        Entry.bufferLines(records: probe.records.count, bytes: probe.bytes.count))
                    if let entry = slots[i].entry, entry.matches(probe, privateAttributes) { return entry }
                }
                i = (i + 1) & mask
            }
            return nil
        }

        /// The address of slot `i`'s entry object, read without retaining it (an
        /// `Entry?` is one pointer, nil is 0): only ever prefetched.
        @inline(__always)
        private func objectAddress(_ i: Int) -> UnsafeRawPointer? {
            slots.withUnsafeBufferPointer { slots in
                slots.baseAddress.flatMap {
                    UnsafeRawPointer($0 + i).load(
                        fromByteOffset: MemoryLayout<Slot>.offset(of: \Slot.entry) ?? 0, as: UnsafeRawPointer?.self)
                }
            }
        }

        /// The fitted form of the entry that exactly matches `probe`, if any.
        func find(_ probe: Probe, _ privateAttributes: Set<String>) -> FittedContext? {
            entry(probe, privateAttributes)?.fitted
        }

        /// Adds `entry` under `hash` (a duplicate of an existing context is the caller's
        /// concern: it probes first).
        mutating func insert(_ entry: Entry, hash: UInt64) {
            if (count + 1) * 2 > slots.count { grow() }
            var i = home(hash)
            while slots[i].entry != nil { i = (i + 1) & mask }
            slots[i] = Slot(hash: hash, entry: entry, buffer: UInt(bitPattern: entry.slots))
            count += 1
        }

        /// Removes and returns an arbitrary entry (nil when empty).
        mutating func removeAny() -> Entry? {
            guard count > 0 else { return nil }
            var i = cursor & mask
            while slots[i].entry == nil { i = (i + 1) & mask }
            let entry = slots[i].entry
            remove(at: i)
            cursor = i + 1
            return entry
        }

        /// Empties slot `i` and shifts back the entries after it that would otherwise no longer
        /// be found from their home slot (deletion without tombstones).
        private mutating func remove(at slot: Int) {
            var hole = slot
            slots[hole] = Slot()
            count -= 1
            var j = hole
            while true {
                j = (j + 1) & mask
                guard slots[j].entry != nil else { return }
                let h = home(slots[j].hash)
                // The entry at j may fill the hole unless its home lies cyclically in (hole, j].
                let stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j)
                if stays { continue }
                slots[hole] = slots[j]
                slots[j] = Slot()
                hole = j
            }
        }

        private mutating func grow() {
            let old = slots
            slots = Array(repeating: Slot(), count: max(16, old.count * 2))
            count = 0
            for slot in old where slot.entry != nil {
                var i = home(slot.hash)
                while slots[i].entry != nil { i = (i + 1) & mask }
                slots[i] = slot
                count += 1
            }
        }
    }

    private struct Shard {
        var table = Table()
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
    /// its records' table (`slots` of 8 bytes), and a fixed overhead for the table slot, the
    /// objects' and buffers' headers.
    static func estimatedBytes(_ fitted: FittedContext, key: Int, slots: Int) -> Int {
        2 * (fitted.canonicalJSON.utf8.count + 16) + key + 8 * slots + 512
    }

    private func shard(_ hash: UInt64) -> Locked<Shard> {
        shards[Int(truncatingIfNeeded: hash >> 60) & (shards.count - 1)]
    }

    /// The fitted form of `context` when it is memoized.
    func fitted(_ context: EvaluationContext) -> FittedContext? {
        hit(context)?.fitted
    }

    /// The entry memoized for `context`, if any: the warm path's hit. The context is written
    /// into one stack buffer (its records at the end, its bytes before them) and looked up
    /// under its shard's lock, with no closure between: passed through ``withProbe(_:keys:_:)``
    /// (generic, out of line), the lookup paid a closure context, the memo's and the private
    /// names' retains and the call (~170 instructions and four atomic reference-count
    /// operations a hit, measured). A context too large for the stack buffer is written again
    /// on the heap, at the size the first pass counted.
    func hit(_ context: EvaluationContext) -> Entry? {
        let recordBytes = max(1, context.attributes.count) &* MemoryLayout<Record>.stride
        var (found, needed) = withUnsafeTemporaryAllocation(byteCount: 1024, alignment: 8) {
            lookup(context, in: $0, recordBytes: recordBytes)
        }
        while needed > 0 {
            let heap = UnsafeMutableRawBufferPointer.allocate(byteCount: needed, alignment: 8)
            defer { heap.deallocate() }
            (found, needed) = lookup(context, in: heap, recordBytes: recordBytes)
        }
        return found
    }

    /// ``hit(_:)`` with the context written into `raw` (its records in the last `recordBytes`):
    /// the entry found (or nil) and 0, or, when `raw` is too small, nil and the bytes needed
    /// (exact once the records fit: the encoder counts past its end).
    @inline(__always)
    private func lookup(_ context: EvaluationContext, in raw: UnsafeMutableRawBufferPointer, recordBytes: Int)
        -> (Entry?, needed: Int)
    {
        guard recordBytes <= raw.count, let base = raw.baseAddress else { return (nil, recordBytes &+ 1024) }
        let n = context.attributes.count
        let records = UnsafeMutableBufferPointer(
            start: (base + (raw.count &- recordBytes)).bindMemory(to: Record.self, capacity: max(1, n)), count: n)
        var encoder = ContextEncoder(base: base, capacity: raw.count &- recordBytes, keys: keys)
        let (head, hash) = Self.encode(context, &encoder, records, keys: keys)
        if encoder.overflowed { return (nil, encoder.count &+ recordBytes) }
        let probe = Probe(
            bytes: UnsafeRawBufferPointer(start: base, count: encoder.count), head: head,
            records: UnsafeBufferPointer(records), hash: hash)
        return (shard(hash).withLock { $0.table.entry(probe, context.privateAttributes) }, 0)
    }

    /// The fitted form of `context`: memoized, or made by `fit` and memoized (nothing is kept
    /// when `fit` throws, or when the memo has no room at all).
    func fitted(
        _ context: EvaluationContext, fit: (EvaluationContext) throws(ContextError) -> FittedContext
    ) throws(ContextError) -> FittedContext {
        try entry(context, fit: fit).fitted
    }

    /// The entry holding `context`'s fitted form (memoized, or made by `fit` and memoized when
    /// there is room). The warm path reads `entry.fitted` in place: one reference retained
    /// instead of copying the `FittedContext` out (five reference-counted fields).
    ///
    /// A hit is ``hit(_:)``: one pass over the context and one lock, no closure holding the
    /// context (one that captured it, to fit it on a miss, made the optimizer copy its four
    /// fields in and out, ~725 instructions a warm request, measured). A miss fits the
    /// context, then writes it out again to build the entry (~3,000 instructions beside the
    /// fitting's ~40,000).
    func entry(
        _ context: EvaluationContext, fit: (EvaluationContext) throws(ContextError) -> FittedContext
    ) throws(ContextError) -> Entry {
        if let hit = hit(context) { return hit }
        let privateAttributes = context.privateAttributes
        let fitted = try fit(context)
        let (entry, evicted) = Self.withProbe(context, keys: keys) { probe -> (Entry, [Entry]) in
            let entry = Entry(probe, privateAttributes: privateAttributes, fitted: fitted)
            guard perCount > 0, entry.bytes <= perBytes, entry.recordCount >= 0 else { return (entry, []) }
            return shard(probe.hash).withLock { s -> (Entry, [Entry]) in
                // Another request that missed the same context meanwhile inserted it first:
                // one entry per context (its fitted form is the same), the later one is dropped.
                if let first = s.table.entry(probe, privateAttributes) { return (first, []) }
                var evicted: [Entry] = []
                while s.table.count >= perCount || s.bytes + entry.bytes > perBytes, let victim = s.table.removeAny() {
                    s.bytes -= victim.bytes
                    evicted.append(victim)
                }
                s.table.insert(entry, hash: probe.hash)
                s.bytes += entry.bytes
                return (entry, evicted)
            }
        }
        _ = evicted  // released here, outside the lock
        return entry
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
