/// Everything `service.stats` reports (docs/service.md, "Stats"), in groups: ``cache`` (what
/// the held values answered and what they take), ``fetching`` (what was asked of the control
/// plane and how it answered), ``streaming`` (what the event stream made the service do;
/// ``stream`` is the connection itself, as on ``FlagClientStats``), ``sharedCache``, ``reads``
/// and ``exposures``. The flat fields of earlier releases forward to the groups, deprecated
/// (docs/public-api.md, "Stats groups").
public struct FlagServiceStats: Sendable, Hashable {
    /// The service's own cache of contexts' values (``FlagServiceStats/cache``).
    public struct CacheStats: Sendable, Hashable {
        /// `flags(for:)` / `flagsIfCached(for:)` calls answered with held values.
        public var hits = 0
        /// Calls for a context whose values were not held (or too old to serve).
        public var misses = 0
        /// `flags(for:)` calls that waited for a fetch.
        public var coldWaits = 0
        /// Cold waits that ran out of `coldFetchTimeout` and served defaults. Not a fetch
        /// timeout: the fetch goes on (``FetchingStats/timeouts`` counts fetches that timed out).
        public var coldWaitTimeouts = 0
        /// Calls for invalid contexts (served defaults with `INVALID_CONTEXT`, nothing sent).
        public var invalidContexts = 0
        /// Entries evicted to stay within `maxContexts` / `maxCacheBytes`.
        public var evictions = 0
        /// Fetched contexts not held because the admission filter preferred the entry they would
        /// have evicted (``FlagServiceOptions/frequencyAdmission``).
        public var admissionRejections = 0
        /// Contexts whose values are held now (expired ones kept for their ETag included; failing
        /// and invalid contexts without values are in ``failureRecords``).
        public var contextsHeld = 0
        /// Contexts without values whose failure (400, 403, a failed cold fetch) is remembered
        /// now, with their backoff: a table of its own, at most 4,096 records (docs/service.md,
        /// "Failure records"), never evicting a held context, whatever the admission policy.
        public var failureRecords = 0
        /// Failure records dropped because their table was full (the one retried soonest goes).
        public var failureRecordEvictions = 0
        /// Estimated bytes held now (docs/service.md, "How bytes are counted").
        public var bytesHeld = 0
        /// The most estimated bytes held at once.
        public var peakBytesHeld = 0
        /// Estimated bytes of the interned flag keys and key tables the snapshots share
        /// (bounded, outside `maxCacheBytes`; docs/service.md, "How bytes are counted").
        public var internedKeyBytes = 0
        /// Served flag results held once for every cached context served them (bounded, outside
        /// `maxCacheBytes`; docs/service.md, "Shared details").
        public var sharedDetails = 0
        /// Estimated bytes of ``sharedDetails`` (at most 4 MiB).
        public var sharedDetailBytes = 0
        /// Estimated bytes of the fitted-context memo of the warm path (bounded, outside
        /// `maxCacheBytes`; docs/service.md, "The warm path").
        public var memoBytes = 0

        /// Creates empty counters.
        public init() {}
    }

    /// What was asked of the control plane and how it answered (``FlagServiceStats/fetching``).
    public struct FetchingStats: Sendable, Hashable {
        /// Fetches in flight or queued now (single-flight: at most one per context).
        public var inFlight = 0
        /// Requests sent to the control plane.
        public var requests = 0
        /// Responses by HTTP status (200, 304, 429, 503, ...).
        public var byStatus: [Int: Int] = [:]
        /// 304 answers (held values confirmed).
        public var notModified = 0
        /// Fetches that timed out (`requestTimeout`). A cold wait that gives up first is
        /// ``CacheStats/coldWaitTimeouts``.
        public var timeouts = 0
        /// Fetches that failed without an HTTP response.
        public var networkErrors = 0
        /// 200 responses whose body could not be used (unparseable or too large).
        public var invalidBodies = 0
        /// Fetches not sent because a `Retry-After` or the service-wide backoff was in force.
        public var paused = 0
        /// Fetches not started because `maxQueuedFetches` were already waiting.
        public var shed = 0
        /// Queued cold fetches dropped, not sent, because every request waiting for them had
        /// left.
        public var dropped = 0
        /// Contexts the control plane refused with 403 (each serves defaults with
        /// `PROVIDER_FATAL` until `maxStaleness`, then is retried; the service's status does not
        /// change).
        public var forbiddenContexts = 0
        /// 401/403 answers to requests sent with a key ``FlagService/setKey(_:)`` has since
        /// replaced: ignored (they say nothing about the new key).
        public var staleKeyRefusals = 0
        /// Requests still on the wire with a key ``FlagService/setKey(_:)`` replaced, cancelled by
        /// it: each fetch sent again with the new key (docs/service.md, "Key rotation").
        public var staleKeyCancels = 0
        /// Background refreshes started for entries older than `refreshAfter`.
        public var backgroundRefreshes = 0
        /// Probes: refreshes let through, once per entry, before its expiry while its backoff or
        /// the service-wide pause would have held them back (docs/service.md, "Recovery").
        public var probes = 0

        /// Creates empty counters.
        public init() {}
    }

    /// What the event stream made the service do (``FlagServiceStats/streaming``; docs/service.md,
    /// "Event streams"). All zero without a stream.
    public struct StreamingStats: Sendable, Hashable {
        /// Refresh waves the stream started (one per `refetchEvaluation` or reconnect, coalesced).
        public var waves = 0
        /// Held contexts the waves refreshed.
        public var refreshes = 0
        /// Contexts used since the last wave, kept for the next one: only while a stream is
        /// connected, their bytes counted in the byte bound and in the bytes held.
        public var usesHeld = 0
        /// The estimated bytes of ``usesHeld`` and of the contexts the waves still hold (queued
        /// or being refreshed): part of the bytes held, within the byte bound.
        public var useBytes = 0

        /// Creates empty counters.
        public init() {}
    }

    /// The held values: hits, misses, cold waits, evictions, bytes.
    public var cache = CacheStats()
    /// Requests to the control plane and their answers.
    public var fetching = FetchingStats()
    /// The refreshes the event stream started.
    public var streaming = StreamingStats()
    /// Event-stream connection counters (docs/service.md, "Event streams"); all zero without a
    /// stream. The same type as ``FlagClientStats/stream``.
    public var stream = EventStreamStats()
    /// The fleet's shared cache (SPEC §15, docs/fleet.md): nil when
    /// ``FlagServiceOptions/sharedCache`` is not set (or cannot be used: `rediss://`).
    public var sharedCache: SharedCacheStats? = nil
    /// Flag definitions evaluated in process (SPEC §17, docs/in-process.md, "Stats"): nil
    /// unless ``FlagServiceOptions/definitions`` is set.
    public var definitions: DefinitionsStats? = nil
    /// The service's status (`notReady`, `ready`, `error`, `fatal`).
    public var status: ClientStatus = .notReady
    /// Reads that did not succeed, by outcome, over all views.
    public var reads = ReadStats()
    /// Exposure counters.
    public var exposures = ExposureStats()

    /// Creates empty stats.
    public init() {}
}
