import CHalyardAtomics

/// A flag key resolved once per key table: the fastest way to read the same flag of in-process
/// definitions many times (docs/in-process.md, "Reading by handle").
///
/// ```swift
/// let newCheckout = FlagKey("new-checkout")            // once, e.g. a `static let`
/// let on = flags.bool(newCheckout, default: false)     // a service's view
/// let off = definitions.bool(newCheckout, context: ctx, default: false)
/// ```
///
/// A keyed read hashes its key at every read. A `FlagKey` remembers the slot it found in the
/// last key table it was read against (the key table of a ``FlagDefinitions`` value, shared by
/// every ``ContextFlags`` view a service evaluates from those definitions), tagged with that
/// table's serial number, so a read against the same table takes the slot without hashing. A
/// read against another table (new definitions were published, or another ``FlagDefinitions``
/// value) looks the key up once and remembers the new slot: the answer is always the keyed
/// read's, a removed flag included (`FLAG_NOT_FOUND`, the default).
///
/// A `FlagKey` is a small value holding the address of its cache, not a reference: copying it,
/// keeping it in an array or a `let` property, and reading it from many threads touches no
/// reference count. The cache (one per distinct key in the process, shared by every `FlagKey`
/// of that key) is never freed, like a client handle's (``FlagHandle``): make them for the
/// keys the program reads, not for keys that come from user input.
public struct FlagKey: @unchecked Sendable, Hashable {
    /// The cache: `generation` is the serial number of the key table last resolved against,
    /// `bits` the slot, `info` 1 when the key was found there, 2 when not. `owner` is the
    /// immortal ``FlagKeySlot`` holding the key.
    let cache: UnsafeMutablePointer<hal_handle_cache>

    /// A handle for flag `key` (byte-exact, as the keyed reads compare keys).
    public init(_ key: String) {
        cache = FlagKeySlot.slot(for: key).cache
    }

    /// The flag key this handle reads.
    public var key: String { FlagKeySlot.from(cache)._withUnsafeGuaranteedRef { $0.key } }

    /// The slot of this key in the key table numbered `serial`, or nil when the table has no
    /// such key: from the cache when it was resolved against that table, else `lookup(key)`,
    /// which is then remembered.
    @inline(__always)
    func slot(in serial: UInt, _ lookup: (String) -> Int?) -> Int? {
        let cached = cachedSlot(serial)
        if cached >= 0 { return cached }
        if cached == Self.absent { return nil }
        return resolve(serial, lookup)
    }

    /// What the cache holds for the key table numbered `serial`: the slot, ``absent``, or
    /// ``unknown`` (resolved against another table, or a writer is active). No reference is
    /// touched: a caller reads its own table only on the slow path.
    @inline(__always)
    func cachedSlot(_ serial: UInt) -> Int {
        var bits: UInt64 = 0
        var info: UInt = 0
        guard hal_handle_cache_read(cache, serial, &bits, &info) else { return Self.unknown }
        return info == 1 ? Int(truncatingIfNeeded: bits) : Self.absent
    }

    /// ``cachedSlot(_:)``: the table has no such key.
    static let absent = -1
    /// ``cachedSlot(_:)``: not resolved against that table.
    static let unknown = -2

    /// ``slot(in:_:)``'s slow path: one keyed lookup, written to the cache.
    @inline(never)
    func resolve(_ serial: UInt, _ lookup: (String) -> Int?) -> Int? {
        let found = lookup(key)
        hal_handle_cache_write(cache, serial, UInt64(truncatingIfNeeded: found ?? 0), found == nil ? 2 : 1)
        return found
    }

    /// Handles are equal when they read the same key.
    public static func == (lhs: FlagKey, rhs: FlagKey) -> Bool { lhs.cache == rhs.cache }

    /// Hashes the handle (its key's cache: one per key).
    public func hash(into hasher: inout Hasher) { hasher.combine(cache) }
}

/// The serial numbers of key tables (``KeyTableSerial/next()``): never 0 (a fresh
/// ``FlagKey`` cache's), never reused in a process, so a ``FlagKey`` resolved against a table
/// that is gone can never match a later one at the same address.
enum KeyTableSerial {
    nonisolated(unsafe) private static let word: UnsafeMutablePointer<hal_atomic_word> = {
        let word = UnsafeMutablePointer<hal_atomic_word>.allocate(capacity: 1)
        word.initialize(to: hal_atomic_word(value: 0))
        return word
    }()

    /// A new serial number.
    static func next() -> UInt { hal_fetch_add(word, 1) &+ 1 }
}

/// The shared state behind every ``FlagKey`` of one key: the key and its cache. Immortal (a
/// handle holds only the cache's address), one per distinct key.
final class FlagKeySlot: @unchecked Sendable {
    let key: String
    let cache: UnsafeMutablePointer<hal_handle_cache>

    /// By the key's UTF-8 (a `String` key would merge canonically equivalent keys).
    private static let slots = Locked<[[UInt8]: FlagKeySlot]>([:])

    private init(key: String) {
        self.key = key
        let raw = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<hal_handle_cache>.stride, alignment: 64)
        cache = raw.bindMemory(to: hal_handle_cache.self, capacity: 1)
        cache.initialize(
            to: hal_handle_cache(
                seq: 0, generation: 0, bits: 0, info: 0, exposed_until: hal_atomic_u64(value: 0), owner: nil))
        cache.pointee.owner = UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())
    }

    /// The slot of `key`, made (and made immortal) on first use. Keys are told apart byte for
    /// byte: `é` and `e` + U+0301 get two slots, as the key tables see two keys.
    static func slot(for key: String) -> FlagKeySlot {
        let bytes = Array(key.utf8)
        return slots.withLock { slots in
            if let slot = slots[bytes] { return slot }
            let slot = FlagKeySlot(key: key)
            _ = Unmanaged.passRetained(slot)  // leaked on purpose: handles hold its cache's address
            slots[bytes] = slot
            return slot
        }
    }

    static func from(_ cache: UnsafeMutablePointer<hal_handle_cache>) -> Unmanaged<FlagKeySlot> {
        Unmanaged<FlagKeySlot>.fromOpaque(cache.pointee.owner!)
    }
}
