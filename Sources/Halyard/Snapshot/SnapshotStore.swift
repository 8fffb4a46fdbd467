package import CHalyardAtomics
import Dispatch

/// Holds the current ``Snapshot`` and lets any number of threads read it without locks.
///
/// - Reads (``protect()`` on the hot paths, ``withCurrent(_:)`` on slow ones) are lock-free and do no atomic
///   read-modify-write on shared memory: they load the snapshot pointer, publish it in the
///   calling thread's own hazard slot, re-check the pointer, use the snapshot, and clear the
///   slot. No retain/release per read. Nothing but Halyard's own lookup and copy-out may run
///   inside: no user code, no lock, no read of another store (debug builds trap on a nested
///   protect).
/// - Publishing (``publish(_:)``) stores the new generation, then exchanges the pointer: a reader
///   that sees the new snapshot sees its generation too, so handle reads (which trust the
///   generation word) never go back in time relative to keyed reads (which trust the pointer).
/// - Reclamation uses hazard pointers with an asymmetric fence (Linux `membarrier`, or a
///   symmetric `seq_cst` fence: `HALYARD_FENCE`): a replaced snapshot is released only after a
///   heavy fence and a scan of every thread's hazard slot finds no reader still using it.
///   Retired snapshots that are still protected are retried on the next publish and by a
///   deferred pass (20 ms, doubling to 1 s while a slot keeps pinning one), so they are freed
///   once readers move on, and at most one snapshot per reading thread can be waiting.
///   See docs/architecture.md, "Snapshot store and memory reclamation".
package final class SnapshotStore: @unchecked Sendable {
    /// The current-pointer and generation words, each on its own 128-byte block.
    private let words: UnsafeMutablePointer<hal_store_words>
    private let current: UnsafeMutablePointer<hal_atomic_word>
    private let generationWord: UnsafeMutablePointer<hal_atomic_word>
    private struct WriterState {
        var generation: UInt64 = 0
        var retired: [UnsafeMutableRawPointer] = []
        var hazards: [UInt] = Array(repeating: 0, count: 64)
        var deferredPassScheduled = false
        /// Set once a handle holds the words' addresses: the words then outlive the store.
        var wordsShared = false
        var testHookBetweenStores: (@Sendable () -> Void)?
    }
    private let writer = Locked(WriterState())

    /// The generation word's value after the store is gone: no handle cache is ever tagged with
    /// it, so handles that outlive their client fall to the slow path (and serve the default).
    package static let closedGeneration = UInt.max

    /// The first and the longest delay of the deferred reclamation pass.
    package static let deferredPassDelays = (first: 20, longest: 1000)  // milliseconds

    /// Creates an empty store (reads see `nil` until the first publish).
    package init() {
        hal_hazard_initialize()
        words = hal_store_words_allocate()
        current = UnsafeMutableRawPointer(words).assumingMemoryBound(to: hal_atomic_word.self)
        generationWord = UnsafeMutableRawPointer(words).advanced(by: 128).assumingMemoryBound(
            to: hal_atomic_word.self)
    }

    deinit {
        // No reader can be inside this store: readers reach it through a strong reference.
        // (Handles reach only the generation word, which is kept when they exist.)
        if let raw = UnsafeMutableRawPointer(bitPattern: hal_load_acquire(current)) {
            Unmanaged<Snapshot>.fromOpaque(raw).release()
        }
        let shared = writer.withLock { state -> Bool in
            for raw in state.retired { Unmanaged<Snapshot>.fromOpaque(raw).release() }
            state.retired.removeAll()
            return state.wordsShared
        }
        if shared {
            hal_store_release(current, 0)
            hal_store_release(generationWord, Self.closedGeneration)
        } else {
            hal_store_words_free(words)
        }
    }

    /// The word holding the current generation, for handles that cache it. Calling this marks
    /// the words as shared: they are then never freed (handles are plain values that may outlive
    /// the store; after the store is gone the word reads ``closedGeneration``).
    package func shareGenerationWord() -> UnsafePointer<hal_atomic_word> {
        writer.withLock { $0.wordsShared = true }
        return UnsafePointer(generationWord)
    }

    /// The generation word's address, valid while the store is (its owner's keyed reads load
    /// it directly; handles, which may outlive the store, use ``shareGenerationWord()``).
    package var generationAddress: UnsafePointer<hal_atomic_word> { UnsafePointer(generationWord) }

    /// The generation of the current snapshot (0 before the first publish). One plain load.
    @inline(__always)
    package var generation: UInt64 { UInt64(hal_load_acquire(generationWord)) }

    /// The calling thread's hazard record, checked (debug builds) to protect nothing yet.
    @inline(__always)
    private static func record() -> UnsafeMutablePointer<hal_hazard_record> {
        let record = hal_hazard_record_for_current_thread()!
        assert(
            hal_hazard_is_clear(record),
            "nested protected read: code running under a snapshot's protection read a store again")
        return record
    }

    /// Runs `body` with the current snapshot (or nil before the first publish), protected from
    /// reclamation for the duration of the call. `body` must not escape the snapshot and may run
    /// only Halyard's own lookup and copy-out: no user code, no lock, no read of a store (one
    /// hazard slot per thread). Copy out what is needed, return, then call out.
    @inline(__always)
    package func withCurrent<R>(_ body: (Snapshot?) -> R) -> R {
        let record = Self.record()
        let raw = hal_hazard_protect(record, current)
        defer { hal_hazard_clear(record) }
        guard let pointer = UnsafeRawPointer(bitPattern: raw) else { return body(nil) }
        return Unmanaged<Snapshot>.fromOpaque(pointer)._withUnsafeGuaranteedRef { body($0) }
    }

    /// The hot read path's protection, without a closure: returns the calling thread's hazard
    /// record and the protected snapshot's address (nil before the first publish). The caller
    /// must call ``endProtection(_:)`` with the record on every path, and in between may only
    /// look up and copy out (same rules as ``withCurrent(_:)``). Used by the scalar reads so that
    /// the whole read compiles into one function with no closure context.
    @inline(__always)
    package func protect() -> (record: UnsafeMutablePointer<hal_hazard_record>, snapshot: UnsafeRawPointer?) {
        let record = Self.record()
        return (record, UnsafeRawPointer(bitPattern: hal_hazard_protect(record, current)))
    }

    /// Ends a protection started by ``protect()``.
    @inline(__always)
    package static func endProtection(_ record: UnsafeMutablePointer<hal_hazard_record>) {
        hal_hazard_clear(record)
    }

    /// Tests only: `body` gets the current snapshot's address (or nil), protected like
    /// ``withCurrent(_:)``, without Swift forming a reference to it (debug builds would retain a
    /// reference, which would keep a wrongly freed snapshot alive and hide the bug).
    package func withCurrentAddress<R>(_ body: (UnsafeRawPointer?) -> R) -> R {
        let record = Self.record()
        let raw = hal_hazard_protect(record, current)
        defer { hal_hazard_clear(record) }
        return body(UnsafeRawPointer(bitPattern: raw))
    }

    /// A strong reference to the current snapshot (slow path: one retain).
    package var currentSnapshot: Snapshot? { withCurrent { $0 } }

    /// Publishes `snapshot` as the current one and retires the previous one. Returns the new
    /// generation.
    ///
    /// Order: the generation word is stored (release) before the pointer is exchanged (acquire-
    /// release). A reader that loads the new pointer therefore also sees the new generation, so
    /// a handle read made after a keyed read that saw the new snapshot re-resolves instead of
    /// serving its older cached value; a handle that sees the new generation while the old
    /// pointer is still current re-resolves against the old snapshot and tags its cache with
    /// that snapshot's own generation, which then no longer matches the word.
    @discardableResult
    package func publish(_ snapshot: Snapshot) -> UInt64 {
        let (generation, needsDeferredPass) = writer.withLock { state -> (UInt64, Bool) in
            state.generation += 1
            snapshot.generation = state.generation
            let fresh = Unmanaged.passRetained(snapshot).toOpaque()
            hal_store_release(generationWord, UInt(truncatingIfNeeded: state.generation))
            state.testHookBetweenStores?()
            let old = hal_exchange(current, UInt(bitPattern: fresh))
            if let oldPointer = UnsafeMutableRawPointer(bitPattern: old) {
                state.retired.append(oldPointer)
            }
            Self.reclaim(&state)
            let schedule = !state.retired.isEmpty && !state.deferredPassScheduled
            if schedule { state.deferredPassScheduled = true }
            return (state.generation, schedule)
        }
        if needsDeferredPass { scheduleDeferredPass(afterMilliseconds: Self.deferredPassDelays.first) }
        return generation
    }

    /// Frees every retired snapshot no reader is using. Publishing does this already; tests
    /// and idle timers may call it to prove retired snapshots do not linger.
    /// Returns how many retired snapshots are still waiting for readers.
    @discardableResult
    package func reclaim() -> Int {
        writer.withLock { state in
            Self.reclaim(&state)
            return state.retired.count
        }
    }

    /// Tests only: runs `hook` inside every publish between its two stores (nil removes it).
    package func setTestHookBetweenStores(_ hook: (@Sendable () -> Void)?) {
        writer.withLock { $0.testHookBetweenStores = hook }
    }

    /// How many replaced snapshots are waiting for readers to move on.
    package var retiredCount: Int { writer.withLock { $0.retired.count } }

    /// Retries reclamation after `delay` ms, then again with the delay doubled (up to 1 s) while
    /// a reader keeps a retired snapshot pinned; stops once nothing is retired.
    private func scheduleDeferredPass(afterMilliseconds delay: Int) {
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + .milliseconds(delay)) {
            [weak self] in
            guard let self else { return }
            let again = self.writer.withLock { state -> Bool in
                Self.reclaim(&state)
                state.deferredPassScheduled = !state.retired.isEmpty
                return state.deferredPassScheduled
            }
            if again {
                self.scheduleDeferredPass(afterMilliseconds: Self.nextDeferredDelay(after: delay))
            }
        }
    }

    /// The deferred pass's back-off: doubling, capped at 1 s.
    package static func nextDeferredDelay(after delay: Int) -> Int {
        min(delay * 2, deferredPassDelays.longest)
    }

    private static func reclaim(_ state: inout WriterState) {
        guard !state.retired.isEmpty else { return }
        guard hal_hazard_heavy_fence() else { return }
        var total = 0
        while true {
            total = state.hazards.withUnsafeMutableBufferPointer { buffer in
                Int(hal_hazard_collect(buffer.baseAddress, buffer.count))
            }
            if total <= state.hazards.count { break }
            state.hazards = Array(repeating: 0, count: total * 2)
        }
        let protected = state.hazards.prefix(total)
        var kept: [UnsafeMutableRawPointer] = []
        for raw in state.retired {
            if protected.contains(UInt(bitPattern: raw)) {
                kept.append(raw)
            } else {
                Unmanaged<Snapshot>.fromOpaque(raw).release()
            }
        }
        state.retired = kept
    }
}
