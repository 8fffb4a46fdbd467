/// Everything `service.stats` reports (docs/service.md, "Stats").
public struct FlagServiceStats: Sendable, Hashable {
    /// `flags(for:)` / `flagsIfCached(for:)` calls answered with held values.
    public var hits = 0
    /// Calls for a context whose values were not held (or too old to serve).
    public var misses = 0
    /// `flags(for:)` calls that waited for a fetch.
    public var coldWaits = 0
    /// Cold waits that ran out of `coldFetchTimeout` and served defaults.
    public var timeouts = 0
    /// Entries evicted to stay within `maxContexts` / `maxCacheBytes`.
    public var evictions = 0
    /// Fetched contexts not held because the admission filter preferred the entry they would
    /// have evicted (``FlagServiceOptions/frequencyAdmission``).
    public var admissionRejections = 0
    /// Contexts whose values are held now (expired ones kept for their ETag included; failing
    /// and invalid contexts without values are in ``failureRecords``).
    public var contextsHeld = 0
    /// Contexts without values whose failure (400, 403, a failed cold fetch) is remembered now,
    /// with their backoff: a table of its own, at most 4,096 records (docs/service.md,
    /// "Failure records"), never evicting a held context, whatever the admission policy.
    public var failureRecords = 0
    /// Failure records dropped because their table was full (the one retried soonest goes).
    public var failureRecordEvictions = 0
    /// Probes: refreshes let through, once per entry, before its expiry while its backoff or
    /// the service-wide pause would have held them back (docs/service.md, "Recovery").
    public var probes = 0
    /// Estimated bytes held now (docs/service.md, "How bytes are counted").
    public var bytesHeld = 0
    /// The most estimated bytes held at once.
    public var peakBytesHeld = 0
    /// Calls for invalid contexts (served defaults with `INVALID_CONTEXT`, nothing sent).
    public var invalidContexts = 0
    /// Event-stream counters (docs/service.md, "Event streams"); all zero without a stream.
    public var stream = EventStreamStats()
    /// Refresh waves the stream started (one per `refetchEvaluation` or reconnect, coalesced).
    public var streamWaves = 0
    /// 401/403 answers to requests sent with a key ``FlagService/setKey(_:)`` has since
    /// replaced: ignored (they say nothing about the new key).
    public var staleKeyRefusals = 0
    /// Held contexts the waves refreshed.
    public var streamRefreshes = 0
    /// Contexts used since the last wave, kept for the next one: only while a stream is
    /// connected, their bytes counted in the byte bound and in the bytes held.
    public var streamUsesHeld = 0
    /// The estimated bytes of ``streamUsesHeld`` (part of the bytes held).
    public var streamUseBytes = 0
    /// The fleet's shared cache (SPEC §15, docs/fleet.md): nil when
    /// ``FlagServiceOptions/sharedCache`` is not set (or cannot be used: `rediss://`).
    public var sharedCache: SharedCacheStats? = nil
    /// Fetches in flight or queued now (single-flight: at most one per context).
    public var fetchesInFlight = 0
    /// Requests sent to the control plane.
    public var requestsSent = 0
    /// Responses by HTTP status (200, 304, 429, 503, ...).
    public var fetchesByStatus: [Int: Int] = [:]
    /// 304 answers (held values confirmed).
    public var notModified = 0
    /// Fetches that timed out.
    public var fetchTimeouts = 0
    /// Fetches that failed without an HTTP response.
    public var networkErrors = 0
    /// 200 responses whose body could not be used (unparseable or too large).
    public var invalidBodies = 0
    /// Fetches not sent because a `Retry-After` or the service-wide backoff was in force.
    public var pausedFetches = 0
    /// Fetches not started because `maxQueuedFetches` were already waiting.
    public var shedFetches = 0
    /// Queued cold fetches dropped, not sent, because every request waiting for them had left.
    public var droppedFetches = 0
    /// Contexts the control plane refused with 403 (each serves defaults with `PROVIDER_FATAL`
    /// until `maxStaleness`, then is retried; the service's status does not change).
    public var forbiddenContexts = 0
    /// Estimated bytes of the interned flag keys and key tables the snapshots share (bounded,
    /// outside `maxCacheBytes`; docs/service.md, "How bytes are counted").
    public var internedKeyBytes = 0
    /// Served flag results held once for every cached context served them (bounded, outside
    /// `maxCacheBytes`; docs/service.md, "Shared details").
    public var sharedDetails = 0
    /// Estimated bytes of ``sharedDetails`` (at most 4 MiB).
    public var sharedDetailBytes = 0
    /// Estimated bytes of the fitted-context memo of the warm path (bounded, outside
    /// `maxCacheBytes`; docs/service.md, "The warm path").
    public var memoBytes = 0
    /// Background refreshes started for entries older than `refreshAfter`.
    public var backgroundRefreshes = 0
    /// The service's status (`notReady`, `ready`, `error`, `fatal`).
    public var status: ClientStatus = .notReady
    /// Reads that did not succeed, by outcome, over all views.
    public var reads = ReadStats()
    /// Exposure counters.
    public var exposures = ExposureStats()

    /// Creates empty stats.
    public init() {}
}
