/// What service mode's event stream needs to know about recent use (SPEC §14, "Service mode,
/// with a stream connected"), kept in each shard beside the entries, so a lookup records it
/// under the shard lock it already holds: no global lock on the lookup path (SPEC §12). A wave
/// collects the uses shard by shard, off the lookup path (`ServiceStreaming.wave`).
///
/// Kept only while a stream is connected; a use's bytes (the fitted context it keeps, to send
/// it again) are reserved in the cache's byte budget, so they count against `maxCacheBytes`
/// and show in `stats.cache.bytesHeld`, from when it is recorded until the wave that takes it
/// is done with it (or, for a context not in the cache, its fetch ends without an entry). A use that does not fit is not recorded: the wave's stale
/// mark still refreshes that context on its next use.
struct StreamUse: Sendable {
    var fitted: FittedContext
    var usedAt: Duration
    /// The bytes reserved for it.
    var bytes: Int
    /// The node it was recorded for (its ``ContextCache/Node/useSlot`` points back here), or
    /// -1 for a use of a context not in the cache (``ContextCache/Shard/streamMisses``).
    var node: Int32

    /// The bytes a use of `fitted` holds: the context's canonical JSON and fingerprint, the
    /// list slot.
    static func bytes(of fitted: FittedContext) -> Int {
        fitted.canonicalJSON.utf8.count + fitted.fingerprint.utf8.count + MemoryLayout<StreamUse>.stride + 16
    }
}

extension ContextCache.Shard {
    /// Records a use of node `i` (the entry of `fitted`) at `now` for the next wave. The first
    /// use since the last wave appends it to ``streamUses`` (reserved in `budget`; not recorded
    /// when the budget is full) and notes its slot in the node; later ones only move its time:
    /// no hashing beyond the lookup the request already made.
    mutating func noteStreamUse(_ i: Int32, _ fitted: FittedContext, now: Duration, budget: ContextCache.ByteBudget) {
        let slot = nodes[Int(i)].useSlot
        if slot >= 0 {
            streamUses[Int(slot)].usedAt = now
            return
        }
        let bytes = StreamUse.bytes(of: fitted)
        guard budget.reserve(bytes) else { return }
        nodes[Int(i)].useSlot = Int32(streamUses.count)
        streamUses.append(StreamUse(fitted: fitted, usedAt: now, bytes: bytes, node: i))
        streamUseBytes += bytes
    }

    /// Records a use of `fitted`, not in the cache, at `now` (at most ``maxCount`` such contexts
    /// per shard, each reserved in `budget`).
    mutating func noteStreamMiss(_ fitted: FittedContext, now: Duration, budget: ContextCache.ByteBudget) {
        if (streamMisses[fitted.fingerprint]?.usedAt = now) != nil { return }
        guard streamMisses.count < maxCount else { return }
        let bytes = StreamUse.bytes(of: fitted)
        guard budget.reserve(bytes) else { return }
        streamMisses[fitted.fingerprint] = StreamUse(fitted: fitted, usedAt: now, bytes: bytes, node: -1)
        streamUseBytes += bytes
    }

    /// A context whose use was recorded while it was not in the cache now has node `i`: the
    /// use moves to the node's slot (one record per context, not two).
    mutating func adoptStreamMiss(_ fingerprint: String, into i: Int32) {
        guard !streamMisses.isEmpty, var use = streamMisses.removeValue(forKey: fingerprint) else { return }
        use.node = i
        nodes[Int(i)].useSlot = Int32(streamUses.count)
        streamUses.append(use)
    }

    /// Takes the uses recorded since the last wave and marks them queued. Their bytes stay
    /// reserved: the wave holds their fitted contexts until it is done with each
    /// (``ServiceStreaming`` gives them back).
    mutating func takeStreamUses() -> [StreamUse] {
        guard !streamUses.isEmpty || !streamMisses.isEmpty else { return [] }
        for use in streamUses { nodes[Int(use.node)].useSlot = -1 }
        let taken = streamUses + streamMisses.values
        for use in taken { streamQueued.insert(use.fitted.fingerprint) }
        streamUses = []
        streamMisses = [:]
        streamUseBytes = 0
        return taken
    }

    /// The fetch of `fingerprint` is over: a use recorded while it was not in the cache that
    /// did not become an entry (refused, failed, not admitted) goes with its bytes (a wave has
    /// nothing to refresh for it). Kept while another fetch of it is in flight.
    mutating func settleStreamMiss(_ fingerprint: String, budget: ContextCache.ByteBudget) {
        guard !streamMisses.isEmpty, flights[fingerprint] == nil,
            let use = streamMisses.removeValue(forKey: fingerprint)
        else { return }
        streamUseBytes -= use.bytes
        budget.release(use.bytes)
    }

    /// Forgets the use recorded for node `i` (an entry leaving the cache), if any: the last use
    /// takes its slot, so the list holds only entries in the cache.
    mutating func dropStreamUse(of i: Int32, budget: ContextCache.ByteBudget) {
        let slot = Int(nodes[Int(i)].useSlot)
        guard slot >= 0 else { return }
        let bytes = streamUses[slot].bytes
        let last = streamUses.removeLast()
        if slot < streamUses.count {
            streamUses[slot] = last
            nodes[Int(last.node)].useSlot = Int32(slot)
        }
        nodes[Int(i)].useSlot = -1
        streamUseBytes -= bytes
        budget.release(bytes)
    }

    /// Forgets every use (the stream is no longer connected) and returns their bytes.
    mutating func dropStreamUses(budget: ContextCache.ByteBudget) {
        for use in streamUses { nodes[Int(use.node)].useSlot = -1 }
        streamUses = []
        streamMisses = [:]
        budget.release(streamUseBytes)
        streamUseBytes = 0
    }
}

extension ContextCache {
    /// The uses of every shard, taken for a wave (one shard lock at a time); their bytes stay
    /// reserved until ``releaseStreamBytes(_:)``.
    func takeStreamUses() -> [StreamUse] {
        var taken: [StreamUse] = []
        for shard in shards { taken += shard.withLock { $0.takeStreamUses() } }
        return taken
    }

    /// Gives back the bytes of uses a wave is done with.
    func releaseStreamBytes(_ bytes: Int) {
        if bytes > 0 { budget.release(bytes) }
    }

    /// A fetch of `fingerprint` is over (``Shard/settleStreamMiss(_:budget:)``).
    func settleStreamMiss(_ fingerprint: String) {
        shard(for: fingerprint).withLock { $0.settleStreamMiss(fingerprint, budget: budget) }
    }

    /// Forgets every shard's uses (one shard lock at a time).
    func dropStreamUses() {
        for shard in shards { shard.withLock { $0.dropStreamUses(budget: budget) } }
    }

    /// The wave is done with `fingerprint`: it may be marked stale again.
    func streamDone(_ fingerprint: String) {
        _ = shard(for: fingerprint).withLock { $0.streamQueued.remove(fingerprint) }
    }

    /// No wave holds any context any more (closed, or the token bucket was cancelled).
    func clearStreamQueued() {
        for shard in shards { shard.withLock { $0.streamQueued.removeAll() } }
    }

    /// Uses recorded now, and their bytes (stats).
    var streamUseCounts: (uses: Int, bytes: Int) {
        var uses = 0
        var bytes = 0
        for shard in shards {
            shard.withLock { s in
                uses += s.streamUses.count + s.streamMisses.count
                bytes += s.streamUseBytes
            }
        }
        return (uses, bytes)
    }
}
