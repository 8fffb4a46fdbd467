package import Foundation

extension Snapshot {
    /// A snapshot that takes over `previous`'s exposure slots, without the changed-keys diff
    /// of ``next(after:flags:source:confirmedAt:contextFingerprint:etag:)`` (service mode has
    /// no change listeners: the diff would be work for nobody).
    ///
    /// `table`, when given, is a key table to share (``FlagTableInterner``); it is used only if
    /// it maps exactly `flags`' keys; `details`, when given, one shared detail per flag
    /// (``DetailInterner``), nil where the snapshot builds its own.
    static func make(
        flags: [ServedFlag], source: Source, confirmedAt: Date?, contextFingerprint: String, etag: String?,
        inheritingFrom previous: Snapshot?, sharing table: FlagTable.Storage? = nil,
        details: [EvaluationDetail?]? = nil
    ) -> Snapshot {
        let snapshot = Snapshot(
            flags: flags, source: source, confirmedAt: confirmedAt, contextFingerprint: contextFingerprint, etag: etag,
            liveCounter: nil, sharing: table, details: details)
        if let previous { snapshot.inheritExposureSlots(from: previous) }
        return snapshot
    }

    /// ``make(flags:source:confirmedAt:contextFingerprint:etag:inheritingFrom:sharing:details:)``
    /// from results built once and shared (``Snapshot/init(entries:details:source:confirmedAt:contextFingerprint:sharing:)``).
    static func make(
        entries: [Entry], details: [EvaluationDetail], source: Source, confirmedAt: Date?, contextFingerprint: String,
        inheritingFrom previous: Snapshot?, sharing table: FlagTable.Storage
    ) -> Snapshot {
        let snapshot = Snapshot(
            entries: entries, details: details, source: source, confirmedAt: confirmedAt,
            contextFingerprint: contextFingerprint, sharing: table)
        if let previous { snapshot.inheritExposureSlots(from: previous) }
        return snapshot
    }

    /// The snapshot that follows `previous` with freshly served `flags`, and the keys whose served
    /// result changed: the one path from decoded flags to a publishable snapshot.
    ///
    /// - `flags` must have unique keys (``OFREPResponse/decode(_:limit:)`` guarantees it).
    /// - Flags whose variant did not change keep their exposure slots (same context only), so a
    ///   refresh does not re-expose within the de-duplication window.
    /// - `changed` holds exactly the keys whose value, variant, reason or error code differs from
    ///   `previous`, plus the keys added or removed; every key when there is no previous snapshot.
    package static func next(
        after previous: Snapshot?,
        flags: [ServedFlag],
        source: Source,
        confirmedAt: Date?,
        contextFingerprint: String,
        etag: String?
    ) -> (snapshot: Snapshot, changed: Set<String>) {
        let snapshot = Snapshot(
            flags: flags, source: source, confirmedAt: confirmedAt, contextFingerprint: contextFingerprint,
            etag: etag)
        guard let previous else { return (snapshot, Set(flags.map(\.key))) }
        snapshot.inheritExposureSlots(from: previous)
        var changed = Set<String>()
        for flag in flags {
            guard let index = previous.index(of: flag.key) else {
                changed.insert(flag.key)
                continue
            }
            let old = previous.details[index]
            if old.value != flag.value || old.variant != flag.variant || old.reason != flag.reason
                || old.errorCode != flag.errorCode
            {
                changed.insert(flag.key)
            }
        }
        for index in 0..<previous.count where snapshot.index(of: previous.details[index].key) == nil {
            changed.insert(previous.details[index].key)
        }
        return (snapshot, changed)
    }
}
