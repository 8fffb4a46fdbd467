import CHalyardAtomics

/// An open-addressing hash table from flag key to entry index, built once per snapshot.
///
/// Why not `Dictionary<String, Int>`: hashing a Swift `String` goes through SipHash and the
/// `Hasher` machinery, about 75 % of a dictionary lookup. This table probes linearly in a
/// power-of-two table at most half full. Keys are compared exactly (case-sensitive,
/// byte-for-byte UTF-8; Swift `String` equality would also equate canonically equivalent
/// Unicode, which flag keys must not). A key is found one of three ways (docs/architecture.md,
/// "Keyed reads: three ways to a key"):
///
/// - **Short keys** (up to 15 UTF-8 bytes) are kept as two words: the bytes, zero-padded, and
///   the length in the top byte: the layout of a Swift small `String`. A query in the small
///   form is hashed and compared from its own two words (``StringLayout``): no byte is read.
/// - **Literal keys** (an immortal `String` whose bytes live in the binary's constant data, as
///   every literal longer than 15 bytes is) are looked up by address in a small side table
///   filled on first use (``literals``): one hash of the address word, one probe.
/// - **Any other key** (a heap string built at run time, a bridged string) is hashed from its
///   UTF-8 bytes with a small multiply-mix hash (8 bytes per step) and confirmed by comparing
///   bytes.
///
/// A struct of raw pointers, so using it on the read path involves no reference counting; its
/// owner (the snapshot) frees it with ``deallocate()``. Immutable after `init`, except the
/// literal side table, which is only ever accessed atomically and only caches answers the
/// byte path gave.
struct FlagTable: @unchecked Sendable {
    /// One slot: `entry` is `index + 1` (0 marks an empty slot). A short key (`length <= 15`)
    /// stores its two words in `w0`/`w1` (``StringLayout``); a long key stores its byte hash in
    /// `w0` and its arena offset, marked with ``longMark``, in `w1` (so no short query's words,
    /// whose top bit is masked off, ever equal a long key's).
    struct Slot {
        var w0: UInt64
        var w1: UInt64
        var entry: UInt32
        var length: UInt32
    }

    /// Marks a long key's arena offset in ``Slot/w1``.
    static let longMark: UInt64 = 1 << 63

    /// The key slots, their arena and whether queries may be read as their words: what the
    /// byte and word lookups need, four words passed in registers to the out-of-line paths
    /// (the whole table, passed to a method, would be copied to the stack on every read).
    struct Keys {
        let slots: UnsafeMutablePointer<Slot>
        let mask: Int
        let arena: UnsafeMutablePointer<UInt8>
        /// Whether queries may be read as their words (``StringLayout/available``), fixed at
        /// build.
        let wordsAvailable: Bool
    }

    let keys: Keys
    private var slots: UnsafeMutablePointer<Slot> { keys.slots }
    private var mask: Int { keys.mask }
    private var wordsAvailable: Bool { keys.wordsAvailable }
    /// The literal side table: ``literalCapacity`` pairs of atomic words (address word, then
    /// `length << 32 | (index + 1)`), each pair written once (docs/architecture.md).
    private let literals: UnsafeMutablePointer<hal_atomic_word>
    private let literalMask: Int
    let count: Int

    /// The most literal slots a table has: at most 2 x the flags rounded up to a power of two,
    /// at least 16, at most 4,096 (16 bytes each: ≤ 64 KiB).
    static let maxLiteralCapacity = 4096
    /// How many slots a literal probe or fill visits before it gives up (the byte path then
    /// answers; nothing is cached).
    static let literalProbes = 8

    /// The number of slots of the literal side table for `count` flags.
    static func literalCapacity(for count: Int) -> Int {
        var capacity = 16
        while capacity < count * 2 && capacity < maxLiteralCapacity { capacity <<= 1 }
        return capacity
    }

    /// Builds the table. `keys` must be unique (the snapshot builder guarantees it).
    /// `literalSlots` (tests only) overrides the side table's size (a power of two).
    init(keys: [String], literalSlots: Int? = nil) {
        count = keys.count
        var capacity = 8
        while capacity < keys.count * 2 { capacity <<= 1 }
        let mask = capacity - 1
        let slots = UnsafeMutablePointer<Slot>.allocate(capacity: capacity)
        slots.initialize(repeating: Slot(w0: 0, w1: 0, entry: 0, length: 0), count: capacity)
        let literalCapacity = literalSlots ?? FlagTable.literalCapacity(for: keys.count)
        precondition(literalCapacity > 0 && literalCapacity & (literalCapacity - 1) == 0, "a power of two")
        literalMask = literalCapacity - 1
        literals = .allocate(capacity: 2 * literalCapacity)
        literals.initialize(repeating: hal_atomic_word(value: 0), count: 2 * literalCapacity)
        let totalBytes = keys.reduce(0) { $0 + ($1.utf8.count > 15 ? $1.utf8.count : 0) }
        let arena = UnsafeMutablePointer<UInt8>.allocate(capacity: max(totalBytes, 1))
        var offset = 0
        for (index, key) in keys.enumerated() {
            var key = key
            let slot = key.withUTF8 { utf8 -> Slot in
                let length = utf8.count
                if length <= 15 {
                    let (w0, w1) = FlagTable.words(UnsafeRawPointer(utf8.baseAddress), length)
                    return Slot(w0: w0, w1: w1, entry: UInt32(index + 1), length: UInt32(length))
                }
                // Copy the key's UTF-8 into the arena, then hash the arena copy.
                if let base = utf8.baseAddress { (arena + offset).initialize(from: base, count: length) }
                let hash = FlagTable.hash(UnsafeRawPointer(arena + offset), length)
                defer { offset += length }
                return Slot(
                    w0: hash, w1: UInt64(offset) | FlagTable.longMark, entry: UInt32(index + 1),
                    length: UInt32(length))
            }
            let hash = slot.length <= 15 ? FlagTable.hash(words: slot.w0, slot.w1) : slot.w0
            var position = Int(truncatingIfNeeded: hash) & mask
            while slots[position].entry != 0 { position = (position + 1) & mask }
            slots[position] = slot
        }
        self.keys = Keys(slots: slots, mask: mask, arena: arena, wordsAvailable: StringLayout.available)
    }

    /// Frees the table's memory. Call exactly once, when no reader can use it any more.
    func deallocate() {
        keys.slots.deallocate()
        keys.arena.deallocate()
        literals.deallocate()
    }

    /// The entry index of `key`, or `nil` when the snapshot has no such flag.
    ///
    /// A key in the small form is found from its words; a literal from the side table (filled
    /// here, on first use, from the byte path's answer); any other key by its bytes.
    @inline(__always)
    func index(of key: String) -> Int? {
        if wordsAvailable {
            let (w0, w1) = StringLayout.words(key)
            if StringLayout.isSmall(w1) { return keys.lookup(words: w0, w1 & StringLayout.smallMask) }
            if StringLayout.isTailAllocated(w0, w1) && StringLayout.isImmortal(w1) {
                return literalIndex(of: key, w0, w1)
            }
        }
        return keys.bytesIndex(of: key)
    }

    /// A literal's index: its slot in the side table, else the byte path's answer, which is
    /// then cached. Probes at most ``literalProbes`` slots; a slot whose address word matches
    /// but whose length does not (or whose answer is not written yet) sends the read to the
    /// byte path, never to another slot's index.
    @inline(__always)
    private func literalIndex(of key: String, _ w0: UInt64, _ w1: UInt64) -> Int? {
        let address = UInt(truncatingIfNeeded: w1)
        let length = UInt(truncatingIfNeeded: w0 & StringLayout.countMask)
        var position = Int(truncatingIfNeeded: FlagTable.mix(w1, 0x9E37_79B9_7F4A_7C15)) & literalMask
        for _ in 0..<FlagTable.literalProbes {
            let pair = literals + 2 &* position
            let word = hal_load_relaxed(pair)
            if word == address {
                let answer = hal_load_relaxed(pair + 1)
                // The length is part of the answer: equal address and length, equal bytes
                // (a literal's bytes never change). 0 (not written yet) never matches.
                if answer >> 32 == length { return Int(truncatingIfNeeded: answer & 0xFFFF_FFFF) &- 1 }
                return keys.bytesIndexOutOfLine(of: key)
            }
            if word == 0 { break }
            position = (position &+ 1) & literalMask
        }
        return FlagTable.fillLiteral(
            key, keys: keys, literals: literals, literalMask: literalMask, address: address, length: length)
    }

    /// The literal side table's slow path: the byte path's answer, cached for `address` when
    /// the key is served (a missing key is not cached: its reads are errors, counted, rare) and
    /// its bytes lie in a loaded image's read-only segment (``StringLayout/isLiteralInImage(_:_:)``:
    /// an immortal string anywhere else is not a literal, and its address could name other
    /// bytes tomorrow).
    @inline(never)
    private static func fillLiteral(
        _ key: String, keys: Keys, literals: UnsafeMutablePointer<hal_atomic_word>, literalMask: Int, address: UInt,
        length: UInt
    ) -> Int? {
        guard let index = keys.bytesIndexOutOfLine(of: key) else { return nil }
        guard length <= 0xFFFF_FFFF, index < 0xFFFF_FFFF else { return index }
        let answer = length << 32 | UInt(index + 1)
        // Where the bytes lie is checked (under a lock) once, and only when a free slot is
        // found: a literal whose probes are all taken by others costs no check per read.
        var located = false
        var position = Int(truncatingIfNeeded: FlagTable.mix(UInt64(address), 0x9E37_79B9_7F4A_7C15)) & literalMask
        for _ in 0..<FlagTable.literalProbes {
            let pair = literals + 2 &* position
            var expected = hal_load_relaxed(pair)
            if expected == 0 {
                if !located {
                    let (w0, w1) = StringLayout.words(key)
                    guard StringLayout.isLiteralInImage(w0, w1) else { return index }
                    located = true
                }
                if hal_compare_exchange(pair, &expected, address) {
                    hal_store_release(pair + 1, answer)
                    return index
                }
            }
            // Another reader claimed this slot: for the same literal (it writes the same
            // answer), or for another one (probe on).
            if expected == address { return index }
            position = (position &+ 1) & literalMask
        }
        return index
    }

    /// Tests only: claims a free side-table slot for `key`'s address word with the answer
    /// `length << 32 | (index + 1)`, as a fill would (to plant answers a fill never writes).
    func seedLiteral(_ key: String, length: UInt, index: Int) {
        let address = UInt(truncatingIfNeeded: StringLayout.words(key).1)
        var position = Int(truncatingIfNeeded: FlagTable.mix(UInt64(address), 0x9E37_79B9_7F4A_7C15)) & literalMask
        for _ in 0..<FlagTable.literalProbes {
            var expected: UInt = 0
            if hal_compare_exchange(literals + 2 * position, &expected, address) {
                hal_store_release(literals + 2 * position + 1, length << 32 | UInt(index + 1))
                return
            }
            position = (position + 1) & literalMask
        }
    }

    /// How many literal side-table slots are claimed (tests).
    var literalsFilled: Int {
        (0...literalMask).reduce(0) { $0 + (hal_load_relaxed(literals + 2 * $1) != 0 ? 1 : 0) }
    }

    // MARK: - Hash and compare

    @inline(__always)
    static func mix(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let product = a.multipliedFullWidth(by: b)
        return product.high ^ product.low
    }

    /// A short key's words (at most 15 bytes): the bytes zero-padded to 16 and read as two
    /// native words, the length in the top byte of the second: on 64-bit little-endian
    /// platforms, the words of the small `String` of those bytes with the flag bits masked off.
    @inline(__always)
    static func words(_ bytes: UnsafeRawPointer?, _ length: Int) -> (UInt64, UInt64) {
        var buffer: (UInt64, UInt64) = (0, 0)
        if let bytes, length > 0 {
            withUnsafeMutableBytes(of: &buffer) { $0.baseAddress!.copyMemory(from: bytes, byteCount: length) }
        }
        return (buffer.0, buffer.1 | UInt64(length) << 56)
    }

    /// The hash of a short key's words: one multiply.
    @inline(__always)
    static func hash(words w0: UInt64, _ w1: UInt64) -> UInt64 {
        mix(w0 ^ 0x243F_6A88_85A3_08D3, w1 ^ 0xBF58_476D_1CE4_E5B9)
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

extension FlagTable.Keys {
    /// The byte path: the key's UTF-8 bytes, hashed and compared. A string with contiguous
    /// UTF-8 (every native string: a key built at run time) is read through its public view,
    /// inline; any other form out of line (``otherIndex(of:)``).
    @inline(__always)
    func bytesIndex(of key: String) -> Int? {
        if let found = key.utf8.withContiguousStorageIfAvailable({ lookup(UnsafeRawPointer($0.baseAddress), $0.count) })
        {
            return found
        }
        return otherIndex(of: key)
    }

    /// ``bytesIndex(of:)`` out of line, for the literal path's rare fallbacks.
    @inline(never)
    func bytesIndexOutOfLine(of key: String) -> Int? { bytesIndex(of: key) }

    /// The byte path for a string without contiguous UTF-8 (a bridged string on Apple
    /// platforms): its bytes copied once, then looked up.
    @inline(never)
    func otherIndex(of key: String) -> Int? {
        var bytes = Array(key.utf8)
        return bytes.withUnsafeMutableBytes { lookup(UnsafeRawPointer($0.baseAddress), $0.count) }
    }

    /// A short key's two words: probe by their hash, compare both.
    @inline(__always)
    func lookup(words w0: UInt64, _ w1: UInt64) -> Int? {
        var position = Int(truncatingIfNeeded: FlagTable.hash(words: w0, w1)) & mask
        while true {
            let slot = slots[position]
            if slot.entry == 0 { return nil }
            if slot.w0 == w0 && slot.w1 == w1 { return Int(slot.entry) &- 1 }
            position = (position &+ 1) & mask
        }
    }

    @inline(__always)
    func lookup(_ bytes: UnsafeRawPointer?, _ length: Int) -> Int? {
        if length <= 15 {
            let (w0, w1) = FlagTable.words(bytes, length)
            return lookup(words: w0, w1)
        }
        return lookup(long: bytes, length)
    }

    /// A key longer than 15 bytes: its byte hash, then a probe confirming hash, length and bytes.
    @inline(__always)
    func lookup(long bytes: UnsafeRawPointer?, _ length: Int) -> Int? {
        let hash = FlagTable.hash(bytes, length)
        var position = Int(truncatingIfNeeded: hash) & mask
        while true {
            let slot = slots[position]
            if slot.entry == 0 { return nil }
            if slot.w0 == hash && Int(slot.length) == length
                && FlagTable.equal(bytes, UnsafeRawPointer(arena + Int(slot.w1 & ~FlagTable.longMark)), length)
            {
                return Int(slot.entry) &- 1
            }
            position = (position &+ 1) & mask
        }
    }
}

extension FlagTable {
    /// The bytes the table allocated: its slots, its key arena (the keys longer than 15
    /// bytes) and its literal side table (see `Snapshot.estimatedBytes`).
    var allocatedBytes: Int {
        var arenaBytes = 0
        for position in 0...mask where slots[position].entry != 0 && slots[position].length > 15 {
            arenaBytes += Int(slots[position].length)
        }
        return (mask + 1) * MemoryLayout<Slot>.stride + max(arenaBytes, 1)
            + (literalMask + 1) * 2 * MemoryLayout<hal_atomic_word>.stride
    }
}

extension FlagTable {
    /// Owns one table's memory. A snapshot keeps the table's raw pointers (the read path) and a
    /// reference to this; snapshots whose flags have the same keys in the same order may share
    /// one (service mode: ``FlagTableInterner``), and the last one to go frees it.
    final class Storage: Sendable {
        let table: FlagTable
        /// This table's serial number (``KeyTableSerial``): what a ``FlagKey`` resolved against
        /// it remembers (snapshots sharing the table map every key to the same index).
        let serial: UInt

        init(keys: [String]) {
            table = FlagTable(keys: keys)
            serial = KeyTableSerial.next()
        }

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
