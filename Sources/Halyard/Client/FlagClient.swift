public import CHalyardAtomics
import Foundation

/// The entry point: answers typed flag reads synchronously, in nanoseconds, from any thread.
///
/// ```swift
/// let flags = try FlagClient(offlineValues: ["checkout.new": .bool(true), "max.items": .int(3)])
/// if flags.bool("checkout.new", default: false) { ... }
/// let maxItems = flags.handle("max.items", default: 3)   // pre-resolved: the fastest read
/// print(maxItems.value)
/// ```
///
/// Reads never throw, never block, never wait on I/O or a lock, and never allocate for Bool,
/// Int and Double results. They always answer from one immutable snapshot; publishing a new
/// snapshot is a single atomic swap.
public final class FlagClient: Sendable {
    /// How the client gets its values.
    package enum Mode: Sendable {
        /// Values given in code; no network, no disk.
        case offline
        /// Values fetched from a control plane.
        case online
    }

    package let mode: Mode
    package let store: SnapshotStore
    /// The exposure pipeline, or nil when exposures are off (always nil offline).
    package let exposureSink: (any ExposureSink)?
    /// The sink's coarse clock word, cached so the read fast path never touches the sink
    /// (copying an existential reference would retain it: an atomic RMW on every read). The
    /// word is only accessed atomically and lives as long as the sink, which the client owns.
    @usableFromInline
    nonisolated(unsafe) package let exposureClock: UnsafePointer<hal_atomic_word>?
    /// Counters for reads that did not succeed, and the fatal flag. See ``ReadCounters``.
    package let readCounters: ReadCounters
    /// The online parts (sync, exposures, identity, status); nil offline. See OnlineSession.swift.
    package let sync: OnlineSession?
    /// Answers to keyed scalar reads of small and literal keys (see ``KeyedReadCache``).
    let keyedReads = KeyedReadCache()
    /// Its key slots' address, one load away on the read path.
    nonisolated(unsafe) let keySlots: UnsafeMutablePointer<hal_keyed_slot>
    /// The store's generation word, which those answers are checked against (the store lives
    /// as long as the client).
    nonisolated(unsafe) let generationWord: UnsafePointer<hal_atomic_word>
    /// The handles' shared state, created with the first handle (HandleDomain.swift).
    let handleDomainBox = Locked<HandleDomain?>(nil)

    /// Creates a client in offline mode: it serves `offlineValues` (reason `STATIC`), does no
    /// network or disk I/O, and is ready at once.
    ///
    /// - Throws: ``FlagClientError/emptyFlagKey`` for an empty key,
    ///   ``FlagClientError/invalidOfflineValue(key:reason:)`` for a value that cannot be served
    ///   (a non-finite double anywhere inside it).
    public init(offlineValues: [String: JSONValue]) throws(FlagClientError) {
        mode = .offline
        store = SnapshotStore()
        generationWord = store.generationAddress
        keySlots = keyedReads.slotsAddress
        readCounters = ReadCounters()
        exposureSink = nil
        exposureClock = nil
        sync = nil
        store.publish(try Self.offlineSnapshot(offlineValues))
    }

    /// White-box initializer for tests and the online client: an empty store in `mode`, with an
    /// optional exposure sink.
    package init(
        mode: Mode, exposureSink: (any ExposureSink)?, store: SnapshotStore = SnapshotStore(),
        readCounters: ReadCounters = ReadCounters(), sync: OnlineSession? = nil
    ) {
        self.mode = mode
        self.store = store
        generationWord = store.generationAddress
        keySlots = keyedReads.slotsAddress
        self.readCounters = readCounters
        self.exposureSink = exposureSink
        // Automatic recording off: reads skip the exposure path entirely; explicit
        // `recordExposure(_:)` still reaches the sink.
        exposureClock = exposureSink?.recordsReads == true ? exposureSink?.coarseClockWord : nil
        self.sync = sync
    }

    /// A client dropped without `close()` closes itself: polling stops and pending exposures are
    /// flushed (detached), as with `close()`.
    deinit {
        sync?.close()
    }

    /// Replaces the served values of an offline client, atomically: every read sees either all
    /// of the old values or all of the new ones.
    ///
    /// - Throws: ``FlagClientError/notOffline`` on a client that is not offline, and the same
    ///   errors as ``init(offlineValues:)`` for bad values (then nothing changes).
    public func setOfflineValues(_ values: [String: JSONValue]) throws(FlagClientError) {
        guard mode == .offline else { throw FlagClientError.notOffline }
        let snapshot = try Self.offlineSnapshot(values)
        store.publish(snapshot)
    }

    static func offlineSnapshot(_ values: [String: JSONValue]) throws(FlagClientError) -> Snapshot {
        var flags: [ServedFlag] = []
        flags.reserveCapacity(values.count)
        for (key, value) in values.sorted(by: { $0.key < $1.key }) {
            guard !key.isEmpty else { throw FlagClientError.emptyFlagKey }
            guard value.isFinite else {
                throw FlagClientError.invalidOfflineValue(key: key, reason: "contains a non-finite number")
            }
            flags.append(ServedFlag(key: key, value: value, reason: .staticValue))
        }
        return Snapshot(flags: flags, source: .offline)
    }
}
