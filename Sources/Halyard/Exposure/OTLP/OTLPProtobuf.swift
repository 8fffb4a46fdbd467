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

/// A protobuf wire-format writer: varints, fixed-width numbers, and length-delimited fields whose
/// length is inserted in front of their content once it is written.
package struct ProtobufWriter {
    /// The bytes written so far.
    package var bytes: [UInt8] = []

    /// Creates an empty writer.
    package init() {}

    private mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    private mutating func tag(_ field: UInt32, _ wireType: UInt8) {
        varint(UInt64(field) << 3 | UInt64(wireType))
    }

    /// A varint field (wire type 0), written whatever its value (one-of members).
    package mutating func varintField(_ field: UInt32, _ value: UInt64) {
        tag(field, 0)
        varint(value)
    }

    /// An `int64` field (two's complement: a negative value takes ten bytes), always written.
    package mutating func int64(_ field: UInt32, _ value: Int64) {
        varintField(field, UInt64(bitPattern: value))
    }

    /// A `fixed64` field (wire type 1, little-endian), left out when zero.
    package mutating func fixed64(_ field: UInt32, _ value: UInt64) {
        guard value != 0 else { return }
        tag(field, 1)
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// A `double` field (wire type 1, IEEE 754 little-endian), always written (one-of members).
    package mutating func double(_ field: UInt32, _ value: Double) {
        tag(field, 1)
        withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// A `string` field as UTF-8; an empty one is left out unless `always` (a one-of member).
    package mutating func string(_ field: UInt32, _ value: String, always: Bool = false) {
        var value = value
        value.withUTF8 { utf8 in
            guard always || !utf8.isEmpty else { return }
            tag(field, 2)
            varint(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    /// An embedded message: `body` writes its fields, then their length is put in front.
    package mutating func message(_ field: UInt32, _ body: (inout ProtobufWriter) -> Void) {
        tag(field, 2)
        let start = bytes.count
        body(&self)
        let length = UInt64(bytes.count - start)
        if length < 0x80 {
            bytes.insert(UInt8(length), at: start)
        } else {
            var prefix = ProtobufWriter()
            prefix.varint(length)
            bytes.insert(contentsOf: prefix.bytes, at: start)
        }
    }
}

/// A protobuf wire-format reader for the small answers of an OTLP receiver
/// (`ExportLogsServiceResponse`, `google.rpc.Status`): it walks the fields of one message,
/// skipping any it does not know, and fails (nil) on malformed input rather than guess.
package struct ProtobufReader {
    private let bytes: [UInt8]
    private var offset = 0

    /// One field: its number, and its value (a varint or the bytes of a length-delimited field;
    /// fixed-width fields are skipped and reported with an empty payload).
    package enum Value: Equatable {
        /// Wire type 0.
        case varint(UInt64)
        /// Wire type 2.
        case bytes([UInt8])
        /// Wire types 1 and 5 (not used by the messages read here).
        case fixed
    }

    /// A reader of `bytes`.
    package init(_ bytes: [UInt8]) { self.bytes = bytes }

    private mutating func varint() -> UInt64? {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.count, shift < 64 {
            let byte = bytes[offset]
            offset += 1
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
        return nil
    }

    /// The next field, nil at the end; throws on malformed input.
    package mutating func next() throws(ProtobufReaderError) -> (field: UInt64, value: Value)? {
        guard offset < bytes.count else { return nil }
        guard let key = varint(), key >> 3 > 0 else { throw ProtobufReaderError() }
        switch key & 7 {
        case 0:
            guard let v = varint() else { throw ProtobufReaderError() }
            return (key >> 3, .varint(v))
        case 1, 5:
            let width = key & 7 == 1 ? 8 : 4
            guard bytes.count - offset >= width else { throw ProtobufReaderError() }
            offset += width
            return (key >> 3, .fixed)
        case 2:
            guard let length = varint(), length <= UInt64(bytes.count - offset) else { throw ProtobufReaderError() }
            let end = offset + Int(length)
            defer { offset = end }
            return (key >> 3, .bytes(Array(bytes[offset..<end])))
        default:
            throw ProtobufReaderError()  // groups (3, 4) and reserved types: not in these messages
        }
    }
}

/// Malformed protobuf input.
package struct ProtobufReaderError: Error {}
