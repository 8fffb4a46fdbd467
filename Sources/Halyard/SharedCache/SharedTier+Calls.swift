import Foundation

/// The calls a fetch makes through a ``SharedTier``: look up an entry, poll another pod's
/// lease, take and give back a lease, write an entry back; and the counters they keep.
extension SharedTier {
    /// The entry of `fingerprint`, when there is a usable one (under `keys`, *default* the
    /// current ones).
    func lookup(_ fingerprint: String, keys: Keys? = nil) async -> Lookup {
        let keys = keys ?? state.withLock { $0.keys }
        let id = keys.id(fingerprint)
        let replies = await call([.get(keys.entryKey(id))], writes: false)
        guard let replies else { return .unavailable }
        return decode(replies.first, keys: keys, id: id)
    }

    /// Whether `fingerprint`'s lease is still held and, only once it is not, its entry (one
    /// round trip, a script): what a pod waiting for another's fetch looks at. The entry is
    /// not read while the lease is held, so a waiter does not download a stale entry at every
    /// poll.
    func poll(_ fingerprint: String, keys: Keys? = nil) async -> (Lookup, leaseHeld: Bool) {
        let keys = keys ?? state.withLock { $0.keys }
        let id = keys.id(fingerprint)
        let command = RedisCommand.eval(
            Self.pollScript, keys: [keys.leaseKey(id), keys.entryKey(id)], arguments: [])
        let replies = await call([command], writes: false)
        guard let reply = replies?.first else { return (.unavailable, false) }
        if case .integer = reply { return (.none, true) }
        return (decode(reply, keys: keys, id: id, counting: false), false)
    }

    /// Takes `fingerprint`'s lease (`SET … NX PX`) with a random token, and reads the entry in
    /// the same round trip: another pod may have written it and released its lease since this
    /// pod looked (then the lease just taken is given back and the entry used). The token is
    /// recorded before it is sent: should the call fail after Redis ran the `SET`, the lease is
    /// released by its token later (``close()``, or after the next call that succeeds).
    func acquireLease(_ fingerprint: String, keys: Keys? = nil) async -> Lease {
        let keys = keys ?? state.withLock { $0.keys }
        let id = keys.id(fingerprint)
        var generator = SystemRandomNumberGenerator()
        let token = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let leaseKey = keys.leaseKey(id)
        let lapsesAt = clock.monotonicNow + leaseDuration
        let recorded = state.withLock { s -> (ok: Bool, stale: [UInt8]?) in
            if s.closed { return (false, nil) }
            // This pod's own earlier lease of the context, whose call failed: released first,
            // or this pod would wait on it.
            let stale = s.leases[leaseKey].flatMap { $0.unsettled ? $0.token : nil }
            s.leases[leaseKey] = HeldLease(token: token, unsettled: false, lapsesAt: lapsesAt)
            return (true, stale)
        }
        guard recorded.ok else { return .unavailable }
        let commands: [RedisCommand] =
            (recorded.stale.map { [.compareAndDelete(leaseKey, token: $0)] } ?? []) + [
                .set(leaseKey, token, expiry: leaseDuration, onlyIfAbsent: true), .get(keys.entryKey(id)),
            ]
        let answered = await call(commands, writes: true)
        let replies = answered.map { Array($0.suffix(2)) }
        guard let replies, replies.count == 2 else {
            // The `SET NX` may have run: released by its token after the next success.
            state.withLock { s in
                if s.leases[leaseKey]?.token == token { s.leases[leaseKey]?.unsettled = true }
            }
            return .unavailable
        }
        let entry: SharedEntry?
        if case .entry(let e) = decode(replies[1], keys: keys, id: id, counting: false) {
            entry = e
        } else {
            entry = nil
        }
        switch replies[0] {
        case .simple("OK"):
            state.withLock { $0.stats.leasesTaken += 1 }
            return .acquired(token: token, entry: entry)
        case .bulk(nil):
            forget(leaseKey, token: token)
            return .held
        default:
            state.withLock { $0.stats.errors += 1 }
            forget(leaseKey, token: token)
            return .unavailable
        }
    }

    /// Gives back the lease `token` of `fingerprint` (taken under `keys`), without writing.
    func releaseLease(_ token: [UInt8], for fingerprint: String, keys: Keys) async {
        await store(nil, for: fingerprint, releasing: token, leaseKeys: keys)
    }

    /// Writes `entry` for `fingerprint` (unless it is over the entry limit) and releases the
    /// lease `token` when given, in one round trip. The entry is written only when
    /// `generation` (the key generation its request was sent with; nil: the current one) is
    /// still the current one, under that key's names and MAC, never under a newer key's
    /// (SPEC §15). The lease is released under `leaseKeys` (those it was taken with; *default*
    /// the current ones).
    ///
    /// The write is ordered (``orderedSetScript``): Redis keeps the entry it holds when that
    /// one is newer (a later sent-time stamp, or the same stamp and fetched for a named
    /// flag-set version when this one was not), and refuses a stamp more than
    /// ``maxStampLead`` ahead of its own clock; both are counted in
    /// ``SharedCacheStats/writesRefused``.
    func store(
        _ entry: SharedEntry?, for fingerprint: String, sentWith generation: UInt64? = nil,
        releasing token: [UInt8]?, leaseKeys: Keys? = nil
    ) async {
        let (current, currentGeneration) = state.withLock { ($0.keys, $0.generation) }
        let entry = generation == nil || generation == currentGeneration ? entry : nil
        let keys = current
        let id = keys.id(fingerprint)
        var commands: [RedisCommand] = []
        if let entry {
            let bytes = entry.encoded(namespace: keys.namespace, id: id, secret: keys.secret)
            if bytes.count <= maxEntryBytes {
                let age = Duration.milliseconds(max(0, Self.milliseconds(clock.wallNow) - entry.confirmedAt))
                if age < entryLifetime {
                    commands.append(
                        Self.orderedSet(keys.entryKey(id), bytes, entry: entry, expiry: entryLifetime - age))
                }
            } else {
                state.withLock { $0.stats.oversizedEntries += 1 }
            }
        }
        let writes = commands.count
        var leaseKey: [UInt8]?
        if let token {
            let leaseKeys = leaseKeys ?? keys
            let key = leaseKeys.leaseKey(leaseKeys.id(fingerprint))
            leaseKey = key
            commands.append(.compareAndDelete(key, token: token))
        }
        guard !commands.isEmpty else { return }
        let pipeline = commands
        let replies = await call(pipeline, writes: true)
        guard let replies else {
            // Not released: Redis may still hold it. Released by token after the next success.
            if let leaseKey, let token {
                state.withLock { s in
                    if s.leases[leaseKey]?.token == token { s.leases[leaseKey]?.unsettled = true }
                }
            }
            return
        }
        if let leaseKey, let token {
            forget(leaseKey, token: token)
            state.withLock { $0.stats.leasesReleased += 1 }
        }
        guard writes == 1 else { return }
        switch replies.first {
        case .integer(1)?: state.withLock { $0.stats.writes += 1 }
        case .integer(0)?, .integer(-1)?: state.withLock { $0.stats.writesRefused += 1 }
        default: state.withLock { $0.stats.errors += 1 }  // an error reply (e.g. Redis out of memory)
        }
    }

    /// A draw of how many milliseconds earlier than its entry says a context served from the
    /// shared cache counts as due on this pod, at most `most` (docs/fleet.md, "Herds").
    func drawDueEarlier(most: Int64) -> Int64 {
        let draw = dueDraw.withLock { $0 }
        return min(max(0, draw(most)), max(0, most))
    }

    /// Replaces the due-early draw (tests: a fixed value instead of a random one).
    func setDueDraw(_ draw: @escaping @Sendable (Int64) -> Int64) { dueDraw.withLock { $0 = draw } }

    /// Counts a lease wait and how it ended.
    func noteLeaseWait(served: Bool) {
        state.withLock {
            $0.stats.leaseWaits += 1
            if served { $0.stats.leaseWaitHits += 1 }
        }
    }

    /// Counts a lookup that found an entry too old (or of an older flag set) to use.
    func noteUnusable() { state.withLock { $0.stats.misses += 1 } }

    /// Counts a fetch answered by an entry.
    func noteHit() { state.withLock { $0.stats.hits += 1 } }

    // MARK: - Entries and leases

    /// Drops the record of a lease that is released (or was never taken).
    func forget(_ leaseKey: [UInt8], token: [UInt8]) {
        state.withLock { s in
            if s.leases[leaseKey]?.token == token { s.leases.removeValue(forKey: leaseKey) }
        }
    }

    /// The entry in `reply`; a miss or a rejected entry is counted when `counting` (a lease's
    /// read and a lease wait's polls look again at what the lookup counted). An entry stamped
    /// more than ``maxStampLead`` ahead of this pod's clock is not used (``SharedCacheStats/entriesAhead``).
    func decode(_ reply: RedisValue?, keys: Keys, id: String, counting: Bool = true) -> Lookup {
        guard case .bulk(let bytes)? = reply, let bytes else {
            if counting { state.withLock { $0.stats.misses += 1 } }
            return .none
        }
        do {
            let entry = try SharedEntry.decode(
                bytes, namespace: keys.namespace, id: id, secret: keys.secret, limit: maxEntryBytes)
            if entry.confirmedAt > Self.milliseconds(clock.wallNow) + Self.maxStampLead {
                if counting {
                    state.withLock {
                        $0.stats.entriesAhead += 1
                        $0.stats.misses += 1
                    }
                }
                return .none
            }
            return .entry(entry)
        } catch {
            // Corrupt, foreign or unauthenticated: ignored; the fetch that follows overwrites it.
            if counting {
                state.withLock {
                    $0.stats.rejectedEntries += 1
                    $0.stats.misses += 1
                }
            }
            return .none
        }
    }
}
