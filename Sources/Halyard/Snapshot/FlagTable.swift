/// An open-addressing hash table from flag key to entry index, built once per snapshot.
///
/// Why not `Dictionary<String, Int>`: hashing a Swift `String` goes through SipHash and the
/// `Hasher` machinery, about 75 % of a dictionary lookup. This table hashes the key's UTF-8 bytes
/// directly with a small multiply-mix hash (8 bytes per step), probes linearly in a
/// power-of-two table at most half full, and confirms a hit by comparing bytes. Keys are
/// compared exactly (case-sensitive, byte-for-byte UTF-8; Swift `String` equality would also
/// equate canonically equivalent Unicode, which flag keys must not).
///
/// A struct of raw pointers, so using it on the read path involves no reference counting; its
/// owner (the snapshot) frees it with ``deallocate()``. Immutable after `init`.
struct FlagTable: @unchecked Sendable {
    /// One slot: the key's full hash and `index + 1` (0 marks an empty slot).
    struct Slot {
        var hash: UInt64
        var entry: UInt32
        var length: UInt32
        var offset: Int
    }

    private let slots: UnsafeMutablePointer<Slot>
    private let mask: Int
    private let arena: UnsafeMutablePointer<UInt8>
    let count: Int

    /// Builds the table. `keys` must be unique (the snapshot builder guarantees it).
    init(keys: [String]) {
        count = keys.count
        var capacity = 8
        while capacity < keys.count * 2 { capacity <<= 1 }
        mask = capacity - 1
        slots = .allocate(capacity: capacity)
        slots.initialize(repeating: Slot(hash: 0, entry: 0, length: 0, offset: 0), count: capacity)
        let totalBytes = keys.reduce(0) { $0 + $1.utf8.count }
        arena = .allocate(capacity: max(totalBytes, 1))
        var offset = 0
        for (index, key) in keys.enumerated() {
            // Copy the key's UTF-8 into the arena (no per-key array for native strings), then
            // hash the arena copy.
            var key = key
            let length = key.withUTF8 { utf8 -> Int in
                if let base = utf8.baseAddress { (arena + offset).initialize(from: base, count: utf8.count) }
                return utf8.count
            }
            let hash = FlagTable.hash(UnsafeRawPointer(arena + offset), length)
            var position = Int(truncatingIfNeeded: hash) & mask
            while slots[position].entry != 0 { position = (position + 1) & mask }
            slots[position] = Slot(hash: hash, entry: UInt32(index + 1), length: UInt32(length), offset: offset)
            offset += length
        }
    }

    /// Frees the table's memory. Call exactly once, when no reader can use it any more.
    func deallocate() {
        slots.deallocate()
        arena.deallocate()
    }

    /// The entry index of `key`, or `nil` when the snapshot has no such flag.
    @inline(__always)
    func index(of key: String) -> Int? {
        if let found = key.utf8.withContiguousStorageIfAvailable({ buffer -> Int? in
            lookup(UnsafeRawPointer(buffer.baseAddress), buffer.count)
        }) {
            return found
        }
        // Not contiguous UTF-8 (a bridged string on Apple platforms): copy once, then look up.
        var bytes = Array(key.utf8)
        return bytes.withUnsafeMutableBytes { lookup(UnsafeRawPointer($0.baseAddress), $0.count) }
    }

    @inline(__always)
    private func lookup(_ bytes: UnsafeRawPointer?, _ length: Int) -> Int? {
        let hash = FlagTable.hash(bytes, length)
        var position = Int(truncatingIfNeeded: hash) & mask
        while true {
            let slot = slots[position]
            if slot.entry == 0 { return nil }
            if slot.hash == hash && Int(slot.length) == length
                && FlagTable.equal(bytes, UnsafeRawPointer(arena + slot.offset), length)
            {
                return Int(slot.entry) - 1
            }
            position = (position + 1) & mask
        }
    }

    // MARK: - Hash and compare

    @inline(__always)
    private static func mix(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let product = a.multipliedFullWidth(by: b)
        return product.high ^ product.low
    }

    /// A fast, non-cryptographic hash of `length` bytes (a multiply-mix over 8-byte words,
    /// reading short tails with overlapping loads so it never reads outside the bytes).
    @inline(__always)
    static func hash(_ bytes: UnsafeRawPointer?, _ length: Int) -> UInt64 {
        let seed: UInt64 = 0x243F_6A88_85A3_08D3 ^ UInt64(truncatingIfNeeded: length)
        guard let p = bytes, length > 0 else { return mix(seed, 0x9E37_79B9_7F4A_7C15) }
        var h = seed
        if length >= 8 {
            var offset = 0
            while offset + 8 < length {
                h = mix(h ^ p.loadUnaligned(fromByteOffset: offset, as: UInt64.self), 0x9E37_79B9_7F4A_7C15)
                offset += 8
            }
            h = mix(h ^ p.loadUnaligned(fromByteOffset: length - 8, as: UInt64.self), 0xBF58_476D_1CE4_E5B9)
        } else if length >= 4 {
            let a = UInt64(p.loadUnaligned(as: UInt32.self))
            let b = UInt64(p.loadUnaligned(fromByteOffset: length - 4, as: UInt32.self))
            h = mix(h ^ (a << 32 | b), 0xBF58_476D_1CE4_E5B9)
        } else {
            let a = UInt64(p.load(as: UInt8.self)) << 16
            let b = UInt64(p.load(fromByteOffset: length >> 1, as: UInt8.self)) << 8
            let c = UInt64(p.load(fromByteOffset: length - 1, as: UInt8.self))
            h = mix(h ^ (a | b | c), 0xBF58_476D_1CE4_E5B9)
        }
        return mix(h, 0x94D0_49BB_1331_11EB)
    }

    /// Byte equality for two buffers of `length` bytes, word at a time.
    @inline(__always)
    static func equal(_ a: UnsafeRawPointer?, _ b: UnsafeRawPointer, _ length: Int) -> Bool {
        guard let a else { return length == 0 }
        if length >= 8 {
            var offset = 0
            while offset + 8 < length {
                if a.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                    != b.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                {
                    return false
                }
                offset += 8
            }
            return a.loadUnaligned(fromByteOffset: length - 8, as: UInt64.self)
                == b.loadUnaligned(fromByteOffset: length - 8, as: UInt64.self)
        }
        if length >= 4 {
            return a.loadUnaligned(as: UInt32.self) == b.loadUnaligned(as: UInt32.self)
                && a.loadUnaligned(fromByteOffset: length - 4, as: UInt32.self)
                    == b.loadUnaligned(fromByteOffset: length - 4, as: UInt32.self)
        }
        var offset = 0
        while offset < length {
            if a.load(fromByteOffset: offset, as: UInt8.self) != b.load(fromByteOffset: offset, as: UInt8.self) {
                return false
            }
            offset += 1
        }
        return true
    }
}

extension FlagTable {
    /// The bytes the table allocated: its slots and its key arena (see `Snapshot.estimatedBytes`).
    var allocatedBytes: Int {
        var arenaBytes = 0
        for position in 0...mask where slots[position].entry != 0 { arenaBytes += Int(slots[position].length) }
        return (mask + 1) * MemoryLayout<Slot>.stride + max(arenaBytes, 1)
    }
}

extension FlagTable {
    /// Owns one table's memory. A snapshot keeps the table's raw pointers (the read path) and a
    /// reference to this; snapshots whose flags have the same keys in the same order may share
    /// one (service mode: ``FlagTableInterner``), and the last one to go frees it.
    final class Storage: Sendable {
        let table: FlagTable

        init(keys: [String]) { table = FlagTable(keys: keys) }

        deinit { table.deallocate() }

        /// Whether this table maps exactly `flags`' keys, in their order (the one a snapshot of
        /// `flags` would build): as many keys, and each found at its own index.
        func matches(_ flags: [ServedFlag]) -> Bool {
            guard table.count == flags.count else { return false }
            for (index, flag) in flags.enumerated() where table.index(of: flag.key) != index { return false }
            return true
        }
    }
}
