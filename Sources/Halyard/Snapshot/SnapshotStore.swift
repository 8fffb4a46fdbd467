import CHalyardAtomics
import Dispatch

/// Holds the current ``Snapshot`` and lets any number of threads read it without locks.
///
/// - Reads (``withCurrent(_:)``) are lock-free and do no atomic read-modify-write on shared
///   memory: they load the snapshot pointer, publish it in the calling thread's own hazard slot,
///   re-check the pointer, use the snapshot, and clear the slot. No retain/release per read.
/// - Publishing (``publish(_:)``) is one atomic exchange; a reader sees either the whole old
///   snapshot or the whole new one, never a mix, never an empty window.
/// - Reclamation uses hazard pointers with an asymmetric fence (Linux `membarrier`): a replaced
///   snapshot is released only after a heavy fence and a scan of every thread's hazard slot
///   finds no reader still using it. Retired snapshots that are still protected are retried on
///   the next publish and by a deferred pass shortly after, so they are freed once readers move
///   on, and at most one snapshot per reading thread can be waiting at any time.
///   See docs/architecture.md, "Memory reclamation".
package final class SnapshotStore: @unchecked Sendable {
    private let current: UnsafeMutablePointer<hal_atomic_word>
    private let generationWord: UnsafeMutablePointer<hal_atomic_word>
    private struct WriterState {
        var generation: UInt64 = 0
        var retired: [UnsafeMutableRawPointer] = []
        var hazards: [UInt] = Array(repeating: 0, count: 64)
        var deferredPassScheduled = false
    }
    private let writer = Locked(WriterState())

    /// Creates an empty store (reads see `nil` until the first publish).
    package init() {
        hal_hazard_initialize()
        current = .allocate(capacity: 1)
        current.initialize(to: hal_atomic_word(value: 0))
        generationWord = .allocate(capacity: 1)
        generationWord.initialize(to: hal_atomic_word(value: 0))
    }

    deinit {
        // No reader can be inside this store: readers reach it through a strong reference.
        if let raw = UnsafeMutableRawPointer(bitPattern: hal_load_acquire(current)) {
            Unmanaged<Snapshot>.fromOpaque(raw).release()
        }
        writer.withLock { state in
            for raw in state.retired { Unmanaged<Snapshot>.fromOpaque(raw).release() }
            state.retired.removeAll()
        }
        current.deallocate()
        generationWord.deallocate()
    }

    /// The word holding the current generation, for handles that cache it (valid while the
    /// store lives).
    package var generationPointer: UnsafePointer<hal_atomic_word> { UnsafePointer(generationWord) }

    /// The generation of the current snapshot (0 before the first publish). One plain load.
    @inline(__always)
    package var generation: UInt64 { UInt64(hal_load_acquire(generationWord)) }

    /// Runs `body` with the current snapshot (or nil before the first publish), protected from
    /// reclamation for the duration of the call. `body` must not escape the snapshot, must not
    /// call back into user code, and must not read from a store again (one hazard slot per thread).
    @inline(__always)
    package func withCurrent<R>(_ body: (Snapshot?) -> R) -> R {
        let record = hal_hazard_record_for_current_thread()!
        let raw = hal_hazard_protect(record, current)
        defer { hal_hazard_clear(record) }
        guard let pointer = UnsafeRawPointer(bitPattern: raw) else { return body(nil) }
        return Unmanaged<Snapshot>.fromOpaque(pointer)._withUnsafeGuaranteedRef { body($0) }
    }

    /// The read path's form of ``withCurrent(_:)``: `body` gets the snapshot non-optional and
    /// at +0 (no retain, no Optional wrapping, which would copy the reference); `empty` is
    /// returned before the first publish. Same rules for `body` as ``withCurrent(_:)``.
    @inline(__always)
    package func read<R>(orElse empty: @autoclosure () -> R, _ body: (Snapshot) -> R) -> R {
        let record = hal_hazard_record_for_current_thread()!
        let raw = hal_hazard_protect(record, current)
        defer { hal_hazard_clear(record) }
        guard let pointer = UnsafeRawPointer(bitPattern: raw) else { return empty() }
        return Unmanaged<Snapshot>.fromOpaque(pointer)._withUnsafeGuaranteedRef(body)
    }

    /// A strong reference to the current snapshot (slow path: one retain).
    package var currentSnapshot: Snapshot? { withCurrent { $0 } }

    /// Publishes `snapshot` as the current one with a single atomic exchange and retires the
    /// previous one. Returns the new generation.
    @discardableResult
    package func publish(_ snapshot: Snapshot) -> UInt64 {
        let (generation, needsDeferredPass) = writer.withLock { state -> (UInt64, Bool) in
            state.generation += 1
            snapshot.generation = state.generation
            let fresh = Unmanaged.passRetained(snapshot).toOpaque()
            let old = hal_exchange(current, UInt(bitPattern: fresh))
            hal_store_release(generationWord, UInt(state.generation))
            if let oldPointer = UnsafeMutableRawPointer(bitPattern: old) {
                state.retired.append(oldPointer)
            }
            Self.reclaim(&state)
            let schedule = !state.retired.isEmpty && !state.deferredPassScheduled
            if schedule { state.deferredPassScheduled = true }
            return (state.generation, schedule)
        }
        if needsDeferredPass { scheduleDeferredPass() }
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

    /// How many replaced snapshots are waiting for readers to move on.
    package var retiredCount: Int { writer.withLock { $0.retired.count } }

    private func scheduleDeferredPass() {
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + .milliseconds(20)) { [weak self] in
            guard let self else { return }
            let again = self.writer.withLock { state -> Bool in
                Self.reclaim(&state)
                state.deferredPassScheduled = !state.retired.isEmpty
                return state.deferredPassScheduled
            }
            if again { self.scheduleDeferredPass() }
        }
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
