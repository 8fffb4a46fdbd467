public import Foundation

/// Every setting of an online ``FlagClient``, each with its default.
/// `docs/configuration.md` lists them all.
///
/// ```swift
/// var options = FlagClientOptions(baseURL: URL(string: "https://flags.example.com")!, key: "cli-123")
/// options.initialContext = try EvaluationContext(targetingKey: "user-1")
/// options.pollInterval = .seconds(60)
/// let client = try FlagClient(options: options)
/// ```
public struct FlagClientOptions: Sendable {
    /// Who runs the client: an app that ships to users, or a service.
    public enum Role: Sendable, Hashable {
        /// An app or any binary that ships to users: server keys are refused.
        case client
        /// A server-side service: any key is accepted.
        case service
    }

    /// The control plane's base URL (`https://…`; plain `http` only to loopback). The bulk
    /// evaluation endpoint is `{baseURL}/ofrep/v1/evaluate/flags`.
    public var baseURL: URL
    /// The credential, sent as `Authorization: Bearer <key>`. Never logged.
    public var key: String
    /// The context values are fetched for until `identify` changes it; *default* anonymous
    /// (`targetingKey` `""`, kind `user`). An invalid initial context does not throw: the client
    /// starts in status `error` (event `INVALID_CONTEXT`) and sends nothing until `identify`.
    public var initialContext: EvaluationContext = .anonymous
    /// The role; *default* ``Role/client``.
    public var role: Role = .client
    /// Key prefixes that mark a server key, which role ``Role/client`` refuses;
    /// *default* `["srv-", "server-"]`.
    public var serverKeyPrefixes: [String] = ["srv-", "server-"]
    /// How often to re-fetch in the background; *default* 30 s. `.zero` disables polling.
    public var pollInterval: Duration = .seconds(30)
    /// The relative jitter applied to each poll delay, in [0, 1]; *default* 0.1 (±10 %).
    public var pollJitter: Double = 0.1
    /// How changes on the control plane are noticed; *default* ``ChangeDetection/automatic``
    /// (the advertised event stream, else polling). See docs/protocol.md, "Event streams".
    public var changeDetection: ChangeDetection = .automatic
    /// How long after ``FlagClient/setActive(_:)`` with `false` the event stream is closed;
    /// *default* `nil` = the server's `inactivityDelaySec`, else 120 s.
    public var streamInactivityDelay: Duration? = nil
    /// How long one fetch may take in total before it counts as a timeout; *default* 10 s
    /// (a value ≤ 0 means the default).
    public var requestTimeout: Duration = .seconds(10)
    /// The timeout `ready()` uses when none is given; *default* 5 s.
    public var readyTimeout: Duration = .seconds(5)
    /// `refreshIfStale()` fetches only when the last confirmation is older than this; *default* 15 s.
    public var refreshIfStaleThreshold: Duration = .seconds(15)
    /// After failed refreshes, the status becomes `stale` once the last confirmation is older
    /// than this; *default* `nil` = three poll intervals (or 3 × ``refreshIfStaleThreshold``
    /// when polling is disabled).
    public var staleAfter: Duration? = nil
    /// The ceiling of the first retry delay after a failure (full jitter: delays are drawn from
    /// `[0, ceiling]`); *default* 1 s. Doubles per consecutive failure.
    public var initialBackoff: Duration = .seconds(1)
    /// The largest retry delay; *default* 5 min.
    public var maxBackoff: Duration = .seconds(300)
    /// Response bodies above this many bytes are refused (treated like a 5xx); *default* 8 MiB
    /// (a value ≤ 0 means the default).
    public var maxResponseBytes: Int = 8 << 20
    /// The fitted context's size cap in UTF-16 code units (docs/context.md); *default* 4,096.
    /// Was `contextSizeLimit` (docs/public-api.md, "Naming").
    public var maxContextCodeUnits: Int = 4096
    /// Sent as the `X-Halyard-App-Id` header when set; *default* `nil` (header omitted).
    public var appID: String? = nil
    /// Where the install id (sent as `X-Halyard-Install-Id`) is kept; *default*
    /// ``InstallIDStorage/automatic``. Resolved on first use, in the first fetch's task, never on
    /// the thread that creates the client.
    public var installIDStorage: InstallIDStorage = .automatic
    /// Where the default on-device cache store keeps its files (docs/cache.md); *default* `nil` =
    /// the platform's caches directory on Apple platforms, `$XDG_CACHE_HOME` (or `~/.cache`) on
    /// Linux, in a `halyard` folder. Ignored when ``cacheStore`` is set.
    public var cacheDirectory: URL? = nil
    /// How many contexts the on-device cache keeps per base URL and key (LRU), so a switch
    /// back (logout/login) starts warm; *default* 5. `0` turns the cache off.
    public var maxCachedContexts: Int = 5
    /// Cached values older than this are not served at start; *default* 24 h.
    public var cacheMaxAge: Duration = .seconds(24 * 60 * 60)
    /// The largest cache entry of the default file store, in bytes; *default* 256 KiB. A
    /// larger entry is removed with one warning. (A custom ``cacheStore`` has its own
    /// ``CacheStore/sizeLimit``.) Was `cacheEntrySizeLimit` (docs/public-api.md, "Naming").
    public var maxCacheEntryBytes: Int = 256 << 10
    /// Another store for the on-device cache; *default* `nil` = a ``FileCacheStore`` in
    /// ``cacheDirectory``.
    public var cacheStore: (any CacheStore)? = nil
    /// Values served (reason `DEFAULT`) from creation until the on-device cache or the control
    /// plane answers; *default* empty. Precedence: network > cache > bootstrap > the code
    /// default (docs/cache.md).
    public var bootstrapValues: [String: JSONValue] = [:]
    /// How long the start-up fetch waits for the cache lookup at most (so that a cached ETag
    /// can go with it; a slow store never holds the fetch back longer); *default* 100 ms. Not
    /// API: tests raise it so that the first request deterministically follows the lookup.
    package var cacheLookupCap: Duration = .milliseconds(100)
    /// Receives log messages; *default* `nil` (silent).
    public var logHandler: HalyardLogHandler? = nil
    /// Receives the same log lines as ``HalyardLogRecord``s, with `halyard.*` metadata;
    /// *default* `nil`. Either hook, both or neither may be set (docs/integrations.md).
    public var logRecordHandler: HalyardLogRecordHandler? = nil
    /// How HTTP is sent; *default* `nil` = ``CurlTransport`` on Linux, ``URLSessionTransport``
    /// (ephemeral, no URL cache) on Apple platforms. `URLSessionTransport()` selects URLSession on
    /// Linux too.
    public var transport: (any FlagTransport)? = nil
    /// The clock for polling, backoff, `Retry-After` and staleness; *default* ``SystemClock``.
    public var clock: any HalyardClock = SystemClock()
    /// Exposure recording and upload (docs/exposures.md): `enabled`, `sampleRate`, `dedupWindow`,
    /// `capacity`, `batchSize`, `flushInterval`, `path`, `exporter` (SPEC §7 or OTLP); see
    /// ``ExposureOptions``.
    public var exposures = ExposureOptions()
    /// The OpenTelemetry `service.name` of exposures exported with
    /// ``ExposureExporter/otlp(endpoint:headers:)``; *default* `nil` = ``appID``, or
    /// `unknown_service:<process name>` when that is unset too (the OpenTelemetry default).
    public var serviceName: String? = nil

    /// Creates options with every other setting at its default.
    public init(baseURL: URL, key: String) {
        self.baseURL = baseURL
        self.key = key
    }

    /// Checks the programming errors listed in docs/configuration.md (everything but offline values).
    func validate() throws(FlagClientError) {
        if key.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { throw .blankKey }
        if let field = ClientIdentity.fieldWithControlCharacter(key: key, appID: appID) {
            throw .controlCharacter(field: field)
        }
        if role == .client, let prefix = serverKeyPrefixes.first(where: { !$0.isEmpty && key.hasPrefix($0) }) {
            throw .serverKeyInClientRole(prefix: prefix)
        }
        guard let scheme = baseURL.scheme?.lowercased(), let host = baseURL.host, !host.isEmpty else {
            throw .baseURLNotAbsolute
        }
        guard scheme == "http" || scheme == "https" else { throw .unsupportedScheme(scheme) }
        if scheme == "http" && !Self.isLoopback(host) { throw .insecureHTTPToNonLoopbackHost(host) }
        do throws(ExposureExporterError) {
            try exposures.exporter.validate()
        } catch {
            throw .invalidExposureExporter(error)
        }
        for (key, value) in bootstrapValues {
            if key.isEmpty { throw .emptyFlagKey }
            if !value.isFinite {
                throw .invalidOfflineValue(key: key, reason: "bootstrap value contains a non-finite number")
            }
        }
    }

    /// Whether a host names the loopback interface (``LoopbackHost``, shared with the OTLP
    /// endpoint's check).
    static func isLoopback(_ rawHost: String) -> Bool { LoopbackHost.contains(rawHost) }

    /// The stale threshold in force.
    var effectiveStaleAfter: Duration {
        if let staleAfter { return staleAfter }
        return pollInterval > .zero ? pollInterval * 3 : refreshIfStaleThreshold * 3
    }
}

extension FlagClientOptions {
    /// The old spelling of ``maxContextCodeUnits``, kept for one release (docs/public-api.md,
    /// "Naming").
    @available(*, deprecated, renamed: "maxContextCodeUnits")
    public var contextSizeLimit: Int {
        get { maxContextCodeUnits }
        set { maxContextCodeUnits = newValue }
    }

    /// The old spelling of ``maxCacheEntryBytes``, kept for one release (docs/public-api.md,
    /// "Naming").
    @available(*, deprecated, renamed: "maxCacheEntryBytes")
    public var cacheEntrySizeLimit: Int {
        get { maxCacheEntryBytes }
        set { maxCacheEntryBytes = newValue }
    }
}
