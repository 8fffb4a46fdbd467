import CHalyardAtomics
import Testing

@testable import Halyard

/// The exposure mark of a cached answer (``ExposureMark``): the one encoding every writer uses
/// and the one check every read does, at the edges of its two halves.
@Suite struct ExposureMarkTests {
    /// Runs `body` with a coarse clock word reading `now`.
    static func withClock<T>(_ now: UInt32, _ body: (UnsafePointer<hal_atomic_word>) -> T) -> T {
        var word = hal_atomic_word(value: UInt(now))
        return withUnsafePointer(to: &word) { body($0) }
    }

    /// Whether `mark` is due for a read at `generation` when the clock reads `now`.
    static func isDue(_ mark: UInt64, generation: UInt, now: UInt32) -> Bool {
        withClock(now) { ExposureMark.isDue(mark, generation: generation, clock: $0) }
    }

    @Test func theDeadlineIsTheHighHalfAndTheGenerationTheLowHalf() {
        #expect(ExposureMark.encode(deadline: 5, generation: 7) == 5 << 32 | 7)
        #expect(ExposureMark.encode(deadline: .max, generation: 0) == 0xFFFF_FFFF_0000_0000)
        #expect(ExposureMark.encode(deadline: 0, generation: 0xFFFF_FFFF) == 0xFFFF_FFFF)
    }

    /// The handle path's own copy of the encoding (kept for speed, `HandleSlot.mark`) is the
    /// same rule.
    @Test func theHandlesCopyOfTheEncodingAgrees() {
        var random = SplitMix64(seed: 48)
        for _ in 0..<10_000 {
            let deadline = UInt32(truncatingIfNeeded: random.next())
            let generation = UInt(truncatingIfNeeded: random.next())
            #expect(
                HandleSlot.mark(UInt64(deadline), generation)
                    == ExposureMark.encode(deadline: deadline, generation: generation))
        }
        #expect(HandleSlot.mark(UInt64(UInt32.max), .max) == ExposureMark.encode(deadline: .max, generation: .max))
    }

    @Test func onlyTheGenerationsLow32BitsAreKept() {
        let generation = UInt(truncatingIfNeeded: UInt64(0x1_0000_0007))
        #expect(ExposureMark.encode(deadline: 9, generation: generation) & 0xFFFF_FFFF == 7)
        #if arch(x86_64) || arch(arm64)
            // A generation 2³² snapshots later passes for the one the mark was set for …
            #expect(!Self.isDue(ExposureMark.encode(deadline: 9, generation: 7), generation: generation, now: 8))
            // … and one past the wrap of the low half does not pass for the last before it.
            let last = ExposureMark.encode(deadline: 9, generation: 0xFFFF_FFFF)
            #expect(Self.isDue(last, generation: 0x1_0000_0000, now: 8))
            #expect(!Self.isDue(last, generation: 0x1_FFFF_FFFF, now: 8))
        #endif
        #expect(Self.isDue(ExposureMark.encode(deadline: 9, generation: 7), generation: 8, now: 8))
    }

    @Test func aMarkIsDueFromItsDeadlineSecondOn() {
        let mark = ExposureMark.encode(deadline: 100, generation: 3)
        #expect(!Self.isDue(mark, generation: 3, now: 0))
        #expect(!Self.isDue(mark, generation: 3, now: 99))
        #expect(Self.isDue(mark, generation: 3, now: 100))
        #expect(Self.isDue(mark, generation: 3, now: 101))
        // The last second the clock can show.
        let last = ExposureMark.encode(deadline: .max, generation: 3)
        #expect(!Self.isDue(last, generation: 3, now: .max - 1))
        #expect(Self.isDue(last, generation: 3, now: .max))
    }

    @Test func aZeroedMarkIsAlwaysDue() {
        #expect(Self.isDue(0, generation: 0, now: 0))
        #expect(Self.isDue(0, generation: 1, now: 0))
    }

    @Test func theCachesMarkIsWhatWasStoredInIt() {
        var cache = hal_handle_cache(
            seq: 0, generation: 0, bits: 0, info: 0, exposed_until: hal_atomic_u64(value: 0), owner: nil)
        withUnsafeMutablePointer(to: &cache) { cache in
            ExposureMark.store(in: cache, deadline: 42, generation: 11)
            #expect(hal_handle_exposed_until(cache) == 42 << 32 | 11)
            #expect(!Self.withClock(41) { ExposureMark.isDue(in: cache, generation: 11, clock: $0) })
            #expect(Self.withClock(42) { ExposureMark.isDue(in: cache, generation: 11, clock: $0) })
            #expect(Self.withClock(0) { ExposureMark.isDue(in: cache, generation: 12, clock: $0) })
        }
    }
}
