import Foundation

/// How Halyard records and uploads exposures. See `docs/exposures.md`.
///
/// Every field has a usable default; out-of-range values are clamped when the client starts
/// (``sampleRate`` is clamped as soon as it is set).
public struct ExposureOptions: Sendable, Hashable {
    /// Whether successful typed reads record exposures automatically. *Default* `true`.
    ///
    /// When `false`, reads record nothing, but an explicit `recordExposure(_:)` still records
    /// (the "log exposures by hand" pattern).
    public var enabled: Bool = true

    private var storedSampleRate: Double = 1

    /// The fraction of distinct (context fingerprint, key, variant) exposures kept, in `[0, 1]`.
    /// *Default* `1` (keep all).
    ///
    /// The decision is deterministic: FNV-1a 64 over the UTF-8 bytes of
    /// `fingerprint 0xFF key 0xFF variant` (or `fingerprint 0xFF key 0xFE` when there is no
    /// variant), mapped to `[0, 1)` as `Double(hash >> 11) / 2^53`; the exposure is kept when that
    /// is `< sampleRate`. Values below 0 become 0, above 1 become 1, NaN becomes 1.
    public var sampleRate: Double {
        get { storedSampleRate }
        set { storedSampleRate = newValue.isNaN ? 1 : min(1, max(0, newValue)) }
    }

    /// One exposure per (key, variant, context fingerprint) per this window. *Default* 300 s.
    /// Kept at whole-second granularity (rounded up); zero or negative disables de-duplication.
    public var dedupWindow: Duration = .seconds(300)

    /// The most events held waiting for upload; when full, the oldest are dropped (counted in
    /// ``ExposureStats/dropped``). *Default* 10,000; at least 1.
    public var capacity: Int = 10_000

    /// Events per upload request, and the pending count that triggers an early flush.
    /// *Default* 1,000; clamped to `1...1000`.
    public var batchSize: Int = 1_000

    /// How often pending exposures are uploaded. *Default* 30 s; zero or negative disables the
    /// periodic flush (batch-size, explicit and close flushes still happen).
    public var flushInterval: Duration = .seconds(30)

    /// The upload path, appended to the control plane's base URL. *Default* `"/v1/exposures"`.
    /// Used by the ``ExposureExporter/halyard`` exporter only (OTLP posts to
    /// ``ExposureExporter/otlpLogsURL``).
    public var path: String = "/v1/exposures"

    /// Where exposures go: Halyard's collector endpoint (SPEC §7) or an OpenTelemetry receiver
    /// over OTLP/HTTP JSON. *Default* ``ExposureExporter/halyard``. The same de-duplication,
    /// sampling, buffer and batching apply to both; the wire, the headers and the retry rules
    /// follow the exporter (docs/exposures.md).
    public var exporter: ExposureExporter = .halyard

    /// OpenTelemetry resource attributes of the OTLP exporter (`service.version`,
    /// `service.instance.id`, `deployment.environment.name`, …). They win over the exporter's own
    /// (``OTLPExporterConfiguration/resourceAttributes``) and over `OTEL_RESOURCE_ATTRIBUTES` /
    /// `OTEL_SERVICE_NAME`; the client's `serviceName` option wins over a `service.name` here;
    /// `telemetry.sdk.*` are always Halyard's. *Default* empty. Unused by ``ExposureExporter/halyard``.
    public var resourceAttributes: [String: String] = [:]

    /// The environment `.otlp(endpoint:headers:)` reads `OTEL_SERVICE_NAME` and
    /// `OTEL_RESOURCE_ATTRIBUTES` from when the recorder is created; nil = the process's
    /// (tests inject one).
    package var environment: [String: String]? = nil

    /// The ceiling of the first retry delay after a failed upload; doubles per consecutive
    /// failure (full jitter). *Default* 1 s. Was `retryBaseDelay` (docs/public-api.md, "Naming").
    public var initialBackoff: Duration = .seconds(1)

    /// The longest backoff between upload retries. *Default* 5 minutes. Was `retryMaxDelay`.
    public var maxBackoff: Duration = .seconds(300)

    /// The timeout of one upload request. *Default* 10 s.
    public var requestTimeout: Duration = .seconds(10)

    /// The hard cap on de-duplication entries (one per distinct (key, variant, fingerprint)
    /// still inside its window). Beyond it the entries whose window ends first are forgotten
    /// early, so such an exposure may be recorded again before its window ends (over-reporting,
    /// never under-reporting). *Default* 100,000 entries (about 3–5 MB); at least 1.
    public var dedupCapacity: Int = 100_000

    /// Creates options with the defaults; set the fields to change (`var o = ExposureOptions();
    /// o.sampleRate = 0.1`). There is no memberwise initializer: it would repeat every default.
    public init() {}

    /// The options with every field brought into its valid range.
    package var normalized: ExposureOptions {
        var o = self
        o.capacity = max(1, capacity)
        o.batchSize = min(1_000, max(1, batchSize))
        o.dedupCapacity = max(1, dedupCapacity)
        if o.initialBackoff < .milliseconds(1) { o.initialBackoff = .milliseconds(1) }
        if o.maxBackoff < o.initialBackoff { o.maxBackoff = o.initialBackoff }
        if o.requestTimeout <= .zero { o.requestTimeout = .seconds(10) }
        if o.path.isEmpty || !o.path.hasPrefix("/") { o.path = "/" + o.path }
        return o
    }

    /// The de-duplication window in whole coarse seconds (rounded up), 0 when disabled.
    package var dedupWindowSeconds: UInt32 {
        ExposureOptions.wholeSeconds(dedupWindow)
    }

    /// `d` in whole seconds, rounded up, clamped to `UInt32` (0 for zero or less).
    static func wholeSeconds(_ d: Duration) -> UInt32 {
        UInt32(clamping: d.saturatingSecondsRoundedUp)
    }
}

extension ExposureOptions {
    /// The old spelling of ``initialBackoff``, kept for one release (docs/public-api.md, "Naming").
    @available(*, deprecated, renamed: "initialBackoff")
    public var retryBaseDelay: Duration {
        get { initialBackoff }
        set { initialBackoff = newValue }
    }

    /// The old spelling of ``maxBackoff``, kept for one release (docs/public-api.md, "Naming").
    @available(*, deprecated, renamed: "maxBackoff")
    public var retryMaxDelay: Duration {
        get { maxBackoff }
        set { maxBackoff = newValue }
    }
}
