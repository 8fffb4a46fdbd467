import CHalyardAtomics

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
