public import CHalyardAtomics

/// The exposure mark of a cached answer (the `exposed_until` word of a `hal_handle_cache`: a
/// handle's, or an answer in ``KeyedReadCache``), written and checked only here:
///
///     deadline << 32 | generation & 0xFFFF_FFFF
///
/// `deadline` is the coarse second (the exposure recorder's clock) until which a read needs no
/// record — the flag's exposure slot when the mark was set — and the low 32 bits are those of
/// the snapshot generation it was set for. A read at another generation (compared on the low
/// 32 bits alone: a generation 2³² snapshots later passes for this one, as it always has), or
/// at or after the deadline, goes to the slow path, which records when the slot says so and
/// sets a new mark. A zeroed mark (a new cache) is always due: deadline 0 is never after the
/// clock.
///
/// Relaxed loads and stores: the mark only lets a read skip the slow path; what is recorded is
/// decided there, from the flag's exposure slot.
@usableFromInline
enum ExposureMark {
    /// The mark for `deadline` (a coarse second: the high 32 bits) set for the snapshot at
    /// `generation` (its low 32 bits).
    @inlinable @inline(__always)
    static func encode(deadline: UInt32, generation: UInt) -> UInt64 {
        UInt64(deadline) << 32 | UInt64(truncatingIfNeeded: generation) & 0xFFFF_FFFF
    }

    /// Whether an exposure may be due for a read at `generation` holding `mark`: the mark is
    /// for another generation (low 32 bits), or its deadline is not after the coarse clock's
    /// second. The clock is loaded only when the generation matches.
    @inlinable @inline(__always)
    static func isDue(_ mark: UInt64, generation: UInt, clock: UnsafePointer<hal_atomic_word>) -> Bool {
        mark & 0xFFFF_FFFF != UInt64(truncatingIfNeeded: generation) & 0xFFFF_FFFF
            || mark >> 32 <= UInt64(hal_load_relaxed(clock))
    }

    /// Sets `cache`'s mark: ``encode(deadline:generation:)``, one relaxed store.
    @inlinable @inline(__always)
    static func store(in cache: UnsafeMutablePointer<hal_handle_cache>, deadline: UInt32, generation: UInt) {
        hal_handle_set_exposed_until(cache, encode(deadline: deadline, generation: generation))
    }

    /// ``isDue(_:generation:clock:)`` for `cache`'s mark (one relaxed load).
    @inlinable @inline(__always)
    static func isDue(
        in cache: UnsafePointer<hal_handle_cache>, generation: UInt, clock: UnsafePointer<hal_atomic_word>
    ) -> Bool {
        isDue(hal_handle_exposed_until(cache), generation: generation, clock: clock)
    }
}
