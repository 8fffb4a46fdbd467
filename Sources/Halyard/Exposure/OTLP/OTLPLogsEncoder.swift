/// Writes an OTLP/HTTP JSON export body (the protobuf JSON mapping of
/// `opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest`) by hand, one log record per
/// exposure (docs/exposures.md, "OTLP exporter"):
///
/// ```json
/// {"resourceLogs":[{"resource":{"attributes":[<service.name>, <service.version, …>, <telemetry.sdk.*>]},
///   "scopeLogs":[{"scope":{"name":"halyard","version":"…"},
///     "logRecords":[{"timeUnixNano":"…","observedTimeUnixNano":"…",
///                    "eventName":"feature_flag.evaluation","attributes":[…]}],
///     "schemaUrl":"https://opentelemetry.io/schemas/…"}],
///   "schemaUrl":"https://opentelemetry.io/schemas/…"}]}
/// ```
///
/// Field names are the mapping's lowerCamelCase; 64-bit integers (`timeUnixNano`,
/// `observedTimeUnixNano`, `intValue`) are JSON strings; no whitespace. Strings are escaped as in
/// ``ExposureEncoder``.
package enum OTLPLogsEncoder {
    /// The OTLP resource (who exports) and what every record says about the pipeline.
    package struct Resource: Sendable, Hashable {
        /// `service.name`.
        package var serviceName: String
        /// `telemetry.sdk.version` and the scope's version.
        package var sdkVersion: String
        /// Further resource attributes (`service.version`, `service.instance.id`,
        /// `deployment.environment.name`, anything from `OTEL_RESOURCE_ATTRIBUTES`), written after
        /// `service.name` in code-point order of their keys; `service.name` and `telemetry.sdk.*`
        /// here are ignored (those are set above). At most ``maxAttributes`` are written.
        package var attributes: [String: String]
        /// The exposure sample rate in effect (`halyard.exposure.sample_rate` on every record).
        package var sampleRate: Double
        /// The de-duplication window in seconds, 0 when off (`halyard.exposure.dedup_window`).
        package var dedupWindowSeconds: Int

        /// Creates a resource.
        package init(
            serviceName: String, sdkVersion: String, attributes: [String: String] = [:], sampleRate: Double = 1,
            dedupWindowSeconds: Int = 300
        ) {
            self.serviceName = serviceName
            self.sdkVersion = sdkVersion
            self.attributes = attributes
            self.sampleRate = sampleRate
            self.dedupWindowSeconds = dedupWindowSeconds
        }

        /// The resource for `meta`: `service.name` is its service name (the options'), else
        /// `attributes["service.name"]` (the options' ``ExposureOptions/resourceAttributes``,
        /// `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`), else its app id, else
        /// `unknown_service:<process name>` (the OpenTelemetry resource default).
        package init(
            meta: ExposureMeta, processName: String, attributes: [String: String] = [:], sampleRate: Double = 1,
            dedupWindowSeconds: Int = 300
        ) {
            let name: String
            if let s = meta.serviceName, !s.isEmpty {
                name = s
            } else if let s = attributes["service.name"], !s.isEmpty {
                name = s
            } else if !meta.appId.isEmpty {
                name = meta.appId
            } else {
                name = processName.isEmpty ? "unknown_service" : "unknown_service:" + processName
            }
            self.init(
                serviceName: name, sdkVersion: meta.version, attributes: attributes, sampleRate: sampleRate,
                dedupWindowSeconds: dedupWindowSeconds)
        }
    }

    /// The most ``Resource/attributes`` written.
    package static let maxAttributes = 128

    /// The semantic-conventions schema the attribute names follow (every name written —
    /// `feature_flag.*` of the evaluation event, `service.*`, `deployment.environment.name`,
    /// `telemetry.sdk.*`, `error.type` — is defined under these names in that version).
    package static let schemaURL = "https://opentelemetry.io/schemas/1.34.0"

    /// The instrumentation scope's name, `telemetry.sdk.name` (`halyard`).
    package static let scopeName = "halyard"
    /// The event name of every record.
    package static let eventName = "feature_flag.evaluation"
    /// `feature_flag.provider.name`.
    package static let providerName = "Halyard"

    /// The body for `events`.
    package static func encode(resource: Resource, events: [ExposureEvent]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(400 + events.count * 520)
        append(&out, #"{"resourceLogs":[{"resource":{"attributes":["#)
        stringAttribute(&out, "service.name", resource.serviceName)
        out.append(0x2C)
        var written = 0
        for name in resource.attributes.keys.sorted()
        where name != "service.name" && !name.hasPrefix("telemetry.sdk.") && !name.isEmpty {
            guard written < maxAttributes, let value = resource.attributes[name] else { break }
            append(&out, #"{"key":"#)
            ExposureEncoder.appendString(&out, name)
            append(&out, #","value":{"stringValue":"#)
            ExposureEncoder.appendString(&out, value)
            append(&out, "}},")
            written += 1
        }
        stringAttribute(&out, "telemetry.sdk.name", scopeName)
        out.append(0x2C)
        stringAttribute(&out, "telemetry.sdk.language", "swift")
        out.append(0x2C)
        stringAttribute(&out, "telemetry.sdk.version", resource.sdkVersion)
        append(&out, #"]},"scopeLogs":[{"scope":{"name":"#)
        ExposureEncoder.appendString(&out, scopeName)
        append(&out, #","version":"#)
        ExposureEncoder.appendString(&out, resource.sdkVersion)
        append(&out, #"},"logRecords":["#)
        var pipeline: [UInt8] = []
        append(&pipeline, #",{"key":"halyard.exposure.sample_rate","value":{"doubleValue":"#)
        appendDouble(&pipeline, resource.sampleRate)
        append(&pipeline, #"}},{"key":"halyard.exposure.dedup_window","value":{"intValue":""#)
        ExposureEncoder.appendInteger(&pipeline, Int64(resource.dedupWindowSeconds))
        append(&pipeline, #""}}"#)
        var first = true
        for e in events {
            if !first { out.append(0x2C) }
            first = false
            record(&out, e, pipeline)
        }
        append(&out, #"],"schemaUrl":"#)
        ExposureEncoder.appendString(&out, schemaURL)
        append(&out, #"}],"schemaUrl":"#)
        ExposureEncoder.appendString(&out, schemaURL)
        append(&out, "}]}")
        return out
    }

    /// `error.type` of an exposure: the lowercased error code (`general` when none) when the
    /// served reason is `ERROR`, else nil.
    package static func errorType(_ e: ExposureEvent) -> String? {
        guard e.reason == EvaluationReason.error.rawValue else { return nil }
        return (e.errorCode ?? .general).rawValue.lowercased()
    }

    private static func record(_ out: inout [UInt8], _ e: ExposureEvent, _ pipeline: [UInt8]) {
        // Seconds × 10^9 fits in Int64 until the year 2262; later (or negative) dates are clamped.
        let nanos = max(0, e.creationDate).multipliedReportingOverflow(by: 1_000_000_000)
        let time: Int64 = nanos.overflow ? .max : nanos.partialValue
        append(&out, #"{"timeUnixNano":""#)
        ExposureEncoder.appendInteger(&out, time)
        append(&out, #"","observedTimeUnixNano":""#)
        ExposureEncoder.appendInteger(&out, time)
        append(&out, #"","eventName":"#)
        ExposureEncoder.appendString(&out, eventName)
        append(&out, #","attributes":["#)
        stringAttribute(&out, "feature_flag.key", e.key)
        out.append(0x2C)
        if let variant = e.variant {
            stringAttribute(&out, "feature_flag.result.variant", variant)
            out.append(0x2C)
        } else if let value = e.value {
            append(&out, #"{"key":"feature_flag.result.value","value":"#)
            anyValue(&out, value)
            append(&out, "},")
        }
        stringAttribute(&out, "feature_flag.result.reason", e.reason.lowercased())
        out.append(0x2C)
        stringAttribute(&out, "feature_flag.provider.name", providerName)
        out.append(0x2C)
        stringAttribute(&out, "feature_flag.context.id", e.contextFingerprint)
        if let version = e.flagVersion {
            out.append(0x2C)
            stringAttribute(&out, "feature_flag.version", version)
        }
        if let setID = e.flagSetID {
            out.append(0x2C)
            stringAttribute(&out, "feature_flag.set.id", setID)
        }
        if let error = errorType(e) {
            out.append(0x2C)
            stringAttribute(&out, "error.type", error)
        }
        out.append(contentsOf: pipeline)
        append(&out, "]}")
    }

    /// `{"key":"<key>","value":{"stringValue":"<value>"}}`
    private static func stringAttribute(_ out: inout [UInt8], _ key: StaticString, _ value: String) {
        append(&out, #"{"key":""#)
        append(&out, key)
        append(&out, #"","value":{"stringValue":"#)
        ExposureEncoder.appendString(&out, value)
        append(&out, "}}")
    }

    /// A JSON value as an OTLP `AnyValue`: null is the empty AnyValue `{}`, objects are
    /// `kvlistValue` with their members in code-point order of the key.
    package static func anyValue(_ out: inout [UInt8], _ value: JSONValue) {
        switch value {
        case .null:
            append(&out, "{}")
        case .bool(let b):
            append(&out, b ? #"{"boolValue":true}"# : #"{"boolValue":false}"#)
        case .int(let i):
            append(&out, #"{"intValue":""#)
            ExposureEncoder.appendInteger(&out, i)
            append(&out, #""}"#)
        case .double(let d):
            append(&out, #"{"doubleValue":"#)
            appendDouble(&out, d)
            out.append(0x7D)
        case .string(let s):
            append(&out, #"{"stringValue":"#)
            ExposureEncoder.appendString(&out, s)
            out.append(0x7D)
        case .array(let items):
            append(&out, #"{"arrayValue":{"values":["#)
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(0x2C) }
                anyValue(&out, item)
            }
            append(&out, "]}}")
        case .object(let members):
            append(&out, #"{"kvlistValue":{"values":["#)
            for (i, name) in members.keys.sorted().enumerated() {
                if i > 0 { out.append(0x2C) }
                append(&out, #"{"key":"#)
                ExposureEncoder.appendString(&out, name)
                append(&out, #","value":"#)
                if let member = members[name] { anyValue(&out, member) } else { append(&out, "{}") }
                out.append(0x7D)
            }
            append(&out, "]}}")
        }
    }

    /// A finite double as a JSON number (the shortest round-trip digits); a non-finite one (never
    /// served: the parser and the offline checks refuse them) as the mapping's string form.
    private static func appendDouble(_ out: inout [UInt8], _ d: Double) {
        if d.isNaN { append(&out, #""NaN""#); return }
        if d.isInfinite { append(&out, d < 0 ? #""-Infinity""# : #""Infinity""#); return }
        if d == 0 { out.append(0x30); return }
        if d.magnitude < 9_007_199_254_740_992, d == d.rounded(.towardZero) {
            ExposureEncoder.appendInteger(&out, Int64(d))
        } else {
            ECMAScriptNumber.append(d, to: &out)
        }
    }

    @inline(__always)
    private static func append(_ out: inout [UInt8], _ literal: StaticString) {
        literal.withUTF8Buffer { out.append(contentsOf: $0) }
    }
}
