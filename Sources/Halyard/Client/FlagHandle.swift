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
    public let key: String
    /// The value served when the flag cannot be read as `Value`.
    public let defaultValue: Value

    private let client: FlagClient
    private let generationWord: UnsafePointer<hal_atomic_word>
    private let cache: UnsafeMutablePointer<hal_handle_cache>

    init(client: FlagClient, key: String, defaultValue: Value) {
        self.client = client
        self.key = key
        self.defaultValue = defaultValue
        self.generationWord = client.store.generationPointer
        cache = .allocate(capacity: 1)
        cache.initialize(to: hal_handle_cache(seq: 0, generation: 0, bits: 0, info: 0, exposed_until: 0))
    }

    deinit { cache.deallocate() }

    /// The flag's current value, or ``defaultValue`` (same rules as the keyed reads).
    public var value: Value {
        let generation = hal_load_acquire(generationWord)
        var bits: UInt64 = 0
        var info: UInt = 0
        let requested = Value._flagValueKind
        if requested == .bool || requested == .int || requested == .double,
            hal_handle_cache_read(cache, generation, &bits, &info)
        {
            if info & 0xFF == UInt(ReadOutcome.success.rawValue) {
                if let clock = client.exposureClock {
                    let mark = hal_handle_exposed_until(cache)
                    if mark & 0xFFFF_FFFF != generation & 0xFFFF_FFFF || mark >> 32 <= hal_load_relaxed(clock) {
                        recordExposureSlow(generation: generation)
                    }
                }
                return Value._fromBits(bits)
            }
            return defaultValue
        }
        return resolve()
    }

    /// The full result of reading the flag now (same rules as the detail reads).
    public var detail: Evaluation<Value> {
        client.evaluate(key, defaultValue)
    }

    /// Slow path: resolve against the current snapshot and refresh the cache.
    @inline(never)
    private func resolve() -> Value {
        let requested = Value._flagValueKind
        let key = self.key
        let defaultValue = self.defaultValue
        let cache = self.cache
        let client = self.client
        return client.store.withCurrent { snapshot -> Value in
            guard let snapshot else {
                hal_handle_cache_write(cache, 0, 0, UInt(ReadOutcome.notReady.rawValue))
                return defaultValue
            }
            let generation = UInt(snapshot.generation)
            guard let index = snapshot.index(of: key) else {
                hal_handle_cache_write(cache, generation, 0, UInt(ReadOutcome.flagNotFound.rawValue))
                return defaultValue
            }
            let entry = snapshot.entries[index]
            let outcome = entry.kind.outcome(as: requested)
            let bits = entry.bits(as: requested)
            hal_handle_cache_write(cache, generation, bits, UInt(outcome.rawValue) | UInt(index) << 8)
            guard outcome == .success else { return defaultValue }
            if client.exposureClock != nil {
                // Start from the snapshot's slot (inherited across swaps while the variant is
                // unchanged), tagged with this generation.
                let deadline = hal_load_relaxed(snapshot.exposureSlots + index)
                hal_handle_set_exposed_until(cache, deadline << 32 | (generation & 0xFFFF_FFFF))
                client.exposeIfNeeded(snapshot, index)
                hal_handle_set_exposed_until(
                    cache, hal_load_relaxed(snapshot.exposureSlots + index) << 32 | (generation & 0xFFFF_FFFF))
            }
            switch requested {
            case .bool, .int, .double: return Value._fromBits(bits)
            case .string, .json: return snapshot.flags[index].value.flatMap(Value._fromJSON) ?? defaultValue
            }
        }
    }

    @inline(never)
    private func recordExposureSlow(generation: UInt) {
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
