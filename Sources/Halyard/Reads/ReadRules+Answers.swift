import CHalyardAtomics

// The read rules for an answer cached per key (``KeyedReadCache``): what a cached answer may
// serve without the snapshot, and how a read through the snapshot refreshes it. The answer is
// the outcome ``ReadRules/scalar(_:_:_:_:)`` computed from the snapshot whose generation it
// carries, so serving it applies the same rules as that read; failures are counted on every
// read, as any keyed read counts them, and a read whose exposure may be due goes through the
// snapshot, where ``ReadRules/finish(_:default:as:sink:counters:)`` records it. Each piece is
// small so that `FlagClient._readScalar` can keep its fast path free of saved registers, every
// other path a tail call.

extension ReadRules {
    /// Whether a cached answer's outcome (its info word's low byte) is served from the cache
    /// as it is: a success (its bits) or a code default (nil). Any other outcome is a failure,
    /// served the default and counted (``countCachedFailure(_:_:)``).
    @inline(__always)
    static func answerServes(_ info: UInt) -> Bool {
        let outcome = UInt8(truncatingIfNeeded: info)
        return outcome == ReadOutcome.success.rawValue || outcome == ReadOutcome.codeDefault.rawValue
    }

    /// What a served answer returns: the bits on success, nil for a code default.
    @inline(__always)
    static func answerValue(_ info: UInt, _ bits: UInt64) -> UInt64? {
        UInt8(truncatingIfNeeded: info) == ReadOutcome.success.rawValue ? bits : nil
    }

    /// Counts a failed read served from a cached answer (as ``finish(_:default:as:sink:counters:)``
    /// counts one), and returns the default's nil.
    @inline(never)
    static func countCachedFailure(_ info: UInt, _ counters: ReadCounters) -> UInt64? {
        counters.count(ReadOutcome(rawValue: UInt8(truncatingIfNeeded: info)) ?? .notReady)
        return nil
    }

    /// Stores what `lookup` found in `snapshot` as `answer`'s, tagged with the snapshot's
    /// generation, with the exposure mark read from the flag's slot. Runs while the snapshot
    /// is protected (the generation and the slot are the snapshot's own).
    @inline(__always)
    static func cache(
        _ lookup: ScalarLookup, of snapshot: Unmanaged<Snapshot>, in answer: UnsafeMutablePointer<hal_handle_cache>
    ) {
        let (generation, slots) = snapshot._withUnsafeGuaranteedRef {
            (UInt(truncatingIfNeeded: $0.generation), $0.exposureSlots)
        }
        hal_handle_cache_write(answer, generation, lookup.bits, UInt(lookup.outcome.rawValue) | UInt(lookup.index) << 8)
        if lookup.outcome == .success || lookup.outcome == .codeDefault {
            let deadline = UInt32(truncatingIfNeeded: hal_load_relaxed(slots + lookup.index))
            ExposureMark.store(in: answer, deadline: deadline, generation: generation)
        }
    }
}
