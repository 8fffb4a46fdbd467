public import CHalyardAtomics

/// A pre-resolved flag read: the fastest way to read the same flag many times.
///
/// ```swift
/// let newCheckout = flags.handle("checkout.new", default: false)
/// if newCheckout.value { ... }   // no hashing, no lookup while the snapshot is unchanged
/// ```
///
/// A handle resolves its key once per snapshot: it caches the outcome and the value bits
/// tagged with the snapshot generation, and re-resolves lazily the first time it is read after
/// a new snapshot (a refresh, an `identify`, new offline values) is published. It stays
/// correct across swaps and context changes and may be shared by any number of threads.
///
/// A handle is a small value: the address of its cache, the address of the store's generation
/// word, the address of the exposure clock, and the default. None of them is a reference, so
/// keeping handles in an array, a `let` property, a global or a struct and reading them from
/// many threads touches no reference count. The cache belongs to the client (one per key and
/// type, shared by every handle for them) and is never freed, so a handle stays safe to read
/// after its client is gone: it then serves the default. See docs/architecture.md, "Handles".
public struct FlagHandle<Value: FlagValue>: @unchecked Sendable {
    /// The value served when the flag cannot be read as `Value`.
    public let defaultValue: Value

    // `@usableFromInline` because `value` is `@inlinable`: it is the measured hot path, and an
    // unspecialized generic getter called across modules costs ~10 ns instead of ~1.
    @usableFromInline let cache: UnsafeMutablePointer<hal_handle_cache>
    @usableFromInline let generationWord: UnsafePointer<hal_atomic_word>
    @usableFromInline let exposureClock: UnsafePointer<hal_atomic_word>?

    init(_ slot: HandleSlot, defaultValue: Value) {
        self.defaultValue = defaultValue
        cache = slot.cache
        generationWord = slot.domain.generationWord
        exposureClock = slot.domain.exposureClock
    }

    /// The flag key this handle reads.
    public var key: String { HandleSlot.from(cache)._withUnsafeGuaranteedRef { $0.key } }

    /// The flag's current value, or ``defaultValue`` (same rules as the keyed reads).
    @inlinable
    public var value: Value {
        let requested = Value._flagValueKind
        guard requested == .bool || requested == .int || requested == .double else {
            return _halyardHandleEvaluation(cache, defaultValue).value
        }
        // Scalars: a seqlock read of the cache, tagged with the store generation. Every field
        // of `self` is a plain word (no reference count), and the slow paths are non-generic
        // functions of the cache pointer.
        let cache = self.cache
        let generation = hal_load_acquire(generationWord)
        var bits: UInt64 = 0
        var info: UInt = 0
        if !hal_handle_cache_read(cache, generation, &bits, &info) {
            // Returned in registers, not through `&bits`: an address passed to an opaque call
            // kept `bits` in a stack slot on the fast path too (a store and a reload per read),
            // and some holding patterns then measured 4.4 instead of 2.3 ns.
            (bits, info) = _halyardResolveHandle(cache, requested)
        }
        guard info & 0xFF == 1 /* ReadOutcome.success */ else {
            // A code default (ReadOutcome.codeDefault) is a successful read: it records too.
            if info & 0xFF == 2, let clock = exposureClock {
                let mark = hal_handle_exposed_until(cache)
                if mark & 0xFFFF_FFFF != UInt64(truncatingIfNeeded: generation) & 0xFFFF_FFFF
                    || mark >> 32 <= UInt64(hal_load_relaxed(clock))
                {
                    _halyardRecordHandleDefaultExposure(cache, generation, defaultValue)
                }
            }
            return defaultValue
        }
        if let clock = exposureClock {
            let mark = hal_handle_exposed_until(cache)
            if mark & 0xFFFF_FFFF != UInt64(truncatingIfNeeded: generation) & 0xFFFF_FFFF
                || mark >> 32 <= UInt64(hal_load_relaxed(clock))
            {
                _halyardRecordHandleExposure(cache, generation)
            }
        }
        return Value._fromBits(bits)
    }

    /// The full result of reading the flag now (same rules as the detail reads).
    public var detail: Evaluation<Value> {
        _halyardHandleEvaluation(cache, defaultValue)
    }
}

/// One client's handles: the addresses every handle copies, and one ``HandleSlot`` per
/// (key, type). Created with the client's first handle and never freed (see ``HandleSlot``).
final class HandleDomain: @unchecked Sendable {
    /// The client, weakly: handles must not keep it alive. Written once, in `init`.
    private(set) weak var client: FlagClient?
    /// The store's generation word (kept by the store for as long as the process runs).
    let generationWord: UnsafePointer<hal_atomic_word>
    /// The exposure recorder's coarse clock word, or nil when reads record nothing.
    let exposureClock: UnsafePointer<hal_atomic_word>?
    /// Keeps the object that owns `exposureClock` alive (and nothing else of the recorder).
    private let exposureClockOwner: AnyObject?
    private let slots = Locked<[SlotKey: HandleSlot]>([:])

    private struct SlotKey: Hashable {
        var key: String
        var kind: _FlagValueKind
    }

    init(client: FlagClient) {
        self.client = client
        generationWord = client.store.shareGenerationWord()
        exposureClock = client.exposureClock
        exposureClockOwner = client.exposureClock == nil ? nil : client.exposureSink?.coarseClockOwner
    }

    /// The slot for (key, kind), created on first use.
    func slot(_ key: String, _ kind: _FlagValueKind) -> HandleSlot {
        slots.withLock { slots in
            if let slot = slots[SlotKey(key: key, kind: kind)] { return slot }
            let slot = HandleSlot(domain: self, key: key)
            slots[SlotKey(key: key, kind: kind)] = slot
            return slot
        }
    }
}

/// The shared state behind every handle of one (client, key, type): the seqlock cache and
/// the key, for the slow paths.
///
/// Handles hold only the cache's address, never a reference, so nothing tells when the last
/// one is gone: slots (and their domain) are immortal — one 64-byte cache and one small object
/// per distinct key and type a client ever made a handle for. The cache's `owner` leads back
/// here (unretained) so the slow paths can start from the cache pointer alone.
final class HandleSlot: @unchecked Sendable {
    let key: String
    unowned(unsafe) let domain: HandleDomain
    let cache: UnsafeMutablePointer<hal_handle_cache>

    init(domain: HandleDomain, key: String) {
        self.domain = domain
        self.key = key
        let raw = UnsafeMutableRawPointer.allocate(
            byteCount: MemoryLayout<hal_handle_cache>.stride, alignment: 64)
        cache = raw.bindMemory(to: hal_handle_cache.self, capacity: 1)
        cache.initialize(
            to: hal_handle_cache(
                seq: 0, generation: 0, bits: 0, info: 0, exposed_until: hal_atomic_u64(value: 0), owner: nil))
        // Immortal: the domain's table keeps the slot, and the domain itself is leaked below.
        cache.pointee.owner = UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())
    }

    static func from(_ cache: UnsafeMutablePointer<hal_handle_cache>) -> Unmanaged<HandleSlot> {
        Unmanaged<HandleSlot>.fromOpaque(cache.pointee.owner!)
    }

    /// Resolves against the current snapshot, refreshes the cache, and returns the info word
    /// (outcome | index << 8); `bits` receives the scalar bits. Only lookup and copy-out run
    /// under the protection.
    func resolve(_ requested: _FlagValueKind, _ bits: inout UInt64) -> UInt {
        // The client is gone: serve the default and leave the cache alone.
        guard let client = domain.client else { return UInt(ReadOutcome.notReady.rawValue) }
        let key = self.key
        let cache = self.cache
        let exposures = client.exposureClock != nil
        var resolvedBits: UInt64 = 0
        let info = client.store.withCurrent { snapshot -> UInt in
            guard let snapshot else {
                hal_handle_cache_write(cache, 0, 0, UInt(ReadOutcome.notReady.rawValue))
                return UInt(ReadOutcome.notReady.rawValue)
            }
            let generation = UInt(truncatingIfNeeded: snapshot.generation)
            guard let index = snapshot.index(of: key) else {
                hal_handle_cache_write(cache, generation, 0, UInt(ReadOutcome.flagNotFound.rawValue))
                return UInt(ReadOutcome.flagNotFound.rawValue)
            }
            let entry = snapshot.entries[index]
            let outcome = entry.kind.outcome(as: requested)
            resolvedBits = entry.bits(as: requested)
            let info = UInt(outcome.rawValue) | UInt(index) << 8
            hal_handle_cache_write(cache, generation, resolvedBits, info)
            if (outcome == .success || outcome == .codeDefault) && exposures {
                // Start from the snapshot's slot (inherited across swaps while the variant is
                // unchanged), tagged with this generation; the read then checks it as usual.
                let deadline = UInt64(hal_load_relaxed(snapshot.exposureSlots + index))
                hal_handle_set_exposed_until(cache, Self.mark(deadline, generation))
            }
            return info
        }
        bits = resolvedBits
        return info
    }

    /// The handle's exposure mark: the deadline in the high 32 bits, the generation's low 32
    /// (``ExposureMark/encode(deadline:generation:)``'s rule; `ExposureMarkTests` checks they
    /// agree). The handle path keeps its own copy of the mark and of the check in ``FlagHandle/value``:
    /// routed through ``ExposureMark``, a handle read measured 8 % slower in `halyard-bench`
    /// (2.37 against 2.18 ns, alternated builds; the cause was not found), and this is the
    /// fastest read the library has.
    static func mark(_ deadline: UInt64, _ generation: UInt) -> UInt64 {
        deadline << 32 | UInt64(truncatingIfNeeded: generation) & 0xFFFF_FFFF
    }

    /// Records the exposure for the snapshot at `generation` (when it is still the current one)
    /// and refreshes the handle's mark. The recorder (a lock, the injected clock) is called
    /// after the protection ends, with the snapshot retained for the slot store.
    func recordExposure(generation: UInt, servedDefault: JSONValue? = nil) {
        guard let client = domain.client else { return }
        let key = self.key
        let cache = self.cache
        let clock = client.exposureClock
        var pending: UnsafeMutableRawPointer?
        let index = client.store.withCurrent { snapshot -> Int in
            guard let snapshot, UInt(truncatingIfNeeded: snapshot.generation) == generation,
                let index = snapshot.index(of: key)
            else { return -1 }
            let deadline = hal_load_relaxed(snapshot.exposureSlots + index)
            if let clock, deadline <= hal_load_relaxed(clock) {
                pending = Unmanaged.passRetained(snapshot).toOpaque()
            } else {
                // Exposed already by another read in this window: only the mark is stale.
                hal_handle_set_exposed_until(cache, Self.mark(UInt64(deadline), generation))
            }
            return index
        }
        guard let pending, index >= 0 else { return }
        let deadline = client.recordRetainedExposure(pending, index, servedDefault: servedDefault)
        hal_handle_set_exposed_until(cache, Self.mark(UInt64(deadline), generation))
    }

    /// `handle.detail`, and `value` for String and JSON handles: a keyed read.
    func evaluate<Value: FlagValue>(_ defaultValue: Value) -> Evaluation<Value> {
        guard let client = domain.client else {
            return Evaluation(
                key: key, value: defaultValue, reason: .error, errorCode: .providerNotReady,
                errorMessage: "the client of this handle no longer exists")
        }
        return client.evaluation(key, default: defaultValue)
    }
}

// The slow paths of `FlagHandle.value`, as functions of the cache pointer. A handle holds no
// reference, so its callers have nothing to retain around these calls.

/// Not API.
@usableFromInline @inline(never)
func _halyardResolveHandle(
    _ cache: UnsafeMutablePointer<hal_handle_cache>, _ requested: _FlagValueKind
) -> (bits: UInt64, info: UInt) {
    var bits: UInt64 = 0
    let info = HandleSlot.from(cache)._withUnsafeGuaranteedRef { $0.resolve(requested, &bits) }
    return (bits, info)
}

/// Not API.
@usableFromInline @inline(never)
func _halyardRecordHandleExposure(_ cache: UnsafeMutablePointer<hal_handle_cache>, _ generation: UInt) {
    HandleSlot.from(cache)._withUnsafeGuaranteedRef { $0.recordExposure(generation: generation) }
}

/// Not API: the exposure slow path of a scalar handle serving a code default (the served flag
/// had no value), with the default as the exposure's value.
@usableFromInline @inline(never)
func _halyardRecordHandleDefaultExposure<Value: FlagValue>(
    _ cache: UnsafeMutablePointer<hal_handle_cache>, _ generation: UInt, _ defaultValue: Value
) {
    let servedDefault = ReadRules.exposedValue(of: defaultValue)
    HandleSlot.from(cache)._withUnsafeGuaranteedRef {
        $0.recordExposure(generation: generation, servedDefault: servedDefault)
    }
}

/// Not API.
@usableFromInline
func _halyardHandleEvaluation<Value: FlagValue>(
    _ cache: UnsafeMutablePointer<hal_handle_cache>, _ defaultValue: Value
) -> Evaluation<Value> {
    HandleSlot.from(cache)._withUnsafeGuaranteedRef { $0.evaluate(defaultValue) }
}

extension FlagClient {
    /// Resolves `key` once and returns a handle whose ``FlagHandle/value`` is the fastest read.
    ///
    /// ```swift
    /// let maxItems = flags.handle("max.items", default: 3)
    /// let limit = maxItems.value
    /// ```
    ///
    /// Handles for the same key and type share one cache; making many is cheap and bounded.
    public func handle<Value: FlagValue>(_ key: String, default defaultValue: Value) -> FlagHandle<Value> {
        let kind = Value._flagValueKind
        let handle = FlagHandle(handleDomain.slot(key, kind), defaultValue: defaultValue)
        // Resolve the cache now so the first `value` is the fast path; creating a handle serves
        // nothing to the program, so it records no exposure (the first `value` does).
        if kind == .bool || kind == .int || kind == .double { _ = _halyardResolveHandle(handle.cache, kind) }
        return handle
    }

    /// The client's handle domain, created (and made immortal) with the first handle.
    var handleDomain: HandleDomain {
        handleDomainBox.withLock { box in
            if let domain = box { return domain }
            let domain = HandleDomain(client: self)
            // Leaked on purpose: handles hold the addresses of its caches (see HandleSlot).
            _ = Unmanaged.passRetained(domain)
            box = domain
            return domain
        }
    }
}
