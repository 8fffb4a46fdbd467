import CHalyardAtomics
package import Foundation

/// An immutable set of served flags for one fitted context, with where they came from and when
/// the control plane last confirmed them.
///
/// Built once, then published into a ``SnapshotStore`` and never changed. The one mutable part is
/// a per-flag exposure slot (a coarse-second deadline) used by the exposure fast path; it is a
/// cache, accessed only atomically, and never changes what a read returns.
package final class Snapshot: @unchecked Sendable {
    /// Where a snapshot's values came from.
    package enum Source: Sendable, Hashable {
        /// Values given to an offline client (reason `STATIC`).
        case offline
        /// Values served by the control plane.
        case network
        /// Values loaded from the on-device cache and not yet confirmed (reason `CACHED`).
        case cache
        /// Bootstrap values of an online client, served until the cache or the control plane
        /// answers (reason `DEFAULT`; docs/cache.md).
        case bootstrap
    }

    /// What a flag holds, precomputed so scalar reads never touch `JSONValue`.
    package enum Kind: UInt8, Sendable {
        /// The served flag has an error code.
        case error
        /// The served flag has no value ("use the code default").
        case codeDefault
        case null, bool, int, double, string, array, object
    }

    /// The per-flag data scalar reads need: the kind and the value's bits.
    package struct Entry: Sendable {
        package var kind: Kind
        /// Bool: 0/1. Int: the Int64 bit pattern. Double: the Double bit pattern.
        package var bits: UInt64
    }

    /// The number of flags.
    package let count: Int
    /// Where the values came from.
    package let source: Source
    /// When the control plane last confirmed these values (nil when never: offline or cache).
    package let confirmedAt: Date?
    /// The fingerprint of the fitted context these values were served for (empty offline).
    package let contextFingerprint: String
    /// The ETag the control plane sent with these values, if any.
    package let etag: String?
    /// Set by the store just before publication; never changes afterwards.
    package internal(set) var generation: UInt64 = 0

    let table: FlagTable
    /// The serial number of `table` (``FlagTable/Storage/serial``), for ``FlagKey`` reads.
    let tableSerial: UInt
    /// Owns `table`'s memory (shared with other snapshots of the same keys when
    /// ``tableShared``).
    private let tableStorage: FlagTable.Storage
    /// Whether the key table was handed in (shared, and counted by whoever shares it).
    package let tableShared: Bool
    let entries: UnsafeMutablePointer<Entry>
    /// The served flags, one immutable object per flag built here once, in the order given:
    /// the one copy of each flag the snapshot keeps (``flags`` and ``flag(_:)`` are made from
    /// it), and what a detail read retains instead of copying the variant, reason, message and
    /// metadata (docs/architecture.md, "Why an Evaluation is one reference").
    let details: UnsafeMutablePointer<EvaluationDetail>
    /// Exposure fast-path slots, one per flag: coarse second until which no record is needed.
    let exposureSlots: UnsafeMutablePointer<hal_atomic_word>
    private let liveCounter: LiveCounter?
    /// This snapshot's token in its ``LiveCounter`` (0 without one).
    package let liveSerial: UInt

    /// Builds a snapshot from flags with unique keys (the OFREP decoder is the one place that
    /// de-duplicates; offline values come from a dictionary). Online snapshots are built by
    /// ``next(after:flags:source:confirmedAt:contextFingerprint:etag:)``.
    package convenience init(
        flags unique: [ServedFlag],
        source: Source,
        confirmedAt: Date? = nil,
        contextFingerprint: String = "",
        etag: String? = nil,
        liveCounter: LiveCounter? = nil
    ) {
        self.init(
            flags: unique, source: source, confirmedAt: confirmedAt, contextFingerprint: contextFingerprint, etag: etag,
            liveCounter: liveCounter, sharing: nil, details: nil)
    }

    /// The same, with a key table to share (used only if it maps exactly these keys) and shared
    /// details (``DetailInterner``; one per flag, nil where the snapshot builds its own).
    init(
        flags unique: [ServedFlag],
        source: Source,
        confirmedAt: Date?,
        contextFingerprint: String,
        etag: String?,
        liveCounter: LiveCounter?,
        sharing table: FlagTable.Storage?,
        details shared: [EvaluationDetail?]?
    ) {
        precondition(shared.map { $0.count == unique.count } ?? true, "one shared detail (or nil) per flag")
        count = unique.count
        self.source = source
        self.confirmedAt = confirmedAt
        self.contextFingerprint = contextFingerprint
        self.etag = etag
        // A shared table is used only when it maps exactly these keys (else the reads would
        // find other flags' indices).
        let storage = table.flatMap { $0.matches(unique) ? $0 : nil }
        tableShared = storage != nil
        tableStorage = storage ?? FlagTable.Storage(keys: unique.map(\.key))
        self.table = tableStorage.table
        tableSerial = tableStorage.serial
        let count = max(unique.count, 1)
        entries = .allocate(capacity: count)
        details = .allocate(capacity: count)
        exposureSlots = .allocate(capacity: count)
        exposureSlots.initialize(repeating: hal_atomic_word(value: 0), count: count)
        for (index, flag) in unique.enumerated() {
            (entries + index).initialize(to: Snapshot.entry(for: flag))
            (details + index).initialize(to: shared?[index] ?? EvaluationDetail(served: flag))
        }
        self.liveCounter = liveCounter
        liveSerial = liveCounter?.register() ?? 0
    }

    /// A snapshot of results built elsewhere once per flag and shared (an in-process service's
    /// prebuilt results, docs/in-process.md): `entries` and `details` in the key order of
    /// `table`, which must have been built from exactly those keys. No ``ServedFlag`` is read.
    init(
        entries built: [Entry], details shared: [EvaluationDetail], source: Source, confirmedAt: Date?,
        contextFingerprint: String, sharing table: FlagTable.Storage
    ) {
        precondition(built.count == shared.count && table.table.count == shared.count, "one entry and detail per key")
        count = shared.count
        self.source = source
        self.confirmedAt = confirmedAt
        self.contextFingerprint = contextFingerprint
        etag = nil
        tableShared = true
        tableStorage = table
        self.table = table.table
        tableSerial = table.serial
        let capacity = max(shared.count, 1)
        let entries = UnsafeMutablePointer<Entry>.allocate(capacity: capacity)
        let details = UnsafeMutablePointer<EvaluationDetail>.allocate(capacity: capacity)
        built.withUnsafeBufferPointer {
            if let base = $0.baseAddress { entries.initialize(from: base, count: $0.count) }
        }
        shared.withUnsafeBufferPointer {
            if let base = $0.baseAddress { details.initialize(from: base, count: $0.count) }
        }
        self.entries = entries
        self.details = details
        exposureSlots = .allocate(capacity: capacity)
        exposureSlots.initialize(repeating: hal_atomic_word(value: 0), count: capacity)
        liveCounter = nil
        liveSerial = 0
    }

    deinit {
        entries.deinitialize(count: count)
        entries.deallocate()
        details.deinitialize(count: count)
        details.deallocate()
        exposureSlots.deallocate()
        liveCounter?.unregister(liveSerial)
    }

    /// The served flags, in the order given (made from the details: a slow path, one array).
    package var flags: [ServedFlag] { (0..<count).map { details[$0].servedFlag } }

    /// The entry index of `key`, or nil.
    @inline(__always)
    package func index(of key: String) -> Int? { table.index(of: key) }

    /// The served flag for `key`, or nil.
    package func flag(_ key: String) -> ServedFlag? {
        index(of: key).map { details[$0].servedFlag }
    }

    /// The kind and scalar bits of `flag` (also what an in-process service prebuilds per result).
    static func entry(for flag: ServedFlag) -> Entry {
        if flag.errorCode != nil { return Entry(kind: .error, bits: 0) }
        guard let value = flag.value else { return Entry(kind: .codeDefault, bits: 0) }
        switch value {
        case .null: return Entry(kind: .null, bits: 0)
        case .bool(let b): return Entry(kind: .bool, bits: b ? 1 : 0)
        case .int(let i): return Entry(kind: .int, bits: UInt64(bitPattern: i))
        case .double(let d): return Entry(kind: .double, bits: d.bitPattern)
        case .string: return Entry(kind: .string, bits: 0)
        case .array: return Entry(kind: .array, bits: 0)
        case .object: return Entry(kind: .object, bits: 0)
        }
    }

    /// Copies exposure deadlines from `previous` for flags whose variant is unchanged and whose
    /// context fingerprint is the same, so a swap does not re-expose within the window.
    package func inheritExposureSlots(from previous: Snapshot) {
        guard previous.contextFingerprint == contextFingerprint else { return }
        for index in 0..<count {
            let detail = details[index]
            guard let old = previous.index(of: detail.key), previous.details[old].variant == detail.variant else {
                continue
            }
            let deadline = hal_load_relaxed(previous.exposureSlots + old)
            hal_store_relaxed(exposureSlots + index, deadline)
        }
    }
}
