#if os(Linux)
    import Halyard

    // Halyard's own read paths, through its public API only. The publisher calls
    // `setOfflineValues` with prebuilt value sets (the publish may allocate: it is off the read path).

    /// `flags.bool(key, default:)`.
    final class HalyardKeyedBool: ReadDesign, @unchecked Sendable {
        let keys: [String]
        let sets: [[String: JSONValue]]
        let flags: FlagClient
        init(_ w: Workload) throws {
            keys = w.keys
            sets = [w.jsonValues(0), w.jsonValues(1)]
            flags = try FlagClient(offlineValues: sets[0])
        }
        @inline(__always) func read(_ i: Int) -> Bool { flags.bool(keys[i], default: false) }
        func publish(_ generation: Int) { try? flags.setOfflineValues(sets[generation & 1]) }
    }

    /// `flags.boolDetail(key, default:).value`: the whole `Evaluation<Bool>` is built.
    final class HalyardDetailBool: ReadDesign, @unchecked Sendable {
        let keys: [String]
        let sets: [[String: JSONValue]]
        let flags: FlagClient
        init(_ w: Workload) throws {
            keys = w.keys
            sets = [w.jsonValues(0), w.jsonValues(1)]
            flags = try FlagClient(offlineValues: sets[0])
        }
        @inline(__always) func read(_ i: Int) -> Bool { flags.boolDetail(keys[i], default: false).value }
        func publish(_ generation: Int) { try? flags.setOfflineValues(sets[generation & 1]) }
    }

    /// `handle.value`, one pre-resolved `FlagHandle<Bool>` per key.
    ///
    /// The handles are reached through `Unmanaged` references: loading a class reference out of an
    /// array makes the caller retain and release it around the call, an atomic read-modify-write
    /// on the handle's reference count shared by every reader thread. That is the caller's ARC,
    /// not Halyard's read (a handle kept in a `let` property of the caller usually avoids it), so
    /// the harness keeps it out.
    final class HalyardHandleBool: ReadDesign, @unchecked Sendable {
        let handles: [FlagHandle<Bool>]
        let unowned: UnsafeMutablePointer<Unmanaged<FlagHandle<Bool>>>
        let sets: [[String: JSONValue]]
        let flags: FlagClient
        init(_ w: Workload) throws {
            sets = [w.jsonValues(0), w.jsonValues(1)]
            let flags = try FlagClient(offlineValues: sets[0])
            self.flags = flags
            handles = w.keys.map { flags.handle($0, default: false) }
            unowned = .allocate(capacity: handles.count)
            unowned.initialize(from: handles.map { Unmanaged.passUnretained($0) }, count: handles.count)
        }
        deinit { unowned.deallocate() }
        @inline(__always) func read(_ i: Int) -> Bool { unowned[i]._withUnsafeGuaranteedRef { $0.value } }
        func publish(_ generation: Int) { try? flags.setOfflineValues(sets[generation & 1]) }
    }

    /// Control for the target cell: reads exactly like ``HalyardKeyedBool`` from one client, but
    /// the publisher publishes into a *second* client. Readers then pay only for a publish's
    /// process-wide side effects (its CPU time, the membarrier IPIs, malloc/free, TLB shootdowns),
    /// not for anything on their own snapshot (cache misses on the new table, pointer swaps).
    final class HalyardBoolPublishElsewhere: ReadDesign, @unchecked Sendable {
        let keys: [String]
        let sets: [[String: JSONValue]]
        let flags: FlagClient
        let elsewhere: FlagClient
        init(_ w: Workload) throws {
            keys = w.keys
            sets = [w.jsonValues(0), w.jsonValues(1)]
            flags = try FlagClient(offlineValues: sets[0])
            elsewhere = try FlagClient(offlineValues: sets[0])
        }
        @inline(__always) func read(_ i: Int) -> Bool { flags.bool(keys[i], default: false) }
        func publish(_ generation: Int) { try? elsewhere.setOfflineValues(sets[generation & 1]) }
    }

    /// Allocation probes for the non-Bool reads (not timed): Int and Double, keyed, handle and
    /// detail, on a client of its own.
    struct HalyardAllocationProbes {
        let flags: FlagClient
        let intHandle: FlagHandle<Int>
        let doubleHandle: FlagHandle<Double>

        init() throws {
            flags = try FlagClient(offlineValues: [
                "max.items": .int(3), "discount.rate": .double(0.25), "checkout.new-flow": .bool(true),
            ])
            intHandle = flags.handle("max.items", default: 0)
            doubleHandle = flags.handle("discount.rate", default: 0)
        }

        /// (probe id, one read returning an Int folded from the result).
        var probes: [(String, () -> Int)] {
            let flags = self.flags
            let intHandle = self.intHandle
            let doubleHandle = self.doubleHandle
            return [
                ("halyard.int", { flags.int("max.items", default: 0) }),
                ("halyard.double", { Int(flags.double("discount.rate", default: 0) * 4) }),
                ("halyard.intDetail", { flags.intDetail("max.items", default: 0).value }),
                ("halyard.doubleDetail", { Int(flags.doubleDetail("discount.rate", default: 0).value * 4) }),
                ("halyard.intHandle", { intHandle.value }),
                ("halyard.doubleHandle", { Int(doubleHandle.value * 4) }),
            ]
        }
    }
#endif

/// What the Halyard designs run against (printed and recorded in the JSON).
let halyardImplementation = "Halyard (FlagClient offline mode, this checkout)"
