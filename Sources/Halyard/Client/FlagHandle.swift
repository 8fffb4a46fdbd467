import CHalyardAtomics

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
public final class FlagHandle<Value: FlagValue>: @unchecked Sendable {
    /// The flag key this handle reads.
    public var key: String { core.key }
    /// The value served when the flag cannot be read as `Value`.
    public let defaultValue: Value

    // `@usableFromInline` because `value` is `@inlinable`: it is the measured hot path, and an
    // unspecialized generic getter called across modules costs ~10 ns instead of ~1.
    @usableFromInline let core: HandleCore
    @usableFromInline let cache: UnsafeMutablePointer<hal_handle_cache>
    @usableFromInline let generationWord: UnsafePointer<hal_atomic_word>
    @usableFromInline nonisolated(unsafe) let exposureClock: UnsafePointer<hal_atomic_word>?

    init(client: FlagClient, key: String, defaultValue: Value) {
        self.defaultValue = defaultValue
        core = HandleCore(client: client, key: key)
        cache = core.cache
        generationWord = client.store.generationPointer
        exposureClock = client.exposureClock
    }

    /// The flag's current value, or ``defaultValue`` (same rules as the keyed reads).
    @inlinable
    public var value: Value {
        let requested = Value._flagValueKind
        guard requested == .bool || requested == .int || requested == .double else {
            return core.resolveValue(defaultValue)
        }
        // Scalars: a seqlock read of the cache, tagged with the store generation. Everything
        // is loaded before any call, and the slow paths are non-generic functions of the cache
        // pointer, so nothing here needs the handle itself to stay retained across a call.
        let cache = self.cache
        let clock = exposureClock
        let fallback = defaultValue
        let generation = hal_load_acquire(generationWord)
        var bits: UInt64 = 0
        var info: UInt = 0
        if !hal_handle_cache_read(cache, generation, &bits, &info) {
            info = _halyardResolveHandle(cache, requested, &bits)
        }
        guard info & 0xFF == 1 /* ReadOutcome.success */ else { return fallback }
        if let clock {
            let mark = hal_handle_exposed_until(cache)
            if mark & 0xFFFF_FFFF != generation & 0xFFFF_FFFF || mark >> 32 <= hal_load_relaxed(clock) {
                _halyardRecordHandleExposure(cache, generation)
            }
        }
        return Value._fromBits(bits)
    }

    /// The full result of reading the flag now (same rules as the detail reads).
    public var detail: Evaluation<Value> {
        core.client.evaluate(core.key, defaultValue)
    }
}

/// The non-generic part of a handle: its key, client and cache (not API).
///
/// The cache's `owner` points back here (unretained) so the slow paths can start from the
/// cache pointer alone.
public final class HandleCore: @unchecked Sendable {
    let key: String
    let client: FlagClient
    @usableFromInline let cache: UnsafeMutablePointer<hal_handle_cache>

    init(client: FlagClient, key: String) {
        self.client = client
        self.key = key
        cache = .allocate(capacity: 1)
        cache.initialize(to: hal_handle_cache(seq: 0, generation: 0, bits: 0, info: 0, exposed_until: 0, owner: nil))
        cache.pointee.owner = UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())
    }

    deinit { cache.deallocate() }

    static func from(_ cache: UnsafeMutablePointer<hal_handle_cache>) -> Unmanaged<HandleCore> {
        Unmanaged<HandleCore>.fromOpaque(cache.pointee.owner!)
    }

    /// Resolves against the current snapshot, refreshes the cache, and returns the info word
    /// (outcome | index << 8); `bits` receives the scalar bits.
    func resolve(_ requested: _FlagValueKind, _ bits: inout UInt64) -> UInt {
        let key = self.key
        let cache = self.cache
        let client = self.client
        var resolvedBits: UInt64 = 0
        let info = client.store.withCurrent { snapshot -> UInt in
            guard let snapshot else {
                hal_handle_cache_write(cache, 0, 0, UInt(ReadOutcome.notReady.rawValue))
                return UInt(ReadOutcome.notReady.rawValue)
            }
            let generation = UInt(snapshot.generation)
            guard let index = snapshot.index(of: key) else {
                hal_handle_cache_write(cache, generation, 0, UInt(ReadOutcome.flagNotFound.rawValue))
                return UInt(ReadOutcome.flagNotFound.rawValue)
            }
            let entry = snapshot.entries[index]
            let outcome = entry.kind.outcome(as: requested)
            resolvedBits = entry.bits(as: requested)
            let info = UInt(outcome.rawValue) | UInt(index) << 8
            hal_handle_cache_write(cache, generation, resolvedBits, info)
            if outcome == .success && client.exposureClock != nil {
                // Start from the snapshot's slot (inherited across swaps while the variant is
                // unchanged), tagged with this generation; the read then checks it as usual.
                let deadline = hal_load_relaxed(snapshot.exposureSlots + index)
                hal_handle_set_exposed_until(cache, deadline << 32 | (generation & 0xFFFF_FFFF))
            }
            return info
        }
        bits = resolvedBits
        return info
    }

    /// Records the exposure for the snapshot at `generation` and refreshes the handle's mark.
    func recordExposure(generation: UInt) {
        let key = self.key
        let cache = self.cache
        let client = self.client
        client.store.withCurrent { snapshot in
            guard let snapshot, UInt(snapshot.generation) == generation, let index = snapshot.index(of: key) else {
                return
            }
            client.exposeIfNeeded(snapshot, index)
            hal_handle_set_exposed_until(
                cache, hal_load_relaxed(snapshot.exposureSlots + index) << 32 | (generation & 0xFFFF_FFFF))
        }
    }

    /// String and JSON handles: a keyed read (their values are not cached as bits).
    @usableFromInline
    func resolveValue<Value: FlagValue>(_ defaultValue: Value) -> Value {
        client.evaluate(key, defaultValue).value
    }
}

// The slow paths of `FlagHandle.value`, as non-generic functions of the cache pointer.
// `releasenone`: they never release an object their caller can see (they only balance retains
// of snapshot data they copy), so a caller holding the handle at +0 need not retain it around
// the call.

/// Not API.
@usableFromInline @inline(never) @_effects(releasenone)
func _halyardResolveHandle(
    _ cache: UnsafeMutablePointer<hal_handle_cache>, _ requested: _FlagValueKind, _ bits: inout UInt64
) -> UInt {
    HandleCore.from(cache)._withUnsafeGuaranteedRef { $0.resolve(requested, &bits) }
}

/// Not API.
@usableFromInline @inline(never) @_effects(releasenone)
func _halyardRecordHandleExposure(_ cache: UnsafeMutablePointer<hal_handle_cache>, _ generation: UInt) {
    HandleCore.from(cache)._withUnsafeGuaranteedRef { $0.recordExposure(generation: generation) }
}

extension FlagClient {
    /// Resolves `key` once and returns a handle whose ``FlagHandle/value`` is the fastest read.
    ///
    /// ```swift
    /// let maxItems = flags.handle("max.items", default: 3)
    /// let limit = maxItems.value
    /// ```
    public func handle<Value: FlagValue>(_ key: String, default defaultValue: Value) -> FlagHandle<Value> {
        let handle = FlagHandle(client: self, key: key, defaultValue: defaultValue)
        _ = handle.value
        return handle
    }
}
