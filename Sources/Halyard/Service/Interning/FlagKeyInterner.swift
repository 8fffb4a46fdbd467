/// One copy of each flag key for every snapshot a service holds.
///
/// A control plane serves the same flag keys to every context, but each decoded response
/// carries its own copies (a key longer than 15 UTF-8 bytes is a heap block of its own): 64
/// keys cost about 4 KiB per cached context. Before a snapshot is built, its keys are replaced
/// by the interned copies, so cached contexts share them. The table is bounded by count
/// (``capacity`` keys) and by estimated bytes (``maxBytes``), reported in
/// ``FlagServiceStats/CacheStats/internedKeyBytes``; keys beyond either bound are kept as they came (and
/// counted per snapshot).
final class FlagKeyInterner: Sendable {
    /// The most keys kept.
    static let capacity = 8_192
    /// The most estimated bytes of keys kept (the set's slots included).
    static let maxBytes = 1 << 20
    private struct Table {
        var set = Set<ExactKey>()
        var keyBytes = 0
    }

    /// A key compared and hashed by its UTF-8 bytes (SPEC §2: flag keys are exact bytes). A
    /// `Set<String>` would merge canonically equivalent keys (`"caf\u{E9}"` and
    /// `"cafe\u{301}"`), giving one context the other's bytes, which its own reads then miss.
    private struct ExactKey: Hashable {
        let string: String
        static func == (a: ExactKey, b: ExactKey) -> Bool { a.string.utf8.elementsEqual(b.string.utf8) }
        func hash(into hasher: inout Hasher) {
            hasher.combine(string.utf8.count)
            for byte in string.utf8 { hasher.combine(byte) }
        }
    }
    private let table = Locked(Table())

    /// Replaces the keys of `flags` with the interned copies. Returns whether every key is
    /// now an interned copy (the snapshot's estimate then leaves the keys out).
    func intern(_ flags: inout [ServedFlag]) -> Bool {
        table.withLock { t in
            var all = true
            for index in flags.indices {
                let key = flags[index].key
                if let shared = t.set.firstIndex(of: ExactKey(string: key)) {
                    flags[index].key = t.set[shared].string
                    continue
                }
                let cost = Snapshot.stringBytes(key)
                if t.set.count < Self.capacity, Self.slotBytes(t.set.count + 1) + t.keyBytes + cost <= Self.maxBytes {
                    t.set.insert(ExactKey(string: key))
                    t.keyBytes += cost
                } else {
                    all = false
                }
            }
            return all
        }
    }

    /// The slots of a set of `count` strings (16 bytes each, with Set's growth rounding).
    private static func slotBytes(_ count: Int) -> Int {
        var capacity = 1
        while capacity * 3 < count * 4 { capacity *= 2 }
        return Snapshot.block(capacity * 16)
    }

    /// Bytes held by the interned keys (estimated like snapshots are).
    var bytes: Int {
        table.withLock { t in Snapshot.block(t.set.capacity * 16) + t.keyBytes }
    }
}
