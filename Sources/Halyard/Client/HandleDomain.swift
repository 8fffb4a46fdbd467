import CHalyardAtomics

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
