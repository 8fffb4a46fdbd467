/// One key table for every snapshot a service holds whose flags have the same keys in the same
/// order.
///
/// A control plane usually serves every context the same flag keys, in the same order; each
/// snapshot would otherwise build its own ``FlagTable`` (slots at most half full, 24 bytes each,
/// plus a copy of the keys' bytes: about 4.4 KiB for 64 flags, a quarter of a cached context).
/// A table is immutable and reached through raw pointers, so any number of snapshots can read
/// one; each holds a reference to its ``FlagTable/Storage`` and the last one frees it.
///
/// Bounded by ``capacity`` distinct key lists and ``maxBytes`` of tables; a key list beyond
/// either gets a table of its own, counted in its snapshot's bytes as before. Tables are looked
/// up by a hash of the key list and confirmed key by key (``FlagTable/Storage/matches(_:)``),
/// off the read path (once per fetch that changes values). The bytes are reported with the
/// interned keys' (``FlagServiceStats/CacheStats/internedKeyBytes``). A table stays while the service
/// lives, like the interned keys: the lists a plane serves are few and change rarely.
final class FlagTableInterner: Sendable {
    /// The most distinct key lists kept.
    static let capacity = 64
    /// The most bytes of tables kept.
    static let maxBytes = 1 << 20

    private struct State {
        var tables: [Int: [FlagTable.Storage]] = [:]
        var bytes = 0
        var count = 0
    }
    private let state = Locked(State())

    /// The shared table for `flags`' keys: an existing one, or one built now and kept (nil when
    /// the bounds are reached, or for no flags: the snapshot then builds its own).
    func table(for flags: [ServedFlag]) -> FlagTable.Storage? {
        guard !flags.isEmpty else { return nil }
        var hasher = Hasher()
        hasher.combine(flags.count)
        for flag in flags { hasher.combine(flag.key) }
        let hash = hasher.finalize()
        if let found = state.withLock({ s in s.tables[hash]?.first { $0.matches(flags) } }) { return found }
        // Built outside the lock; a racing builder of the same list may win, and its table is
        // used.
        let built = FlagTable.Storage(keys: flags.map(\.key))
        let cost = Snapshot.block(built.table.allocatedBytes)
        return state.withLock { s -> FlagTable.Storage? in
            if let found = s.tables[hash]?.first(where: { $0.matches(flags) }) { return found }
            guard s.count < Self.capacity, s.bytes + cost <= Self.maxBytes else { return nil }
            s.tables[hash, default: []].append(built)
            s.bytes += cost
            s.count += 1
            return built
        }
    }

    /// Bytes held by the shared tables (estimated like snapshots are).
    var bytes: Int { state.withLock { $0.bytes } }
}
