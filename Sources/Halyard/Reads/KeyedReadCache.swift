import CHalyardAtomics

/// A client's answers to keyed scalar reads, cached per (key, type) as a handle caches its own:
/// what lets `flags.bool("checkout.new", default: false)` cost about what a handle read costs.
///
/// A key qualifies when its two `String` words say what it is for the life of the process
/// (``StringLayout``): a **small** string (up to 15 UTF-8 bytes, held in the words themselves,
/// with flags that are functions of the bytes) or a **literal** (longer than 15 bytes, whose
/// bytes lie in a loaded image's read-only segment: the words are its count and an address
/// that is never freed or rewritten). Most keys in application code are one or the other. Any
/// other key (a heap string built at run time, whose address may be reused by another string
/// once it is freed; an immortal string anywhere but an image's constant data) never enters the
/// table and is read by the flag table as before.
///
/// Each slot holds a key's words, the requested type and the *answer*: a seqlock cache
/// (`hal_handle_cache`) with the outcome, the flag's index and the value's bits, tagged with
/// the generation of the snapshot they were read from. A read loads the store's generation
/// word and takes the answer only when its tag is that generation: it then serves exactly
/// what a read of that snapshot would (the answer was computed from it by
/// ``ReadRules/scalar(_:_:_:_:)``), never another key's value and never an older snapshot's.
/// Any other answer (a new snapshot, a writer mid-update, an exposure that may be due) sends
/// the read through the snapshot, and that read refreshes the answer.
///
/// Slots are taken without a lock when a read finds its key served (a missing key never takes
/// one, so keys that are not flags, e.g. built from input, cannot fill the table) and are never
/// freed or reused; concurrent adds of one key may both succeed (two slots, one meaning). The
/// table is bounded: ``slotCount`` slots of 64 bytes (32 KiB per client, allocated with it and
/// freed with it), at most ``probes`` visited per lookup. Keys beyond that are read through the
/// flag table, as before. Where ``StringLayout/available`` is false (a 32-bit build, the layout
/// reads switched off), the table is one shared, all-free table that nothing is ever added to:
/// every lookup misses and no client allocates one.
final class KeyedReadCache: @unchecked Sendable {
    /// Slots, one cache line each.
    static let slotCount = 1 << slotBits
    private static let slotBits = 9
    /// Slots a lookup or an add visits before it gives up.
    static let probes = 8

    private let slots: UnsafeMutablePointer<hal_keyed_slot>
    /// Whether `String`'s layout reads are on (``StringLayout/available``): else nothing is
    /// added and ``slots`` is the shared free table.
    let enabled: Bool

    /// A table's bytes: ``slotCount`` slots of 64 bytes (`CHalyardAtomics.h` checks the size on
    /// every target).
    private static let byteCount = slotCount * MemoryLayout<hal_keyed_slot>.stride

    /// The table of every client whose layout reads are off: all free, never written (``add``
    /// returns before it writes), so sharing it is safe; allocated once, never freed.
    private nonisolated(unsafe) static let free: UnsafeMutablePointer<hal_keyed_slot> = allocateTable()

    private static func allocateTable() -> UnsafeMutablePointer<hal_keyed_slot> {
        let raw = UnsafeMutableRawPointer.allocate(byteCount: byteCount, alignment: 64)
        raw.initializeMemory(as: UInt8.self, repeating: 0, count: byteCount)
        return raw.bindMemory(to: hal_keyed_slot.self, capacity: slotCount)
    }

    init(enabled: Bool = StringLayout.available) {
        self.enabled = enabled
        slots = enabled ? Self.allocateTable() : Self.free
    }

    deinit { if enabled { UnsafeMutableRawPointer(slots).deallocate() } }

    /// The bytes this table owns (0 when it uses the shared free table).
    var ownedBytes: Int { enabled ? Self.byteCount : 0 }

    /// The slots' address, for ``answer(_:_:_:_:)`` (valid while the table is).
    var slotsAddress: UnsafeMutablePointer<hal_keyed_slot> { slots }

    /// Whether `key` may qualify, by its words alone: a small string or a literal's form. Where
    /// a literal's bytes lie is checked by ``add(_:_:)`` before it claims a slot.
    @inline(__always)
    static func qualifies(_ key: String) -> Bool {
        let (w0, w1) = StringLayout.words(key)
        return StringLayout.isSmall(w1) || StringLayout.isLiteral(w0, w1)
    }

    /// The type code of a slot's tag (never 0 or 1, the free and being-written tags).
    @inline(__always)
    static func code(_ kind: _FlagValueKind) -> UInt {
        switch kind {
        case .bool: 2
        case .int: 3
        case .double: 4
        case .string: 5
        case .json: 6
        }
    }

    /// Fibonacci hashing of the two words: one multiply, the product's top bits (those every
    /// input bit reaches) index ``slotCount`` slots.
    @inline(__always)
    private static func firstSlot(_ w0: UInt64, _ w1: UInt64) -> Int {
        Int(truncatingIfNeeded: ((w0 ^ w1) &* 0x9E37_79B9_7F4A_7C15) >> UInt64(64 - slotBits))
    }

    /// The answer for a key whose words are `w0`, `w1` and for type `code`, or nil when the
    /// table at `slots` has none. Any key's words may be looked up: only a small string's or a
    /// literal's are ever added, and no other form of `String` has words equal to theirs (a
    /// small string's second word has its top bit and small bit set, a literal's the
    /// discriminator `0x8`, which no other form uses), so a miss is the only answer for them.
    @inline(__always)
    static func answer(
        _ slots: UnsafeMutablePointer<hal_keyed_slot>, _ w0: UInt64, _ w1: UInt64, _ code: UInt
    ) -> UnsafeMutablePointer<hal_handle_cache>? {
        var position = firstSlot(w0, w1)
        for _ in 0..<probes {
            let slot = slots + position
            let tag = hal_keyed_slot_tag(slot)
            if tag == 0 { return nil }
            // A ready tag was released after the words were written: they are visible here.
            if tag == code && slot.pointee.w0 == w0 && slot.pointee.w1 == w1 {
                return UnsafeMutableRawPointer(slot).assumingMemoryBound(to: hal_handle_cache.self)
            }
            position = (position &+ 1) & (slotCount - 1)
        }
        return nil
    }

    /// Adds (`key`, `kind`) and returns its answer (all zeros: no generation matches it), or
    /// the answer another thread added for it meanwhile; nil when the key does not qualify or
    /// its slots are all taken.
    func add(_ key: String, _ kind: _FlagValueKind) -> UnsafeMutablePointer<hal_handle_cache>? {
        guard enabled, Self.qualifies(key) else { return nil }
        let (w0, w1) = StringLayout.words(key)
        let code = Self.code(kind)
        // A literal's bytes must lie in a loaded image's read-only segment (checked under a lock,
        // once, and only when a free slot is found): an immortal string anywhere else is read by
        // the flag table, its address never a key here.
        var located = StringLayout.isSmall(w1)
        var position = Self.firstSlot(w0, w1)
        for _ in 0..<Self.probes {
            let slot = slots + position
            var seen = hal_keyed_slot_tag(slot)
            if seen == 0 {
                if !located {
                    guard StringLayout.isLiteralInImage(w0, w1) else { return nil }
                    located = true
                }
                if hal_keyed_slot_claim(slot, &seen) {
                    hal_keyed_slot_publish(slot, w0, w1, code)
                    return UnsafeMutableRawPointer(slot).assumingMemoryBound(to: hal_handle_cache.self)
                }
            }
            // Taken: by this key (another reader added it first: use its answer), by one being
            // written (probe on), or by another key.
            if seen == code && slot.pointee.w0 == w0 && slot.pointee.w1 == w1 {
                return UnsafeMutableRawPointer(slot).assumingMemoryBound(to: hal_handle_cache.self)
            }
            position = (position &+ 1) & (Self.slotCount - 1)
        }
        return nil
    }

    /// How many slots are taken (tests).
    var filled: Int {
        (0..<Self.slotCount).reduce(0) { $0 + (hal_keyed_slot_tag(slots + $1) != 0 ? 1 : 0) }
    }
}
