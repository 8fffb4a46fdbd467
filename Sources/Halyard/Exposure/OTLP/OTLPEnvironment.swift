import Foundation

/// Parsing of the OpenTelemetry environment variables (``ExposureExporter/otlpFromEnvironment(_:)``,
/// which lists the rules; docs/exposures.md, "OTLP configuration").
package enum OTLPEnvironment {
    /// The most pairs kept from one header or resource-attribute variable.
    package static let maxPairs = 64
    /// What a timeout of `0` ("no limit") becomes: the largest 32-bit number of milliseconds, as
    /// the OpenTelemetry configuration specification suggests.
    package static let unlimitedTimeout = Duration.milliseconds(Int32.max)

    /// The configuration the environment describes, or nil when it describes none (see
    /// ``ExposureExporter/otlpFromEnvironment(_:)``).
    package static func configuration(_ environment: [String: String]) -> OTLPExporterConfiguration? {
        func value(_ name: String) -> String? {
            guard let raw = environment[name]?.trimmingCharacters(in: .whitespacesAndNewlines), !raw.isEmpty else {
                return nil
            }
            return raw
        }
        var warnings: [String] = []
        if let disabled = value("OTEL_SDK_DISABLED") {
            if disabled.lowercased() == "true" { return nil }
            if disabled.lowercased() != "false" {
                warnings.append("OTEL_SDK_DISABLED is neither true nor false: taken as false")
            }
        }
        if let exporters = value("OTEL_LOGS_EXPORTER") {
            let names = exporters.lowercased().split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            if !names.contains("otlp") { return nil }
        }
        let logsURL: URL
        if let signal = value("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT") {
            guard let url = URL(string: signal) else { return nil }
            logsURL = url
        } else if let base = value("OTEL_EXPORTER_OTLP_ENDPOINT") {
            guard let url = URL(string: base) else { return nil }
            logsURL = ExposureExporter.logsURL(base: url)
        } else {
            return nil
        }
        /// The signal variable's value, else the generic one's, with the name that gave it.
        func setting(_ suffix: String) -> (name: String, value: String)? {
            for name in ["OTEL_EXPORTER_OTLP_LOGS_" + suffix, "OTEL_EXPORTER_OTLP_" + suffix] {
                if let v = value(name) { return (name, v) }
            }
            return nil
        }

        let encoding: OTLPEncoding
        switch setting("PROTOCOL") {
        case nil: encoding = .protobuf
        case let (name, text)?:
            switch text.lowercased() {
            case "grpc": return nil
            case "http/json": encoding = .json
            case "http/protobuf": encoding = .protobuf
            default:
                encoding = .protobuf
                warnings.append("\(name) is not http/protobuf, http/json or grpc: http/protobuf is used")
            }
        }

        var timeout: Duration?
        // An invalid value counts as not set: the generic variable may still apply.
        for name in ["OTEL_EXPORTER_OTLP_LOGS_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"] {
            guard let text = value(name) else { continue }
            if let ms = parseTimeout(text) {
                timeout = ms
                break
            }
            warnings.append("\(name) is not a number of milliseconds: ignored")
        }

        var compression = OTLPCompression.gzip
        if let (name, text) = setting("COMPRESSION") {
            switch text.lowercased() {
            case "gzip": compression = .gzip
            case "none": compression = .none
            default: warnings.append("\(name) is not gzip or none: gzip is used")
            }
        }

        var trustedCAFile: String?
        if let (name, path) = setting("CERTIFICATE") {
            trustedCAFile = path
            if !FileManager.default.isReadableFile(atPath: path) {
                warnings.append("\(name) names a file that cannot be read: \(path)")
            }
        }

        var headers: [String: String] = [:]
        if let (name, text) = setting("HEADERS") {
            let parsed = headerFields(text)
            headers = parsed.fields
            if !parsed.dropped.isEmpty {
                warnings.append("\(name): dropped \(parsed.dropped.joined(separator: ", "))")
            }
        }
        var configuration = OTLPExporterConfiguration(
            logsURL: logsURL, headers: headers, resourceAttributes: resourceAttributes(environment),
            encoding: encoding, compression: compression, timeout: timeout, trustedCAFile: trustedCAFile)
        configuration.warnings = warnings
        return configuration
    }

    /// A timeout variable's value: a non-negative integer of milliseconds (`0` = no limit), or nil.
    static func parseTimeout(_ text: String) -> Duration? {
        guard !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        guard let ms = Int64(text), ms <= Int64(Int32.max) else { return unlimitedTimeout }
        return ms == 0 ? unlimitedTimeout : .milliseconds(ms)
    }

    /// `OTEL_EXPORTER_OTLP_HEADERS`-style text as header fields (invalid pairs skipped).
    package static func headers(_ text: String) -> [String: String] { headerFields(text).fields }

    /// `OTEL_EXPORTER_OTLP_HEADERS`-style text as header fields, and a description of each pair
    /// dropped (its name when it has a usable one, never its value).
    package static func headerFields(_ text: String) -> (fields: [String: String], dropped: [String]) {
        var out: [String: String] = [:]
        var dropped: [String] = []
        for (index, (name, value)) in pairs(text).enumerated() {
            guard let name, isToken(name) else {
                dropped.append("pair \(index + 1) (its name is not an HTTP token or cannot be decoded)")
                continue
            }
            guard let value, HeaderValue.isClean(value) else {
                dropped.append("\(name) (its value holds a control character or cannot be decoded)")
                continue
            }
            guard out.count < maxPairs else {
                dropped.append("\(name) (over \(maxPairs) headers)")
                continue
            }
            out[name] = value
        }
        return (out, dropped)
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
    static func isToken(_ name: String) -> Bool { HeaderValue.isToken(name) }
}
