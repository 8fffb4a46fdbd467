public import Foundation

/// Where exposures go (``ExposureOptions/exporter``). docs/exposures.md describes both wires.
///
/// ```swift
/// options.exposures.exporter = .otlp(
///     endpoint: URL(string: "https://otel-collector.internal:4318")!,
///     headers: ["Authorization": "Basic …"])
/// ```
public enum ExposureExporter: Sendable, Hashable {
    /// Halyard's own collector endpoint (SPEC §7): `POST {baseURL}{path}` with the client's
    /// identity headers and an `Idempotency-Key`. The default.
    case halyard
    /// OpenTelemetry: OTLP/HTTP with JSON encoding (`http/json`; ``otlpConfigured(_:)`` chooses
    /// protobuf), `POST {endpoint}/v1/logs`, gzip; one log
    /// record `feature_flag.evaluation` per exposure. `endpoint` is the collector's base URL
    /// (`https://…`; plain `http` only to loopback, checked when the client is created), to whose
    /// path `/v1/logs` is appended (its query string is kept) — unless its path already ends in
    /// `/v1/logs` (the signal URL of `OTEL_EXPORTER_OTLP_LOGS_ENDPOINT`), which is used as it is.
    /// `headers` are added to every export request (for example an `Authorization` the
    /// collector wants) and their values are never logged. The control plane's key and identity
    /// headers are never sent there. `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` of the
    /// process environment at client creation fill the resource (options win). For
    /// `http/protobuf` from code:
    /// `.otlpConfigured(OTLPExporterConfiguration(endpoint: url, headers: h, encoding: .protobuf))`.
    case otlp(endpoint: URL, headers: [String: String])
    /// OpenTelemetry configured in full, as ``otlpFromEnvironment(_:)`` returns it: the logs URL
    /// posted to as it is, the headers, the resource attributes read with them, the encoding
    /// (`http/protobuf` or `http/json`), compression, timeout and trusted CA file. Never makes
    /// client or service creation throw: a plain-http endpoint to another host is used with one
    /// warning, an unusable one is reported by one warning (its exposures are dropped).
    case otlpConfigured(OTLPExporterConfiguration)

    /// The URL export requests are posted to (nil for ``halyard``): the signal URL of
    /// ``otlpConfigured(_:)`` as it is; for ``otlp(endpoint:headers:)``, `endpoint` itself when
    /// its path ends in `/v1/logs` (or `/v1/logs/`), else `endpoint` with `/v1/logs` appended to
    /// its path.
    public var otlpLogsURL: URL? {
        switch self {
        case .halyard: nil
        case .otlp(let endpoint, _):
            Self.isSignalURL(endpoint) ? endpoint : Self.logsURL(base: endpoint)
        case .otlpConfigured(let configuration): configuration.logsURL
        }
    }

    /// Whether `url`'s path ends in `/v1/logs` (trailing slashes aside): a signal URL.
    static func isSignalURL(_ url: URL) -> Bool {
        var path = url.path
        while path.hasSuffix("/") { path.removeLast() }
        return path.hasSuffix("/v1/logs")
    }

    /// The OTLP/HTTP logs URL for a base endpoint (the rule for `OTEL_EXPORTER_OTLP_ENDPOINT`):
    /// `v1/logs` appended to its path after one `/` (`https://h` and `https://h/` give
    /// `https://h/v1/logs`, `https://h/otlp` gives `https://h/otlp/v1/logs`); the query string
    /// and everything else are kept.
    public static func logsURL(base: URL) -> URL {
        guard var components = URLComponents(url: base, resolvingAgainstBaseURL: false) else {
            return base.appendingEndpoint("/v1/logs")
        }
        var path = components.percentEncodedPath
        while path.hasSuffix("/") { path.removeLast() }
        components.percentEncodedPath = path + "/v1/logs"
        return components.url ?? base.appendingEndpoint("/v1/logs")
    }

    /// Checks the exporter when a client or service is created. Only
    /// ``otlp(endpoint:headers:)``, written in code, is checked as the control plane's base URL
    /// is (absolute, `http` or `https`, plain `http` only to a loopback host): a mistake there is
    /// a programming error. ``otlpConfigured(_:)`` — what the environment gives — never throws:
    /// the telemetry configuration must not take the flags away (``endpointProblem`` is logged
    /// instead).
    package func validate() throws(ExposureExporterError) {
        guard case .otlp = self, let problem = endpointProblem else { return }
        throw problem
    }

    /// What is wrong with the OTLP endpoint, if anything: no scheme or host, a scheme other than
    /// `http`/`https`, or plain `http` to a host that is not loopback.
    package var endpointProblem: ExposureExporterError? {
        guard let endpoint = otlpLogsURL else { return nil }
        guard let scheme = endpoint.scheme?.lowercased(), let host = endpoint.host, !host.isEmpty else {
            return .endpointNotAbsolute
        }
        guard scheme == "http" || scheme == "https" else { return .unsupportedScheme(scheme) }
        if scheme == "http" && !LoopbackHost.contains(host) { return .insecureHTTPToNonLoopbackHost(host) }
        return nil
    }
}

/// Why an ``ExposureExporter`` cannot be used (thrown, wrapped, when a client is created).
public enum ExposureExporterError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The OTLP endpoint has no scheme or no host.
    case endpointNotAbsolute
    /// The OTLP endpoint's scheme is not `http` or `https`. Carries the scheme.
    case unsupportedScheme(String)
    /// The OTLP endpoint is plain `http` to a host that is not loopback. Carries the host.
    case insecureHTTPToNonLoopbackHost(String)

    /// A description (never a header value).
    public var description: String {
        switch self {
        case .endpointNotAbsolute:
            "the OTLP endpoint needs a scheme and a host"
        case .unsupportedScheme(let scheme):
            "the OTLP endpoint scheme \"\(scheme)\" is not supported (use http or https)"
        case .insecureHTTPToNonLoopbackHost(let host):
            "plain http to the OTLP endpoint \(host) is refused (use https; http is allowed to loopback only)"
        }
    }
}
