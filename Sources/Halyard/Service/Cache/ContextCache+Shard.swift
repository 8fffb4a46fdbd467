import Foundation

extension ContextCache {
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
}
