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
        // The exposure mark's check, written out (``HandleSlot/mark(_:_:)`` says why).
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
