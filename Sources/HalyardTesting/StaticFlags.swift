public import Halyard

/// A test double for code that reads flags through ``FlagReading``: fixed values, the same read
/// rules, reasons and error codes as a ``FlagClient`` (a missing key is `FLAG_NOT_FOUND`, a
/// wrong type `TYPE_MISMATCH`, values given as a dictionary carry reason `STATIC`), no
/// exposures, no network.
///
/// ```swift
/// func checkoutTitle(_ flags: some FlagReading) -> String { ... }
/// #expect(checkoutTitle(StaticFlags(["checkout.new": true])) == "New checkout")
/// ```
///
/// Its conformance is the whole of what a reader needs: the two `FlagReading` requirements,
/// forwarded to the snapshot it holds.
public struct StaticFlags: FlagReading {
    private let snapshot: Snapshot
    private let counters = ReadCounters()

    /// Serves `values` (reason `STATIC`, no variant, no metadata).
    public init(_ values: [String: JSONValue]) {
        self.init(flags: values.sorted { $0.key < $1.key }.map { ServedFlag(key: $0.key, value: $0.value) })
    }

    /// Serves `flags` as the control plane would (variants, reasons, error codes, metadata); of
    /// two flags with the same key the last one is served.
    public init(flags: [ServedFlag]) {
        var seen = Set<String>()
        let unique = flags.reversed().filter { seen.insert($0.key).inserted }.reversed()
        snapshot = Snapshot(flags: Array(unique), source: .offline)
    }

    /// The reads that did not succeed so far, by outcome.
    public var readStats: ReadStats { counters.stats }

    /// Not API (see ``FlagReading``). Records no exposures, so the default's bits are unused.
    public func _readScalar(_ key: String, as kind: _FlagValueKind, default defaultBits: UInt64) -> UInt64? {
        snapshot.read(key, as: kind, counters: counters)
    }

    /// Not API (see ``FlagReading``). Records no exposures, so the default is unused.
    public func _readDetail(_ key: String, as kind: _FlagValueKind, default servedDefault: () -> JSONValue?)
        -> _FlagRead
    {
        snapshot.readDetail(key, as: kind, counters: counters)
    }
}
