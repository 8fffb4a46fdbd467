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
    /// `https`, or plain `http` to loopback only (checked when the client is created).
    public var logsURL: URL
    /// Header fields added to every export request; their values are never logged.
    public var headers: [String: String]
    /// Resource attributes (`service.name`, `service.version`, `deployment.environment.name`, …)
    /// below the options: ``ExposureOptions/resourceAttributes`` and the client's `serviceName`
    /// win over these. `telemetry.sdk.*` are always Halyard's own.
    public var resourceAttributes: [String: String]

    /// Creates a configuration.
    public init(logsURL: URL, headers: [String: String] = [:], resourceAttributes: [String: String] = [:]) {
        self.logsURL = logsURL
        self.headers = headers
        self.resourceAttributes = resourceAttributes
    }
}

extension ExposureExporter {
    /// The OTLP exporter as every OpenTelemetry SDK configures it from the environment, or nil
    /// when neither `OTEL_EXPORTER_OTLP_LOGS_ENDPOINT` nor `OTEL_EXPORTER_OTLP_ENDPOINT` is set
    /// (an empty value counts as not set).
    ///
    /// - `OTEL_EXPORTER_OTLP_LOGS_ENDPOINT` is the logs URL, used as it is; otherwise
    ///   `OTEL_EXPORTER_OTLP_ENDPOINT` is a base URL that gets `/v1/logs` appended to its path
    ///   (``logsURL(base:)``; a query string is kept).
    /// - `OTEL_EXPORTER_OTLP_LOGS_HEADERS` if set, else `OTEL_EXPORTER_OTLP_HEADERS` (the signal
    ///   variable replaces the generic one; they are not merged): `name=value` pairs separated by
    ///   commas, trimmed, names and values URL-decoded (`%20`, `%2C`, …). A pair without `=`, with
    ///   an invalid escape, an empty or non-token name, or a control character in its value is
    ///   skipped; at most 64 pairs are kept.
    /// - `OTEL_RESOURCE_ATTRIBUTES` (`key=value,…`, values URL-decoded; the whole variable is
    ///   ignored when a value cannot be decoded, as the OpenTelemetry SDK specification says) and
    ///   `OTEL_SERVICE_NAME` (which wins over a `service.name` there) become
    ///   ``OTLPExporterConfiguration/resourceAttributes``.
    ///
    /// An endpoint that is not a valid `http(s)` URL for an exporter is reported when the client
    /// is created (``FlagClientError/invalidExposureExporter(_:)``), as for
    /// ``otlp(endpoint:headers:)``; a value that is not a URL at all gives nil.
    ///
    /// ```swift
    /// if let otlp = ExposureExporter.otlpFromEnvironment() { options.exposures.exporter = otlp }
    /// ```
    public static func otlpFromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> ExposureExporter? {
        func value(_ name: String) -> String? {
            guard let raw = environment[name]?.trimmingCharacters(in: .whitespacesAndNewlines), !raw.isEmpty else {
                return nil
            }
            return raw
        }
        let logsURL: URL
        if let signal = value("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT") {
            guard let url = URL(string: signal) else { return nil }
            logsURL = url
        } else if let base = value("OTEL_EXPORTER_OTLP_ENDPOINT") {
            guard let url = URL(string: base) else { return nil }
            logsURL = Self.logsURL(base: url)
        } else {
            return nil
        }
        let headerText = value("OTEL_EXPORTER_OTLP_LOGS_HEADERS") ?? value("OTEL_EXPORTER_OTLP_HEADERS")
        let headers = headerText.map(OTLPEnvironment.headers) ?? [:]
        let resource = OTLPEnvironment.resourceAttributes(environment)
        return .otlpConfigured(
            OTLPExporterConfiguration(logsURL: logsURL, headers: headers, resourceAttributes: resource))
    }
}

/// Parsing of the OpenTelemetry environment variables (``ExposureExporter/otlpFromEnvironment(_:)``).
package enum OTLPEnvironment {
    /// The most pairs kept from one header or resource-attribute variable.
    package static let maxPairs = 64

    /// `OTEL_EXPORTER_OTLP_HEADERS`-style text as header fields (invalid pairs skipped).
    package static func headers(_ text: String) -> [String: String] {
        var out: [String: String] = [:]
        for (name, value) in pairs(text) {
            guard out.count < maxPairs, let name, let value, isToken(name),
                !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            else { continue }
            out[name] = value
        }
        return out
    }

    /// `OTEL_RESOURCE_ATTRIBUTES` and `OTEL_SERVICE_NAME` of `environment` as resource attributes.
    /// A value that cannot be URL-decoded discards the whole variable.
    package static func resourceAttributes(_ environment: [String: String]) -> [String: String] {
        var out: [String: String] = [:]
        if let text = environment["OTEL_RESOURCE_ATTRIBUTES"] {
            var parsed: [String: String] = [:]
            var valid = true
            for (key, value) in pairs(text) {
                guard let key, let value else {
                    valid = false
                    break
                }
                guard !key.isEmpty, parsed.count < maxPairs else { continue }
                parsed[key] = value
            }
            if valid { out = parsed }
        }
        if let name = environment["OTEL_SERVICE_NAME"]?.trimmingCharacters(in: .whitespaces), !name.isEmpty {
            out["service.name"] = name
        }
        return out
    }

    /// Splits `k=v,k2=v2` (entries without `=` and empty entries are skipped), trims each side
    /// and URL-decodes it; a side that cannot be decoded is nil.
    static func pairs(_ text: String) -> [(String?, String?)] {
        var out: [(String?, String?)] = []
        for entry in text.split(separator: ",", omittingEmptySubsequences: true) {
            guard let eq = entry.firstIndex(of: "=") else { continue }
            let key = entry[..<eq].trimmingCharacters(in: .whitespaces)
            let value = entry[entry.index(after: eq)...].trimmingCharacters(in: .whitespaces)
            out.append((key.removingPercentEncoding, value.removingPercentEncoding))
        }
        return out
    }

    /// Whether `name` is an HTTP field-name token (RFC 9110).
    static func isToken(_ name: String) -> Bool {
        !name.isEmpty
            && name.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"):
                    true
                default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
                }
            }
    }
}
