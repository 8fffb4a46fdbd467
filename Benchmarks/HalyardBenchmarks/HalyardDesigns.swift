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

    /// `flags.bool("<literal>", default:)`: every key at a call site of its own, written as a
    /// literal (`LiteralKeys.swift`), as application code reads flags. A literal is two constant
    /// words and costs no reference counting (``HalyardKeyedBool`` copies each key out of a
    /// `[String]`, a `swift_bridgeObjectRetain`/`Release` pair per read). The harness reaches
    /// call site `i` through a `switch` (a jump table: one indirect jump per read, which the
    /// random sequence makes the branch predictor miss), a cost the other designs do not pay.
    final class HalyardKeyedBoolLiteral: ReadDesign, @unchecked Sendable {
        let sets: [[String: JSONValue]]
        let flags: FlagClient
        init(_ w: Workload) throws {
            precondition(w.keys == literalSwitchKeys, "LiteralKeys.swift is not generated from Workload.literalKeys")
            sets = [w.jsonValues(0), w.jsonValues(1)]
            flags = try FlagClient(offlineValues: sets[0])
        }
        @inline(__always) func read(_ i: Int) -> Bool { literalBool(flags, i) }
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

    /// `flags.detail(key, default: .null).value == .bool(true)`: the JSON detail read (the
    /// whole `Evaluation<JSONValue>` is built).
    final class HalyardDetailJSON: ReadDesign, @unchecked Sendable {
        let keys: [String]
        let sets: [[String: JSONValue]]
        let flags: FlagClient
        init(_ w: Workload) throws {
            keys = w.keys
            sets = [w.jsonValues(0), w.jsonValues(1)]
            flags = try FlagClient(offlineValues: sets[0])
        }
        @inline(__always) func read(_ i: Int) -> Bool { flags.detail(keys[i], default: .null).value == .bool(true) }
        func publish(_ generation: Int) { try? flags.setOfflineValues(sets[generation & 1]) }
    }

    /// `flags.intDetail(key, default: 0).value != 0`: a typed detail read, over the same values
    /// as Int flags (1 for true, 0 for false).
    final class HalyardDetailInt: ReadDesign, @unchecked Sendable {
        let keys: [String]
        let sets: [[String: JSONValue]]
        let flags: FlagClient
        init(_ w: Workload) throws {
            keys = w.keys
            sets = [0, 1].map { set in w.jsonValues(set).mapValues { JSONValue.int($0 == .bool(true) ? 1 : 0) } }
            flags = try FlagClient(offlineValues: sets[0])
        }
        @inline(__always) func read(_ i: Int) -> Bool { flags.intDetail(keys[i], default: 0).value != 0 }
        func publish(_ generation: Int) { try? flags.setOfflineValues(sets[generation & 1]) }
    }

    /// `flags.bool(key, default:)` with keys built at run time (`String(decoding:as:)` of the
    /// literal's bytes), as keys read from configuration or assembled in code are: the 34 keys
    /// longer than 15 bytes are heap strings, so the caller's ARC on them is part of the cost.
    final class HalyardKeyedBoolRuntimeKeys: ReadDesign, @unchecked Sendable {
        let keys: [String]
        let sets: [[String: JSONValue]]
        let flags: FlagClient
        init(_ w: Workload) throws {
            keys = w.runtimeKeys
            sets = [w.jsonValues(0), w.jsonValues(1)]
            flags = try FlagClient(offlineValues: sets[0])
        }
        @inline(__always) func read(_ i: Int) -> Bool { flags.bool(keys[i], default: false) }
        func publish(_ generation: Int) { try? flags.setOfflineValues(sets[generation & 1]) }
    }

    // MARK: - Handles, held the ways applications hold them

    /// A client with one `FlagHandle<Bool>` per key, publishing like ``HalyardKeyedBool``.
    final class HandleFixture: @unchecked Sendable {
        let sets: [[String: JSONValue]]
        let flags: FlagClient
        let handles: [FlagHandle<Bool>]
        init(_ w: Workload) throws {
            sets = [w.jsonValues(0), w.jsonValues(1)]
            let flags = try FlagClient(offlineValues: sets[0])
            self.flags = flags
            handles = w.keys.map { flags.handle($0, default: false) }
        }
        func publish(_ generation: Int) { try? flags.setOfflineValues(sets[generation & 1]) }
    }

    /// `handles[i].value`: the handles in an array, a `let` property of a shared object.
    final class HalyardHandleArray: ReadDesign, @unchecked Sendable {
        let fixture: HandleFixture
        let handles: [FlagHandle<Bool>]
        init(_ w: Workload) throws {
            fixture = try HandleFixture(w)
            handles = fixture.handles
        }
        @inline(__always) func read(_ i: Int) -> Bool { handles[i].value }
        func publish(_ generation: Int) { fixture.publish(generation) }
    }

    /// An object that keeps its flag in a `let` property, as a feature's controller would.
    final class FeatureController: Sendable {
        let enabled: FlagHandle<Bool>
        init(_ enabled: FlagHandle<Bool>) { self.enabled = enabled }
    }

    /// `controller.enabled.value`: the handle in a `let` property of a class instance shared by
    /// every reader. The 64 instances are reached through `Unmanaged` so that the harness adds
    /// no reference counting of its own: what is measured is the read from the property.
    final class HalyardHandleClassLet: ReadDesign, @unchecked Sendable {
        let fixture: HandleFixture
        let controllers: [FeatureController]
        let unowned: UnsafeMutablePointer<Unmanaged<FeatureController>>
        init(_ w: Workload) throws {
            fixture = try HandleFixture(w)
            controllers = fixture.handles.map(FeatureController.init)
            unowned = .allocate(capacity: controllers.count)
            unowned.initialize(from: controllers.map { Unmanaged.passUnretained($0) }, count: controllers.count)
        }
        deinit { unowned.deallocate() }
        @inline(__always) func read(_ i: Int) -> Bool { unowned[i]._withUnsafeGuaranteedRef { $0.enabled.value } }
        func publish(_ generation: Int) { fixture.publish(generation) }
    }

    /// The fixture behind ``globalHandles``, built on first use.
    let globalHandleFixture: HandleFixture = {
        do { return try HandleFixture(Workload(seed: Options().seed)) } catch { fatalError("\(error)") }
    }()
    /// Handles in a global `let` (lazily initialized, as Swift globals are: every access goes
    /// through the global's once-check, which is part of the cost of this holding pattern).
    let globalHandles: [FlagHandle<Bool>] = globalHandleFixture.handles

    /// `globalHandles[i].value`: handles in a global `let`.
    final class HalyardHandleGlobal: ReadDesign, @unchecked Sendable {
        init(_ w: Workload) {
            precondition(w.keys == Workload(seed: Options().seed).keys, "the global handles use the default workload")
            _ = globalHandles.count
        }
        @inline(__always) func read(_ i: Int) -> Bool { globalHandles[i].value }
        func publish(_ generation: Int) { globalHandleFixture.publish(generation) }
    }

    /// A struct an application might keep per feature: a name (a heap `String`, so copying the
    /// whole struct would cost a retain) beside the handle.
    struct Feature: Sendable {
        let name: String
        let enabled: FlagHandle<Bool>
    }

    /// `features[i].enabled.value`: the handle as a property of a struct, in an array.
    final class HalyardHandleStruct: ReadDesign, @unchecked Sendable {
        let fixture: HandleFixture
        let features: [Feature]
        init(_ w: Workload) throws {
            fixture = try HandleFixture(w)
            features = zip(w.runtimeKeys, fixture.handles).map { Feature(name: $0 + " (feature)", enabled: $1) }
        }
        @inline(__always) func read(_ i: Int) -> Bool { features[i].enabled.value }
        func publish(_ generation: Int) { fixture.publish(generation) }
    }

    /// Lower bound for the holding patterns: the handles in a raw buffer, read by index with no
    /// bounds check and nothing between the loop and the handle (what the `Unmanaged` figure was
    /// when handles were class instances).
    final class HalyardHandleRawBuffer: ReadDesign, @unchecked Sendable {
        let fixture: HandleFixture
        let buffer: UnsafeMutablePointer<FlagHandle<Bool>>
        init(_ w: Workload) throws {
            fixture = try HandleFixture(w)
            buffer = .allocate(capacity: fixture.handles.count)
            buffer.initialize(from: fixture.handles, count: fixture.handles.count)
        }
        deinit { buffer.deallocate() }
        @inline(__always) func read(_ i: Int) -> Bool { buffer[i].value }
        func publish(_ generation: Int) { fixture.publish(generation) }
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
                (
                    "halyard.boolDetail.full",
                    { flags.boolDetail("checkout.new-flow", default: false).reason.rawValue.count }
                ),
                ("halyard.doubleDetail", { Int(flags.doubleDetail("discount.rate", default: 0).value * 4) }),
                ("halyard.intHandle", { intHandle.value }),
                ("halyard.doubleHandle", { Int(doubleHandle.value * 4) }),
            ]
        }
    }
#endif

/// What the Halyard designs run against (printed and recorded in the JSON).
let halyardImplementation = "Halyard (FlagClient offline mode, this checkout)"
