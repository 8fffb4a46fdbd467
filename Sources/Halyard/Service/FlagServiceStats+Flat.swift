/// The flat fields of earlier releases, each a deprecated forward to its group (docs/public-api.md,
/// "Stats groups"). `timeouts` counted cold waits that gave up, `fetchTimeouts` fetches that
/// timed out: they are ``CacheStats/coldWaitTimeouts`` and ``FetchingStats/timeouts`` now.
extension FlagServiceStats {
    /// Deprecated: ``CacheStats/hits`` in ``cache``.
    @available(*, deprecated, renamed: "cache.hits")
    public var hits: Int {
        get { cache.hits }
        set { cache.hits = newValue }
    }

    /// Deprecated: ``CacheStats/misses`` in ``cache``.
    @available(*, deprecated, renamed: "cache.misses")
    public var misses: Int {
        get { cache.misses }
        set { cache.misses = newValue }
    }

    /// Deprecated: ``CacheStats/coldWaits`` in ``cache``.
    @available(*, deprecated, renamed: "cache.coldWaits")
    public var coldWaits: Int {
        get { cache.coldWaits }
        set { cache.coldWaits = newValue }
    }

    /// Deprecated: ``CacheStats/coldWaitTimeouts`` in ``cache``.
    @available(*, deprecated, renamed: "cache.coldWaitTimeouts")
    public var timeouts: Int {
        get { cache.coldWaitTimeouts }
        set { cache.coldWaitTimeouts = newValue }
    }

    /// Deprecated: ``CacheStats/evictions`` in ``cache``.
    @available(*, deprecated, renamed: "cache.evictions")
    public var evictions: Int {
        get { cache.evictions }
        set { cache.evictions = newValue }
    }

    /// Deprecated: ``CacheStats/admissionRejections`` in ``cache``.
    @available(*, deprecated, renamed: "cache.admissionRejections")
    public var admissionRejections: Int {
        get { cache.admissionRejections }
        set { cache.admissionRejections = newValue }
    }

    /// Deprecated: ``CacheStats/contextsHeld`` in ``cache``.
    @available(*, deprecated, renamed: "cache.contextsHeld")
    public var contextsHeld: Int {
        get { cache.contextsHeld }
        set { cache.contextsHeld = newValue }
    }

    /// Deprecated: ``CacheStats/failureRecords`` in ``cache``.
    @available(*, deprecated, renamed: "cache.failureRecords")
    public var failureRecords: Int {
        get { cache.failureRecords }
        set { cache.failureRecords = newValue }
    }

    /// Deprecated: ``CacheStats/failureRecordEvictions`` in ``cache``.
    @available(*, deprecated, renamed: "cache.failureRecordEvictions")
    public var failureRecordEvictions: Int {
        get { cache.failureRecordEvictions }
        set { cache.failureRecordEvictions = newValue }
    }

    /// Deprecated: ``FetchingStats/probes`` in ``fetching``.
    @available(*, deprecated, renamed: "fetching.probes")
    public var probes: Int {
        get { fetching.probes }
        set { fetching.probes = newValue }
    }

    /// Deprecated: ``CacheStats/bytesHeld`` in ``cache``.
    @available(*, deprecated, renamed: "cache.bytesHeld")
    public var bytesHeld: Int {
        get { cache.bytesHeld }
        set { cache.bytesHeld = newValue }
    }

    /// Deprecated: ``CacheStats/peakBytesHeld`` in ``cache``.
    @available(*, deprecated, renamed: "cache.peakBytesHeld")
    public var peakBytesHeld: Int {
        get { cache.peakBytesHeld }
        set { cache.peakBytesHeld = newValue }
    }

    /// Deprecated: ``CacheStats/invalidContexts`` in ``cache``.
    @available(*, deprecated, renamed: "cache.invalidContexts")
    public var invalidContexts: Int {
        get { cache.invalidContexts }
        set { cache.invalidContexts = newValue }
    }

    /// Deprecated: ``StreamingStats/waves`` in ``streaming``.
    @available(*, deprecated, renamed: "streaming.waves")
    public var streamWaves: Int {
        get { streaming.waves }
        set { streaming.waves = newValue }
    }

    /// Deprecated: ``FetchingStats/staleKeyRefusals`` in ``fetching``.
    @available(*, deprecated, renamed: "fetching.staleKeyRefusals")
    public var staleKeyRefusals: Int {
        get { fetching.staleKeyRefusals }
        set { fetching.staleKeyRefusals = newValue }
    }

    /// Deprecated: ``StreamingStats/refreshes`` in ``streaming``.
    @available(*, deprecated, renamed: "streaming.refreshes")
    public var streamRefreshes: Int {
        get { streaming.refreshes }
        set { streaming.refreshes = newValue }
    }

    /// Deprecated: ``StreamingStats/usesHeld`` in ``streaming``.
    @available(*, deprecated, renamed: "streaming.usesHeld")
    public var streamUsesHeld: Int {
        get { streaming.usesHeld }
        set { streaming.usesHeld = newValue }
    }

    /// Deprecated: ``StreamingStats/useBytes`` in ``streaming``.
    @available(*, deprecated, renamed: "streaming.useBytes")
    public var streamUseBytes: Int {
        get { streaming.useBytes }
        set { streaming.useBytes = newValue }
    }

    /// Deprecated: ``FetchingStats/inFlight`` in ``fetching``.
    @available(*, deprecated, renamed: "fetching.inFlight")
    public var fetchesInFlight: Int {
        get { fetching.inFlight }
        set { fetching.inFlight = newValue }
    }

    /// Deprecated: ``FetchingStats/requests`` in ``fetching``.
    @available(*, deprecated, renamed: "fetching.requests")
    public var requestsSent: Int {
        get { fetching.requests }
        set { fetching.requests = newValue }
    }

    /// Deprecated: ``FetchingStats/byStatus`` in ``fetching``.
    @available(*, deprecated, renamed: "fetching.byStatus")
    public var fetchesByStatus: [Int: Int] {
        get { fetching.byStatus }
        set { fetching.byStatus = newValue }
    }

    /// Deprecated: ``FetchingStats/notModified`` in ``fetching``.
    @available(*, deprecated, renamed: "fetching.notModified")
    public var notModified: Int {
        get { fetching.notModified }
        set { fetching.notModified = newValue }
    }

    /// Deprecated: ``FetchingStats/timeouts`` in ``fetching``.
    @available(*, deprecated, renamed: "fetching.timeouts")
    public var fetchTimeouts: Int {
        get { fetching.timeouts }
        set { fetching.timeouts = newValue }
    }

    /// Deprecated: ``FetchingStats/networkErrors`` in ``fetching``.
    @available(*, deprecated, renamed: "fetching.networkErrors")
    public var networkErrors: Int {
        get { fetching.networkErrors }
        set { fetching.networkErrors = newValue }
    }

    /// Deprecated: ``FetchingStats/invalidBodies`` in ``fetching``.
    @available(*, deprecated, renamed: "fetching.invalidBodies")
    public var invalidBodies: Int {
        get { fetching.invalidBodies }
        set { fetching.invalidBodies = newValue }
    }

    /// Deprecated: ``FetchingStats/paused`` in ``fetching``.
    @available(*, deprecated, renamed: "fetching.paused")
    public var pausedFetches: Int {
        get { fetching.paused }
        set { fetching.paused = newValue }
    }

    /// Deprecated: ``FetchingStats/shed`` in ``fetching``.
    @available(*, deprecated, renamed: "fetching.shed")
    public var shedFetches: Int {
        get { fetching.shed }
        set { fetching.shed = newValue }
    }

    /// Deprecated: ``FetchingStats/dropped`` in ``fetching``.
    @available(*, deprecated, renamed: "fetching.dropped")
    public var droppedFetches: Int {
        get { fetching.dropped }
        set { fetching.dropped = newValue }
    }

    /// Deprecated: ``FetchingStats/forbiddenContexts`` in ``fetching``.
    @available(*, deprecated, renamed: "fetching.forbiddenContexts")
    public var forbiddenContexts: Int {
        get { fetching.forbiddenContexts }
        set { fetching.forbiddenContexts = newValue }
    }

    /// Deprecated: ``CacheStats/internedKeyBytes`` in ``cache``.
    @available(*, deprecated, renamed: "cache.internedKeyBytes")
    public var internedKeyBytes: Int {
        get { cache.internedKeyBytes }
        set { cache.internedKeyBytes = newValue }
    }

    /// Deprecated: ``CacheStats/sharedDetails`` in ``cache``.
    @available(*, deprecated, renamed: "cache.sharedDetails")
    public var sharedDetails: Int {
        get { cache.sharedDetails }
        set { cache.sharedDetails = newValue }
    }

    /// Deprecated: ``CacheStats/sharedDetailBytes`` in ``cache``.
    @available(*, deprecated, renamed: "cache.sharedDetailBytes")
    public var sharedDetailBytes: Int {
        get { cache.sharedDetailBytes }
        set { cache.sharedDetailBytes = newValue }
    }

    /// Deprecated: ``CacheStats/memoBytes`` in ``cache``.
    @available(*, deprecated, renamed: "cache.memoBytes")
    public var memoBytes: Int {
        get { cache.memoBytes }
        set { cache.memoBytes = newValue }
    }

    /// Deprecated: ``FetchingStats/backgroundRefreshes`` in ``fetching``.
    @available(*, deprecated, renamed: "fetching.backgroundRefreshes")
    public var backgroundRefreshes: Int {
        get { fetching.backgroundRefreshes }
        set { fetching.backgroundRefreshes = newValue }
    }
}
