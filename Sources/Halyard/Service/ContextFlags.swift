import CHalyardAtomics

/// The flag values for one evaluation context, as a ``FlagService`` holds them: the read API of
/// ``FlagClient`` (`bool`, `string`, `int`, `double`, `json`, `detail`, the typed details,
/// `flagObject`) with the same rules, reasons and error codes, and exposures recorded with the
/// context's fingerprint.
///
/// ```swift
/// let flags = await service.flags(for: context)       // once per request
/// if flags.bool("checkout.new", default: false) { ... }
/// ```
///
/// A view pins the immutable snapshot it was created with for as long as it lives: every read
/// through it answers from the same values, and a snapshot the cache evicts or replaces is
/// freed only when the last view holding it is gone. Reads are synchronous and take no lock.
/// Keep a view for one request; ask the service again for the next one.
///
/// When the service has no values to serve for the context, every read serves the caller's
/// default with ``unavailableReason``: `PROVIDER_NOT_READY` (a miss still being fetched),
/// `PROVIDER_FATAL` (the key was refused) or `INVALID_CONTEXT` (nothing is fetched for it).
public struct ContextFlags: Sendable {
    /// The values served (nil when the view serves defaults): the view's strong reference.
    let snapshot: Snapshot?
    /// The same snapshot's address, for the reads: they reach it at +0 through this word (a
    /// `guard let` of ``snapshot`` would retain and release it on every read, an atomic on a
    /// line every view of a popular context shares). Alive as long as ``snapshot`` is.
    let address: UInt
    /// The exposure clock word (nil when reads record nothing), copied out of the environment
    /// so a read does not load it through another object.
    nonisolated(unsafe) let exposureClock: UnsafePointer<hal_atomic_word>?
    /// The service-wide parts every view shares: the exposure sink and read counters.
    let environment: ServiceReadEnvironment
    /// Why there are no values (meaningful when ``snapshot`` is nil).
    let unavailable: FlagErrorCode
    /// The fingerprint of a view serving defaults (nil for a view with values: it reads the
    /// snapshot's, so copying a view retains one reference less).
    let fingerprintWithoutValues: String?

    /// The context's fingerprint (SHA-1 of its fitted canonical JSON, docs/context.md), or nil
    /// when the context is invalid.
    public var fingerprint: String? { snapshot?.contextFingerprint ?? fingerprintWithoutValues }

    init(snapshot: Snapshot, environment: ServiceReadEnvironment) {
        self.snapshot = snapshot
        self.address = UInt(bitPattern: Unmanaged.passUnretained(snapshot).toOpaque())
        self.exposureClock = environment.exposureClock
        self.environment = environment
        self.unavailable = .providerNotReady
        self.fingerprintWithoutValues = nil
    }

    init(unavailable: FlagErrorCode, fingerprint: String?, environment: ServiceReadEnvironment) {
        self.snapshot = nil
        self.address = 0
        self.exposureClock = nil
        self.environment = environment
        self.unavailable = unavailable
        self.fingerprintWithoutValues = fingerprint
    }

    /// Whether the view serves values from the control plane (false: it serves defaults).
    public var hasValues: Bool { snapshot != nil }

    /// Why the view serves defaults (`PROVIDER_NOT_READY`, `PROVIDER_FATAL` or
    /// `INVALID_CONTEXT`); nil when it serves values.
    public var unavailableReason: FlagErrorCode? { snapshot == nil ? unavailable : nil }

    /// The number of flags served for the context (0 when the view serves defaults).
    public var flagCount: Int { snapshot?.count ?? 0 }
}

/// What every ``ContextFlags`` of one service shares: the exposure sink, its coarse clock word
/// (nil when reads record nothing) and the read counters. One object, so a view is two
/// references and a code.
final class ServiceReadEnvironment: Sendable {
    let sink: (any ExposureSink)?
    /// The sink's coarse clock word; lives as long as the sink, which this object holds.
    nonisolated(unsafe) let exposureClock: UnsafePointer<hal_atomic_word>?
    let counters: ReadCounters

    init(sink: (any ExposureSink)?, counters: ReadCounters) {
        self.sink = sink
        self.counters = counters
        exposureClock = sink?.recordsReads == true ? sink?.coarseClockWord : nil
    }
}
