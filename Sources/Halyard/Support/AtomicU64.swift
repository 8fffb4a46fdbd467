import CHalyardAtomics

/// A 64-bit value read and written atomically, for the flags and stamps of the slow paths and
/// the service's lookups (a stream's tracking flag, a wave's stale-before time, a one-shot
/// claim).
///
/// Why not `Synchronization.Atomic`: it needs macOS 15 / iOS 18 / tvOS 18 / watchOS 11, and
/// the package supports macOS 13 / iOS 15 / tvOS 15 / watchOS 8. The value lives in a
/// `hal_atomic_u64` this object allocates and never moves, accessed only through the C11
/// builtins of `CHalyardAtomics` (fixed 64 bits on every platform, 32-bit watchOS included).
package final class AtomicU64: @unchecked Sendable {
    private let cell: UnsafeMutablePointer<hal_atomic_u64>

    /// A cell holding `value`.
    package init(_ value: UInt64) {
        cell = UnsafeMutablePointer<hal_atomic_u64>.allocate(capacity: 1)
        cell.initialize(to: hal_atomic_u64(value: value))
    }

    deinit { cell.deallocate() }

    /// The value, with acquire ordering: what was written before the store that put it there
    /// is visible.
    @inline(__always)
    package func load() -> UInt64 { hal_load_acquire_u64(cell) }

    /// The value, with no ordering: for a flag whose readers order nothing by it.
    @inline(__always)
    package func loadRelaxed() -> UInt64 { hal_load_relaxed_u64(cell) }

    /// Stores `value` with release ordering.
    @inline(__always)
    package func store(_ value: UInt64) { hal_store_release_u64(cell, value) }

    /// Replaces `expected` with `desired` (acquire-release) and returns whether it did.
    @inline(__always)
    package func compareExchange(expected: UInt64, desired: UInt64) -> Bool {
        var seen = expected
        return hal_compare_exchange_u64(cell, &seen, desired)
    }
}
