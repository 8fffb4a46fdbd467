package import CHalyardAtomics

/// Coarse time for the read path: whole seconds since the recorder started, in one machine word
/// readable from any thread with one relaxed load (no lock, no read-modify-write).
///
/// It only moves forward: writers (the recorder's ticker, once a second, and every slow-path
/// call) advance it with a compare-and-swap "store max", so a late writer never moves it back.
package final class ExposureCoarseClock: @unchecked Sendable {
    /// The word holding the coarse seconds. Allocated once, never moved, freed in `deinit`;
    /// read it with `hal_load_relaxed`.
    package let word: UnsafeMutablePointer<hal_atomic_word>

    /// Creates a coarse clock reading 0.
    package init() {
        word = UnsafeMutablePointer<hal_atomic_word>.allocate(capacity: 1)
        word.initialize(to: hal_atomic_word(value: 0))
    }

    /// Frees the word.
    deinit {
        word.deinitialize(count: 1)
        word.deallocate()
    }

    /// The coarse seconds: one relaxed atomic load.
    @inline(__always)
    package func now() -> UInt32 {
        UInt32(truncatingIfNeeded: hal_load_relaxed(word))
    }

    /// Moves the clock forward to `seconds` (never back); returns the resulting value.
    @discardableResult
    package func advance(to seconds: UInt32) -> UInt32 {
        var current = hal_load_relaxed(word)
        while UInt(seconds) > current {
            var expected = current
            if hal_compare_exchange(word, &expected, UInt(seconds)) { return seconds }
            current = expected
        }
        return UInt32(truncatingIfNeeded: current)
    }
}
