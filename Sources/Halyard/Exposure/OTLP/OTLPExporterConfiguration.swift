public import Foundation

/// A fully configured OTLP/HTTP logs exporter (``ExposureExporter/otlpConfigured(_:)``), as
/// ``ExposureExporter/otlpFromEnvironment(_:)`` reads it from the OpenTelemetry variables.
///
/// ```swift
/// let otlp = OTLPExporterConfiguration(
///     logsURL: URL(string: "https://collector.internal:4318/v1/logs")!,
///     headers: ["Authorization": "Basic …"],
///     resourceAttributes: ["deployment.environment.name": "staging"])
/// options.exposures.exporter = .otlpConfigured(otlp)
/// ```
public struct OTLPExporterConfiguration: Sendable, Hashable {
    /// The URL every export request is posted to, used as it is (no `/v1/logs` appended).
    /// `https`, or plain `http` (to a host that is not loopback: accepted with one warning when
    /// the client is created; a configuration never makes creation throw).
    public var logsURL: URL
    /// Header fields added to every export request; their values are never logged. A field
    /// whose name is not an HTTP token or whose value holds a control character is dropped with
    /// one warning when the client is created.
    public var headers: [String: String]
    /// Resource attributes (`service.name`, `service.version`, `deployment.environment.name`, …)
    /// below the options: ``ExposureOptions/resourceAttributes`` and the client's `serviceName`
    /// win over these. `telemetry.sdk.*` are always Halyard's own.
    public var resourceAttributes: [String: String]
    /// How requests are encoded; *default* ``OTLPEncoding/json`` here (what
    /// ``ExposureExporter/otlp(endpoint:headers:)`` sends), ``OTLPEncoding/protobuf`` from
    /// ``ExposureExporter/otlpFromEnvironment(_:)`` unless `OTEL_EXPORTER_OTLP_(LOGS_)PROTOCOL`
    /// says `http/json`.
    public var encoding: OTLPEncoding
    /// How request bodies are compressed; *default* ``OTLPCompression/gzip``.
    public var compression: OTLPCompression
    /// How long one export request may take; *default* `nil` = ``ExposureOptions/requestTimeout``.
    public var timeout: Duration?
    /// A PEM file of certificate authorities to trust for the collector instead of the system's
    /// (`OTEL_EXPORTER_OTLP_(LOGS_)CERTIFICATE`); *default* `nil`. Applied by Halyard's libcurl
    /// transport (the Linux default); with another transport it is ignored with one warning.
    public var trustedCAFile: String?
    /// What reading the environment found worth a warning (an ignored value, a dropped header);
    /// logged once, when a client or service is created with this configuration. Never holds a
    /// header value.
    package var warnings: [String] = []

    /// Creates a configuration.
    public init(
        logsURL: URL, headers: [String: String] = [:], resourceAttributes: [String: String] = [:],
        encoding: OTLPEncoding = .json, compression: OTLPCompression = .gzip, timeout: Duration? = nil,
        trustedCAFile: String? = nil
    ) {
        self.logsURL = logsURL
        self.headers = headers
        self.resourceAttributes = resourceAttributes
        self.encoding = encoding
        self.compression = compression
        self.timeout = timeout
        self.trustedCAFile = trustedCAFile
    }
}

extension OTLPExporterConfiguration {
    /// The configuration ``ExposureExporter/otlp(endpoint:headers:)`` stands for, with another
    /// encoding: `endpoint` is a base URL that gets `/v1/logs` appended (or a signal URL ending in
    /// `/v1/logs`, used as it is), and the resource attributes are read from `OTEL_SERVICE_NAME` and
    /// `OTEL_RESOURCE_ATTRIBUTES` of the process environment now, as `.otlp` reads them at creation.
    ///
    /// ```swift
    /// options.exposures.exporter = .otlpConfigured(
    ///     OTLPExporterConfiguration(endpoint: collector, headers: auth, encoding: .protobuf))
    /// ```
    public init(endpoint: URL, headers: [String: String] = [:], encoding: OTLPEncoding) {
        let exporter = ExposureExporter.otlp(endpoint: endpoint, headers: headers)
        self.init(
            logsURL: exporter.otlpLogsURL ?? endpoint, headers: headers,
            resourceAttributes: OTLPEnvironment.resourceAttributes(ProcessInfo.processInfo.environment),
            encoding: encoding)
    }
}

/// The body encoding of OTLP/HTTP export requests (the OpenTelemetry protocol names).
public enum OTLPEncoding: String, Sendable, Hashable, CaseIterable {
    /// `http/json`: the protobuf JSON mapping, `Content-Type: application/json`.
    case json = "http/json"
    /// `http/protobuf`: binary protobuf, `Content-Type: application/x-protobuf` (the
    /// OpenTelemetry default).
    case protobuf = "http/protobuf"

    /// The `Content-Type` of a request body in this encoding.
    public var contentType: String {
        switch self {
        case .json: "application/json"
        case .protobuf: "application/x-protobuf"
        }
    }
}

/// The compression of OTLP/HTTP export request bodies.
public enum OTLPCompression: String, Sendable, Hashable, CaseIterable {
    /// `Content-Encoding: gzip`.
    case gzip
    /// The body as it is.
    case none
}

extension ExposureExporter {
    /// The OTLP exporter as every OpenTelemetry SDK configures it from the environment, or nil
    /// when there is none to configure: neither `OTEL_EXPORTER_OTLP_LOGS_ENDPOINT` nor
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` is set (an empty value counts as not set), the endpoint is
    /// not a URL at all, the protocol is `grpc` (not supported: Halyard speaks OTLP/HTTP only),
    /// `OTEL_SDK_DISABLED` is `true`, or `OTEL_LOGS_EXPORTER` is set without `otlp` in its list
    /// (`none`).
    ///
    /// - `OTEL_EXPORTER_OTLP_LOGS_ENDPOINT` is the logs URL, used as it is; otherwise
    ///   `OTEL_EXPORTER_OTLP_ENDPOINT` is a base URL that gets `/v1/logs` appended to its path
    ///   (``logsURL(base:)``; a query string is kept). Plain `http` to any host is accepted (with
    ///   one warning at creation); an endpoint that cannot be used (no host, another scheme) is
    ///   reported by one warning at creation and its exposures are dropped. Nothing here makes
    ///   client or service creation throw.
    /// - Each of the following has a signal variable (`OTEL_EXPORTER_OTLP_LOGS_…`) that, when set,
    ///   replaces the generic one (`OTEL_EXPORTER_OTLP_…`); they are not merged:
    ///   - `HEADERS`: `name=value` pairs separated by commas, trimmed, names and values
    ///     URL-decoded (`%20`, `%2C`, …). A pair without `=`, with an invalid escape, an empty or
    ///     non-token name, or a control character in its value is dropped (with a warning that
    ///     names it, never its value); at most 64 pairs are kept.
    ///   - `PROTOCOL`: `http/protobuf` (the default) or `http/json` (case-insensitive); `grpc`
    ///     gives nil; anything else is `http/protobuf` with a warning.
    ///   - `TIMEOUT`: milliseconds, a non-negative integer; `0` is no limit (2³¹−1 ms, as the
    ///     specification allows). Invalid: a warning, and the variable counts as not set.
    ///     Unset: ``ExposureOptions/requestTimeout`` (10 s, the OpenTelemetry default).
    ///   - `COMPRESSION`: `gzip` (the default when unset) or `none`; anything else is `gzip`
    ///     with a warning.
    ///   - `CERTIFICATE`: a PEM file of CAs trusted for the collector
    ///     (``OTLPExporterConfiguration/trustedCAFile``); an unreadable file is warned about.
    /// - `OTEL_RESOURCE_ATTRIBUTES` (`key=value,…`, values URL-decoded; the whole variable is
    ///   ignored when a value cannot be decoded, as the OpenTelemetry SDK specification says) and
    ///   `OTEL_SERVICE_NAME` (which wins over a `service.name` there) become
    ///   ``OTLPExporterConfiguration/resourceAttributes``.
    ///
    /// ```swift
    /// if let otlp = ExposureExporter.otlpFromEnvironment() { options.exposures.exporter = otlp }
    /// ```
    public static func otlpFromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> ExposureExporter? {
        OTLPEnvironment.configuration(environment).map { .otlpConfigured($0) }
    }
}
