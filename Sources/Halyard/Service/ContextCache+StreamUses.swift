/// What service mode's event stream needs to know about recent use (SPEC §14, "Service mode,
/// with a stream connected"), kept in each shard beside the entries, so a lookup records it
/// under the shard lock it already holds: no global lock on the lookup path (SPEC §12). A wave
/// collects the uses shard by shard, off the lookup path (`ServiceStreaming.wave`).
///
/// Kept only while a stream is connected; a use's bytes (the fitted context it keeps, to send
/// it again) are reserved in the cache's byte budget, so they count against `maxCacheBytes`
/// and show in `stats.cacheBytes`. A use that does not fit is not recorded: the wave's stale
/// mark still refreshes that context on its next use.
struct StreamUse: Sendable {
    var fitted: FittedContext
    var usedAt: Duration
    /// The bytes reserved for it.
    var bytes: Int

    /// The bytes a use of `fitted` holds: the context's canonical JSON and fingerprint, the
    /// dictionary slot.
    static func bytes(of fitted: FittedContext) -> Int {
        fitted.canonicalJSON.utf8.count + fitted.fingerprint.utf8.count + MemoryLayout<StreamUse>.stride + 64
    }
}

extension ContextCache.Shard {
    /// Records a use of `fitted` at `now` for the next wave (at most `maxCount` per shard, each
    /// reserved in `budget`; a context already recorded keeps its reservation).
    mutating func noteStreamUse(_ fitted: FittedContext, now: Duration, budget: ContextCache.ByteBudget) {
        if var use = streamUses[fitted.fingerprint] {
            use.usedAt = now
            streamUses[fitted.fingerprint] = use
            return
        }
        guard streamUses.count < maxCount else { return }
        let bytes = StreamUse.bytes(of: fitted)
        guard budget.reserve(bytes) else { return }
        streamUses[fitted.fingerprint] = StreamUse(fitted: fitted, usedAt: now, bytes: bytes)
    }

    /// Takes the uses recorded since the last wave, marks them queued, and returns their bytes
    /// to `budget`.
    mutating func takeStreamUses(budget: ContextCache.ByteBudget) -> [StreamUse] {
        guard !streamUses.isEmpty else { return [] }
        let taken = Array(streamUses.values)
        var bytes = 0
        for use in taken {
            bytes += use.bytes
            streamQueued.insert(use.fitted.fingerprint)
        }
        streamUses = [:]
        budget.release(bytes)
        return taken
    }

    /// Forgets every use (the stream is no longer connected) and returns their bytes.
    mutating func dropStreamUses(budget: ContextCache.ByteBudget) {
        budget.release(streamUses.values.reduce(0) { $0 + $1.bytes })
        streamUses = [:]
    }
}

extension ContextCache {
    /// The uses of every shard, taken for a wave (one shard lock at a time).
    func takeStreamUses() -> [StreamUse] {
        var taken: [StreamUse] = []
        for shard in shards { taken += shard.withLock { $0.takeStreamUses(budget: budget) } }
        return taken
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
                uses += s.streamUses.count
                bytes += s.streamUses.values.reduce(0) { $0 + $1.bytes }
            }
        }
        return (uses, bytes)
    }
}
