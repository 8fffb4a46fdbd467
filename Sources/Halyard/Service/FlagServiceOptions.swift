public import Foundation

/// Every setting of a ``FlagService``, each with its default (docs/configuration.md,
/// "FlagServiceOptions"; docs/service.md explains the cache and how to size it).
///
/// ```swift
/// var options = FlagServiceOptions(baseURL: URL(string: "https://flags.example.com")!, key: "srv-123")
/// options.maxContexts = 50_000
/// let service = try FlagService(options: options)
/// ```
public struct FlagServiceOptions: Sendable {
    /// The control plane's base URL (`https://…`; plain `http` only to loopback). Values come
    /// from `{baseURL}/ofrep/v1/evaluate/flags`.
    public var baseURL: URL
    /// The credential, sent as `Authorization: Bearer <key>`. Server keys (`srv-…`) are
    /// accepted: a service is the `.service` role. Never logged.
    public var key: String
    /// The most contexts whose values are held at once; *default* 10,000. The least recently
    /// used are evicted beyond it.
    public var maxContexts: Int = 10_000
    /// The most bytes the held values may take (estimated per snapshot, docs/service.md);
    /// *default* 64 MiB. The least recently used are evicted beyond it.
    public var maxCacheBytes: Int = 64 << 20
    /// Values older than this are still served, and refreshed in the background with
    /// `If-None-Match`; *default* 30 s.
    public var refreshAfter: Duration = .seconds(30)
    /// How changes on the control plane are noticed; *default* ``ChangeDetection/automatic``:
    /// the event stream the first bulk response advertises refreshes the held contexts
    /// (docs/service.md, "Event streams"); ``ChangeDetection/polling`` and
    /// ``ChangeDetection/none`` ignore it (`refreshAfter` alone then).
    public var changeDetection: ChangeDetection = .automatic
    /// Values older than this are not served (a read serves defaults, as on a miss, while
    /// they are re-fetched); *default* 10 min.
    public var maxStaleness: Duration = .seconds(600)
    /// Whether a new context must have been asked for more often (recently) than the least
    /// recently used one it would evict, as W-TinyLFU's admission filter does (a count-min
    /// sketch per shard); *default* `false` (plain LRU). Keeps users seen once from pushing
    /// out the hot set; docs/benchmarks-service.md measures it.
    public var frequencyAdmission: Bool = false
    /// How long ``FlagService/flags(for:)`` waits for a context whose values are not held
    /// before it returns a view that serves defaults (`PROVIDER_NOT_READY`); *default* 250 ms.
    public var coldFetchTimeout: Duration = .milliseconds(250)
    /// The most fetches in flight at once; *default* 32. Others queue.
    public var maxConcurrentFetches: Int = 32
    /// The most fetches waiting for a slot; *default* 4 x ``maxConcurrentFetches`` (128),
    /// following it until set. Refreshes of held contexts wait before cold fetches; a miss
    /// beyond the bound starts no fetch (counted in ``FlagServiceStats/FetchingStats/shed``) and serves
    /// defaults at once. A small queue keeps a cold wait meaningful: a long one only holds
    /// fetches whose requesters have given up (docs/service.md, "Brownout").
    public var maxQueuedFetches: Int {
        get { queuedFetchesOverride ?? 4 * max(1, maxConcurrentFetches) }
        set { queuedFetchesOverride = newValue }
    }
    private var queuedFetchesOverride: Int? = nil
    /// Exposure recording and upload, with each context's fingerprint (docs/exposures.md).
    /// Memory is bounded by `capacity` (pending events) and `dedupCapacity` (de-duplication
    /// entries) whatever the number of distinct contexts.
    public var exposures = ExposureOptions()
    /// How long one fetch may take before it counts as a timeout; *default* 10 s.
    public var requestTimeout: Duration = .seconds(10)
    /// Response bodies above this many bytes are refused (treated like a 5xx); *default* 8 MiB.
    public var maxResponseBytes: Int = 8 << 20
    /// The fitted context's size cap in UTF-16 code units (docs/context.md); *default* 4,096.
    /// Was `contextSizeLimit` (docs/public-api.md, "Naming").
    public var maxContextCodeUnits: Int = 4096
    /// The first service-wide pause and a failing context's first backoff ceiling; *default*
    /// 1 s. The service's pause never draws less (a floor) and grows, doubling per pause in a
    /// row, up to half of ``refreshAfter``; a context's own backoff doubles up to
    /// ``maxBackoff`` (docs/service.md, "Recovery").
    public var initialBackoff: Duration = .seconds(1)
    /// The largest backoff of a failing context; *default* 5 min. The service's own pause and
    /// the backoff of a context whose values are held stop at half of ``refreshAfter`` (when
    /// that is shorter), so hot contexts recover soon after the plane does (docs/service.md,
    /// "Recovery").
    public var maxBackoff: Duration = .seconds(300)
    /// Consecutive failed fetches (5xx, timeouts, network errors, bad bodies) across all
    /// contexts, with no success between them, after which every context's fetches pause for
    /// the backoff delay; *default* 64 (two rounds of the default concurrency: an outage is
    /// detected within them, while failures of a few contexts — which interleave with
    /// successes — never pause the others). A failing context always backs off alone
    /// (docs/service.md).
    public var backoffAfterFailures: Int = 64
    /// Sent as the `X-Halyard-App-Id` header when set; *default* `nil`.
    public var appID: String? = nil
    /// The OpenTelemetry `service.name` of exposures exported with
    /// ``ExposureExporter/otlp(endpoint:headers:)``; *default* `nil` = ``appID``, else
    /// `unknown_service:<process name>` (as ``FlagClientOptions/serviceName``).
    public var serviceName: String? = nil
    /// Sent as `X-Halyard-Install-Id`; *default* `nil` = a random id per process (a service
    /// instance is not an install).
    public var installID: String? = nil
    /// A second-level cache shared by the services of a fleet (SPEC §15, docs/fleet.md);
    /// *default* `nil` (each service holds its own cache only).
    ///
    /// ```swift
    /// options.sharedCache = .redis(url: URL(string: "redis://10.0.0.5:6379")!)
    /// ```
    ///
    /// Checked by ``FlagService/init(options:)`` (a URL that is not `redis://`, `rediss://` or
    /// `unix://`, or that names no host, a bad port or database, throws
    /// ``FlagServiceError/invalidSharedCache(_:)``). Consulted on a miss and before a refresh,
    /// never on a read; one pod per context fetches (a lease) and writes the values back for
    /// the others. Redis slow or gone never takes values away: the service then runs on its
    /// own cache (docs/fleet.md). ``FlagServiceStats/sharedCache`` shows what it did.
    public var sharedCache: SharedCache? = nil
    /// Flag definitions in flagd's format, evaluated in process (SPEC §17, docs/in-process.md);
    /// *default* `nil` (values come from the control plane, one request per context).
    ///
    /// ```swift
    /// let options = FlagServiceOptions(definitions: .file(URL(fileURLWithPath: "/etc/flags.json")))
    /// ```
    ///
    /// When set, ``FlagService/flags(for:)-(EvaluationContext)`` evaluates the definitions for
    /// each context and sends no request for it; the source is read when the service is made
    /// and then every ``definitionsPollInterval``. ``baseURL`` and ``key`` then serve only the
    /// exposure upload (``ExposureExporter/halyard``); with ``init(definitions:)`` there is no
    /// control plane and exposures go only to an OTLP exporter, if one is set.
    public var definitions: DefinitionsSource? = nil
    /// How often ``definitions`` are checked for a change (a file's `stat`, an HTTP `GET` with
    /// `If-None-Match`); *default* 30 s, ±10 % jitter.
    public var definitionsPollInterval: Duration = .seconds(30)
    /// Receives log messages; *default* `nil` (silent).
    public var logHandler: HalyardLogHandler? = nil
    /// Receives the same log lines as ``HalyardLogRecord``s, with `halyard.*` metadata;
    /// *default* `nil`. Either hook, both or neither may be set (docs/integrations.md).
    public var logRecordHandler: HalyardLogRecordHandler? = nil
    /// How HTTP is sent; *default* `nil` = the same default transport as ``FlagClient``
    /// (libcurl on Linux, URLSession on Apple platforms).
    public var transport: (any FlagTransport)? = nil
    /// The clock for ages, backoff and `Retry-After`; *default* ``SystemClock``.
    public var clock: any HalyardClock = SystemClock()
    /// Not API (benchmarks compare both): whether snapshots share one detail per distinct served
    /// result (``DetailInterner``; docs/service.md, "Shared details").
    package var sharesServedDetails = true
    /// Not API: the copies of each shared result (``DetailInterner/stripes``).
    package var sharedDetailStripes = DetailInterner.defaultStripes

    /// Creates options with every other setting at its default.
    public init(baseURL: URL, key: String) {
        self.baseURL = baseURL
        self.key = key
    }

    /// Creates options for a service that evaluates flag `definitions` in process (SPEC §17,
    /// docs/in-process.md), with no control plane: every other setting at its default.
    /// Setting ``baseURL`` and ``key`` afterwards uploads exposures to that control plane.
    public init(definitions: DefinitionsSource) {
        self.baseURL = Self.noControlPlane
        self.key = ""
        self.definitions = definitions
    }

    /// The ``baseURL`` of options made by ``init(definitions:)``: no control plane (a file URL,
    /// which no request is ever sent to: the service sends none per context, and exposures
    /// then go only to an OTLP exporter).
    public static let noControlPlane = URL(fileURLWithPath: "/", isDirectory: true)

    /// Whether the service talks to a control plane: always, unless ``definitions`` is set and
    /// ``baseURL`` is ``noControlPlane``.
    var hasControlPlane: Bool { definitions == nil || baseURL != Self.noControlPlane }

    /// The longest the service pauses on its own (a 429's `Retry-After` may be longer) and the
    /// longest a context whose values are held backs off: half of ``refreshAfter``, at least
    /// ``initialBackoff``, at most ``maxBackoff`` (docs/service.md, "Recovery").
    var recoveryInterval: Duration {
        min(max(maxBackoff, .milliseconds(1)), max(initialBackoff, refreshAfter / 2, .milliseconds(1)))
    }

    /// How long before an entry's expiry (`maxStaleness`) its one probe may be sent: the last
    /// ``recoveryInterval`` of its life (the longest a held context's backoff or the service's
    /// own pause lasts, so the only time they can outlast it), at most half of `maxStaleness`.
    var probeLead: Duration { min(recoveryInterval, maxStaleness / 2) }

    /// Checks the programming errors ``FlagService/init(options:)`` throws for.
    func validate() throws(FlagServiceError) {
        if hasControlPlane {
            if key.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { throw .blankKey }
            if let field = ClientIdentity.fieldWithControlCharacter(key: key, appID: appID) {
                throw .controlCharacter(field: field)
            }
            guard let scheme = baseURL.scheme?.lowercased(), let host = baseURL.host, !host.isEmpty else {
                throw .baseURLNotAbsolute
            }
            guard scheme == "http" || scheme == "https" else { throw .unsupportedScheme(scheme) }
            if scheme == "http" && !LoopbackHost.contains(host) { throw .insecureHTTPToNonLoopbackHost(host) }
        } else if let field = ClientIdentity.fieldWithControlCharacter(key: key, appID: appID) {
            throw .controlCharacter(field: field)
        }
        do throws(ExposureExporterError) {
            try exposures.exporter.validate()
        } catch {
            throw .invalidExposureExporter(error)
        }
        if definitions != nil && sharedCache != nil {
            throw .invalidOption("sharedCache is not used with definitions (nothing is fetched per context)")
        }
        if definitionsPollInterval <= .zero { throw .invalidOption("definitionsPollInterval must be positive") }
        if let sharedCache {
            do throws(SharedCacheError) {
                _ = try sharedCache.redisEndpoint()
            } catch {
                throw .invalidSharedCache(error)
            }
            if let problem = sharedCache.optionProblem() { throw .invalidOption(problem) }
        }
        if maxContexts < 1 { throw .invalidOption("maxContexts must be at least 1") }
        if maxCacheBytes < 1 { throw .invalidOption("maxCacheBytes must be at least 1") }
        if maxConcurrentFetches < 1 { throw .invalidOption("maxConcurrentFetches must be at least 1") }
        if maxStaleness < refreshAfter { throw .invalidOption("maxStaleness must be at least refreshAfter") }
    }
}

extension FlagServiceOptions {
    /// The old spelling of ``maxContextCodeUnits``, kept for one release (docs/public-api.md,
    /// "Naming").
    @available(*, deprecated, renamed: "maxContextCodeUnits")
    public var contextSizeLimit: Int {
        get { maxContextCodeUnits }
        set { maxContextCodeUnits = newValue }
    }
}
