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
    /// OpenTelemetry: OTLP/HTTP with JSON encoding, `POST {endpoint}/v1/logs`, gzip; one log
    /// record `feature_flag.evaluation` per exposure. `endpoint` is the collector's base URL
    /// (`https://…`; plain `http` only to loopback, checked when the client is created);
    /// `headers` are added to every export request (for example an `Authorization` the
    /// collector wants) and their values are never logged. The control plane's key and identity
    /// headers are never sent there.
    case otlp(endpoint: URL, headers: [String: String])

    /// Checks the OTLP endpoint as the control plane's base URL is checked: absolute, `http` or
    /// `https`, and plain `http` only to a loopback host.
    package func validate() throws(ExposureExporterError) {
        guard case .otlp(let endpoint, _) = self else { return }
        guard let scheme = endpoint.scheme?.lowercased(), let host = endpoint.host, !host.isEmpty else {
            throw .endpointNotAbsolute
        }
        guard scheme == "http" || scheme == "https" else { throw .unsupportedScheme(scheme) }
        if scheme == "http" && !LoopbackHost.contains(host) { throw .insecureHTTPToNonLoopbackHost(host) }
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
