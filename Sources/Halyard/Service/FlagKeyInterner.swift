/// One copy of each flag key for every snapshot a service holds.
///
/// A control plane serves the same flag keys to every context, but each decoded response
/// carries its own copies (a key longer than 15 UTF-8 bytes is a heap block of its own): 64
/// keys cost about 4 KiB per cached context. Before a snapshot is built, its keys are replaced
/// by the interned copies, so cached contexts share them. The table is bounded
/// (``capacity`` keys, counted in the stats' bytes through ``bytes``); keys beyond it are kept
/// as they came (and counted per snapshot).
final class FlagKeyInterner: Sendable {
    /// The most keys kept.
    static let capacity = 8_192
    private let table = Locked(Set<String>())

    /// Replaces the keys of `flags` with the interned copies. Returns whether every key is
    /// now an interned copy (the snapshot's estimate then leaves the keys out).
    func intern(_ flags: inout [ServedFlag]) -> Bool {
        table.withLock { set in
            var all = true
            for index in flags.indices {
                let key = flags[index].key
                if let shared = set.firstIndex(of: key) {
                    flags[index].key = set[shared]
                } else if set.count < Self.capacity {
                    set.insert(key)
                } else {
                    all = false
                }
            }
            return all
        }
    }

    /// Bytes held by the interned keys (estimated like snapshots are).
    var bytes: Int {
        table.withLock { set in set.reduce(Snapshot.block(set.capacity * 16)) { $0 + Snapshot.stringBytes($1) } }
    }
}
