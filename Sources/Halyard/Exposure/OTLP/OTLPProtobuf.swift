/// Writes the binary protobuf form of the same `ExportLogsServiceRequest` that
/// ``OTLPLogsEncoder`` writes as JSON (OTLP/HTTP `http/protobuf`, docs/exposures.md "Wire
/// protocol"), by hand from the `.proto` definitions of opentelemetry-proto: the schema is fixed
/// and small, and no protobuf package can be a dependency (SPEC §11).
///
/// The fields written, by number (`opentelemetry.proto.*.v1`):
///
/// | Message | Fields |
/// |---|---|
/// | `ExportLogsServiceRequest` | 1 `resource_logs` |
/// | `ResourceLogs` | 1 `resource`, 2 `scope_logs`, 3 `schema_url` |
/// | `Resource` | 1 `attributes` |
/// | `ScopeLogs` | 1 `scope`, 2 `log_records`, 3 `schema_url` |
/// | `InstrumentationScope` | 1 `name`, 2 `version` |
/// | `LogRecord` | 1 `time_unix_nano` (fixed64), 6 `attributes`, 11 `observed_time_unix_nano` (fixed64), 12 `event_name` |
/// | `KeyValue` | 1 `key`, 2 `value` |
/// | `AnyValue` (one of) | 1 `string_value`, 2 `bool_value`, 3 `int_value`, 4 `double_value`, 5 `array_value`, 6 `kvlist_value` |
/// | `ArrayValue`, `KeyValueList` | 1 `values` |
///
/// The same values in the same order as the JSON form, so that both parse to equal messages (the
/// differential test in OTLPIntegrationTests). Proto3 rules: a scalar field at its default (0,
/// empty string) is left out, except inside `AnyValue`'s one-of, where the chosen member is always
/// written (an empty string value is a string value); a JSON `null` is the empty `AnyValue`.
package enum OTLPProtobufEncoder {
    /// The body for `events`.
    package static func encode(resource: OTLPLogsEncoder.Resource, events: [ExposureEvent]) -> [UInt8] {
        var w = ProtobufWriter()
        w.bytes.reserveCapacity(300 + events.count * 330)
        w.message(1) { w in  // ExportLogsServiceRequest.resource_logs
            w.message(1) { w in  // ResourceLogs.resource
                resourceAttributes(&w, resource)
            }
            w.message(2) { w in  // ResourceLogs.scope_logs
                w.message(1) { w in  // ScopeLogs.scope
                    w.string(1, OTLPLogsEncoder.scopeName)
                    w.string(2, resource.sdkVersion)
                }
                var pipeline = ProtobufWriter()
                pipeline.message(6) { w in
                    w.string(1, "halyard.exposure.sample_rate")
                    w.message(2) { $0.double(4, resource.sampleRate) }
                }
                pipeline.message(6) { w in
                    w.string(1, "halyard.exposure.dedup_window")
                    w.message(2) { $0.int64(3, Int64(resource.dedupWindowSeconds)) }
                }
                for e in events {
                    w.message(2) { record(&$0, e, pipeline.bytes) }  // ScopeLogs.log_records
                }
                w.string(3, OTLPLogsEncoder.schemaURL)
            }
            w.string(3, OTLPLogsEncoder.schemaURL)
        }
        return w.bytes
    }

    /// `Resource.attributes` in the JSON encoder's order: `service.name`, the others in
    /// code-point order of their keys (at most ``OTLPLogsEncoder/maxAttributes``), `telemetry.sdk.*`.
    private static func resourceAttributes(_ w: inout ProtobufWriter, _ resource: OTLPLogsEncoder.Resource) {
        stringAttribute(&w, 1, "service.name", resource.serviceName)
        var written = 0
        for name in resource.attributes.keys.sorted()
        where name != "service.name" && !name.hasPrefix("telemetry.sdk.") && !name.isEmpty {
            guard written < OTLPLogsEncoder.maxAttributes, let value = resource.attributes[name] else { break }
            stringAttribute(&w, 1, name, value)
            written += 1
        }
        stringAttribute(&w, 1, "telemetry.sdk.name", OTLPLogsEncoder.scopeName)
        stringAttribute(&w, 1, "telemetry.sdk.language", "swift")
        stringAttribute(&w, 1, "telemetry.sdk.version", resource.sdkVersion)
    }

    private static func record(_ w: inout ProtobufWriter, _ e: ExposureEvent, _ pipeline: [UInt8]) {
        let nanos = max(0, e.creationDate).multipliedReportingOverflow(by: 1_000_000_000)
        let time = UInt64(nanos.overflow ? .max : nanos.partialValue)
        w.fixed64(1, time)  // time_unix_nano
        stringAttribute(&w, 6, "feature_flag.key", e.key)
        if let variant = e.variant {
            stringAttribute(&w, 6, "feature_flag.result.variant", variant)
        } else if let value = e.value {
            w.message(6) { w in
                w.string(1, "feature_flag.result.value")
                w.message(2) { anyValue(&$0, value) }
            }
        }
        stringAttribute(&w, 6, "feature_flag.result.reason", e.reason.lowercased())
        stringAttribute(&w, 6, "feature_flag.provider.name", OTLPLogsEncoder.providerName)
        stringAttribute(&w, 6, "feature_flag.context.id", e.contextFingerprint)
        if let version = e.flagVersion { stringAttribute(&w, 6, "feature_flag.version", version) }
        if let setID = e.flagSetID { stringAttribute(&w, 6, "feature_flag.set.id", setID) }
        if let error = OTLPLogsEncoder.errorType(e) { stringAttribute(&w, 6, "error.type", error) }
        w.bytes.append(contentsOf: pipeline)
        w.fixed64(11, time)  // observed_time_unix_nano
        w.string(12, OTLPLogsEncoder.eventName)  // event_name
    }

    /// A `KeyValue` with a string value as field `field` of the enclosing message.
    private static func stringAttribute(_ w: inout ProtobufWriter, _ field: UInt32, _ key: String, _ value: String) {
        w.message(field) { w in
            w.string(1, key)
            w.message(2) { $0.string(1, value, always: true) }
        }
    }

    /// A JSON value as the fields of an `AnyValue` (see ``OTLPLogsEncoder/anyValue(_:_:)``).
    package static func anyValue(_ w: inout ProtobufWriter, _ value: JSONValue) {
        switch value {
        case .null: break
        case .bool(let b): w.varintField(2, b ? 1 : 0)
        case .int(let i): w.int64(3, i)
        case .double(let d): w.double(4, d)
        case .string(let s): w.string(1, s, always: true)
        case .array(let items):
            w.message(5) { w in
                for item in items { w.message(1) { anyValue(&$0, item) } }
            }
        case .object(let members):
            w.message(6) { w in
                for name in members.keys.sorted() {
                    w.message(1) { w in
                        w.string(1, name)
                        w.message(2) { w in if let member = members[name] { anyValue(&w, member) } }
                    }
                }
            }
        }
    }
}
