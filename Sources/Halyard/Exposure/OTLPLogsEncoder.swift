/// Writes an OTLP/HTTP JSON export body (the protobuf JSON mapping of
/// `opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest`) by hand, one log record per
/// exposure (docs/exposures.md, "OTLP exporter"):
///
/// ```json
/// {"resourceLogs":[{"resource":{"attributes":[<service.name>, <telemetry.sdk.*>]},
///   "scopeLogs":[{"scope":{"name":"halyard","version":"…"},
///     "logRecords":[{"timeUnixNano":"…","observedTimeUnixNano":"…",
///                    "eventName":"feature_flag.evaluation","attributes":[…]}]}]}]}
/// ```
///
/// Field names are the mapping's lowerCamelCase; 64-bit integers (`timeUnixNano`,
/// `observedTimeUnixNano`, `intValue`) are JSON strings; no whitespace. Strings are escaped as in
/// ``ExposureEncoder``.
package enum OTLPLogsEncoder {
    /// The OTLP resource: who exports.
    package struct Resource: Sendable, Hashable {
        /// `service.name`.
        package var serviceName: String
        /// `telemetry.sdk.version` and the scope's version.
        package var sdkVersion: String

        /// Creates a resource.
        package init(serviceName: String, sdkVersion: String) {
            self.serviceName = serviceName
            self.sdkVersion = sdkVersion
        }

        /// `service.name` for `meta`: its service name, else its app id, else
        /// `unknown_service:<process name>` (the OpenTelemetry resource default).
        package init(meta: ExposureMeta, processName: String) {
            let name: String
            if let s = meta.serviceName, !s.isEmpty {
                name = s
            } else if !meta.appId.isEmpty {
                name = meta.appId
            } else {
                name = processName.isEmpty ? "unknown_service" : "unknown_service:" + processName
            }
            self.init(serviceName: name, sdkVersion: meta.version)
        }
    }

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
        var first = true
        for e in events {
            if !first { out.append(0x2C) }
            first = false
            record(&out, e)
        }
        append(&out, "]}]}]}")
        return out
    }

    /// `error.type` of an exposure: the lowercased error code (`general` when none) when the
    /// served reason is `ERROR`, else nil.
    package static func errorType(_ e: ExposureEvent) -> String? {
        guard e.reason == EvaluationReason.error.rawValue else { return nil }
        return (e.errorCode ?? .general).rawValue.lowercased()
    }

    private static func record(_ out: inout [UInt8], _ e: ExposureEvent) {
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
        if let error = errorType(e) {
            out.append(0x2C)
            stringAttribute(&out, "error.type", error)
        }
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
