import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// The `http/protobuf` wire (docs/exposures.md, "Wire protocol"): the hand-written encoder's
/// wire format, reading a protobuf answer (partial success, `google.rpc.Status`), and — with
/// opentelemetry-proto as the oracle (HALYARD_OTLP_PYTHON, set by .ci/run) — every protobuf body
/// sent through the loopback receiver parsed by `ExportLogsServiceRequest.FromString`, and the
/// JSON and protobuf forms of the same batches parsed to equal messages.
@Suite(.serialized) struct OTLPProtobufTests {
    static let resource = OTLPEncoderTests.resource

    // MARK: - The writer and the reader

    @Test func writerEncodesTheWireFormat() {
        var w = ProtobufWriter()
        w.int64(3, -1)  // two's complement: ten bytes of varint
        #expect(w.bytes == [0x18, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01])
        w = ProtobufWriter()
        w.double(4, 1.5)
        #expect(w.bytes == [0x21, 0, 0, 0, 0, 0, 0, 0xF8, 0x3F])
        w = ProtobufWriter()
        w.fixed64(1, 0)  // a default scalar is left out
        w.string(1, "")
        #expect(w.bytes.isEmpty)
        w.string(1, "", always: true)  // a one-of member is not
        #expect(w.bytes == [0x0A, 0x00])
        w = ProtobufWriter()
        w.message(2) { $0.string(1, String(repeating: "é", count: 100)) }  // 200 bytes: a 2-byte length
        #expect(Array(w.bytes.prefix(6)) == [0x12, 0xCB, 0x01, 0x0A, 0xC8, 0x01])
        #expect(w.bytes.count == 3 + 3 + 200)
    }

    @Test func aBodyStartsWithItsResourceLogsAndEndsWithTheSchemaURL() throws {
        let body = OTLPProtobufEncoder.encode(resource: Self.resource, events: OTLPEncoderTests.events)
        var top = ProtobufReader(body)
        let first = try #require(try top.next())
        #expect(first.field == 1)
        #expect(try top.next() == nil)  // one ResourceLogs
        guard case .bytes(let resourceLogs) = first.value else { throw Missing() }
        var fields: [UInt64] = []
        var reader = ProtobufReader(resourceLogs)
        var schema: [UInt8] = []
        while let (field, value) = try reader.next() {
            fields.append(field)
            if field == 3, case .bytes(let text) = value { schema = text }
        }
        #expect(fields == [1, 2, 3])
        #expect(String(decoding: schema, as: UTF8.self) == OTLPLogsEncoder.schemaURL)
    }

    struct Missing: Error {}

    @Test func aProtobufAnswerIsReadAsProtobuf() {
        // ExportLogsServiceResponse { partial_success { rejected_log_records: 7, error_message: "over" } }
        let partial = Data([0x0A, 0x08, 0x08, 0x07, 0x12, 0x04] + Array("over".utf8))
        #expect(OTLPAnswer.partialSuccess(protobuf: partial) == .partiallyDelivered(rejected: 7, errorMessage: "over"))
        #expect(OTLPAnswer.partialSuccess(protobuf: Data()) == nil)  // an empty answer: delivered
        #expect(OTLPAnswer.partialSuccess(protobuf: Data([0x0A, 0x00])) == nil)  // an empty partial success
        #expect(OTLPAnswer.partialSuccess(protobuf: Data([0x0A, 0x09, 0x08])) == nil)  // truncated: not guessed
        // An unknown field (15, varint) is skipped.
        #expect(
            OTLPAnswer.partialSuccess(protobuf: Data([0x78, 0x01, 0x0A, 0x02, 0x08, 0x03]))
                == .partiallyDelivered(rejected: 3, errorMessage: nil))
        // google.rpc.Status { code: 3, message: "bad attribute" }
        let status = Data([0x08, 0x03, 0x12, 0x0D] + Array("bad attribute".utf8))
        #expect(OTLPAnswer.statusMessage(protobuf: status) == "bad attribute")
        #expect(OTLPAnswer.statusMessage(protobuf: Data("{\"message\":\"x\"}".utf8)) == nil)
    }

    /// A recorder sending protobuf reads the receiver's protobuf partial success and rejection
    /// message; a JSON answer (its Content-Type says so) is still read as JSON.
    @Test func theRecorderReadsProtobufAnswers() async throws {
        let partial = Data([0x0A, 0x06, 0x08, 0x02, 0x12, 0x02] + Array("no".utf8))
        let status = Data([0x08, 0x03, 0x12, 0x0D] + Array("bad attribute".utf8))
        let proto = ["Content-Type": "application/x-protobuf"]
        let transport = OTLPDeliveryTests.ScriptedTransport([
            .response(TransportResponse(status: 200, headers: proto, body: partial)),
            .response(TransportResponse(status: 400, headers: proto, body: status)),
            .response(
                TransportResponse(
                    status: 200, headers: ["Content-Type": "application/json"],
                    body: Data(#"{"partialSuccess":{"rejectedLogRecords":"1"}}"#.utf8))),
        ])
        let logs = Locked([String]())
        let configuration = OTLPExporterConfiguration(
            logsURL: try #require(URL(string: "https://otel.example/v1/logs")), encoding: .protobuf)
        let r = OTLPDeliveryTests.recorder(
            transport, clock: ManualClock(), log: { line in logs.withLock { $0.append(line) } },
            edit: { $0.exporter = .otlpConfigured(configuration) })
        for round in 0..<3 {
            OTLPDeliveryTests.record(r, 4, from: round * 4)
            _ = await r.flush()
        }
        #expect(transport.requests.allSatisfy { $0.headers["Content-Type"] == "application/x-protobuf" })
        #expect(r.counters.rejected == 2 + 4 + 1)
        #expect(r.counters.sent == 2 + 3)
        let lines = logs.withLock { $0 }
        #expect(lines.contains { $0.contains("rejected 2 of 4") && $0.contains(": no") }, "\(lines)")
        #expect(lines.contains { $0.contains("HTTP 400") && $0.contains("bad attribute") }, "\(lines)")
    }

    /// The code form's encoding choice: the configuration `.otlp(endpoint:headers:)` stands for,
    /// with protobuf.
    @Test func codeChoosesProtobufThroughTheConfiguration() async throws {
        let endpoint = try #require(URL(string: "https://otel.example:4318/base"))
        let configuration = OTLPExporterConfiguration(
            endpoint: endpoint, headers: ["X-Tenant": "t"], encoding: .protobuf)
        #expect(configuration.logsURL.absoluteString == "https://otel.example:4318/base/v1/logs")
        #expect(configuration.compression == .gzip && configuration.timeout == nil)
        let transport = OTLPDeliveryTests.ScriptedTransport()
        let r = OTLPDeliveryTests.recorder(
            transport, clock: ManualClock(), edit: { $0.exporter = .otlpConfigured(configuration) })
        OTLPDeliveryTests.record(r, 1)
        _ = await r.flush()
        let request = try #require(transport.requests.first)
        #expect(request.headers["Content-Type"] == "application/x-protobuf")
        #expect(request.headers["X-Tenant"] == "t")
        #expect(OTLPExporterConfiguration(logsURL: endpoint).encoding == .json)  // the code default stays JSON
    }

    // MARK: - With opentelemetry-proto

    /// Batches covering every value the encoders write, in both encodings.
    static func batches() -> [[ExposureEvent]] {
        var events: [ExposureEvent] = []
        let values: [JSONValue] = [
            .null, .bool(false), .bool(true), .int(0), .int(-1), .int(.min), .int(.max), .double(0), .double(-2.5),
            .double(1e300), .double(.leastNonzeroMagnitude), .string(""), .string("é ✓ \u{1} \"q\" \\"),
            .string(String(repeating: "x", count: 300)), .array([]), .array([.null, .int(1), .array([.string("n")])]),
            .object([:]), .object(["": .null, "b": .object(["c": .double(0.1)]), "a": .array([])]),
        ]
        for (i, value) in values.enumerated() {
            events.append(
                ExposureEvent(
                    key: "k\(i)", variant: nil, reason: i % 5 == 0 ? "ERROR" : "STATIC",
                    contextFingerprint: "fp\(i % 3)",
                    creationDate: 1_800_000_000 + Int64(i), value: value, errorCode: i % 10 == 0 ? .parseError : nil,
                    flagVersion: i % 4 == 0 ? "v\(i)" : nil, flagSetID: i % 6 == 0 ? "" : nil))
        }
        events.append(
            ExposureEvent(key: "", variant: "", reason: "", contextFingerprint: "", creationDate: 1))
        events.append(
            ExposureEvent(
                key: "far", variant: "on", reason: "SPLIT", contextFingerprint: "f", creationDate: .max))
        let wide = (0..<300).map {
            ExposureEvent(
                key: "flag.\($0)", variant: "v\($0 % 3)", reason: "TARGETING_MATCH", contextFingerprint: "ctx",
                creationDate: 1_800_000_000)
        }
        return [events, wide, [events[0]]]
    }

    static let resources = [
        OTLPEncoderTests.resource,
        OTLPLogsEncoder.Resource(
            serviceName: "", sdkVersion: "", attributes: ["": "x", "a": "", "z.é": "ü"], sampleRate: 0,
            dedupWindowSeconds: 0),
    ]

    @Test(.enabled(if: OTLPConformance.python != nil, "set HALYARD_OTLP_PYTHON to a Python with opentelemetry-proto"))
    func theJSONAndProtobufFormsParseToEqualMessages() throws {
        let python = try #require(OTLPConformance.python)
        var pairs: [Any] = []
        for resource in Self.resources {
            for events in Self.batches() {
                let json = String(decoding: OTLPLogsEncoder.encode(resource: resource, events: events), as: UTF8.self)
                let protobuf = Data(OTLPProtobufEncoder.encode(resource: resource, events: events))
                pairs.append(["json": json, "protobuf": protobuf.base64EncodedString()])
            }
        }
        let (status, summary) = try OTLPConformance.parse(pairs, python: python)
        #expect(status == 0, "\(summary)")
        #expect((summary["parsed"] as? Int) == pairs.count, "\(summary)")
        // The oracle can fail: one batch's JSON against another's protobuf differs.
        let a = String(
            decoding: OTLPLogsEncoder.encode(resource: Self.resource, events: Self.batches()[0]), as: UTF8.self)
        let b = Data(OTLPProtobufEncoder.encode(resource: Self.resource, events: Self.batches()[2]))
        let (mismatch, report) = try OTLPConformance.parse(
            [["json": a, "protobuf": b.base64EncodedString()]], python: python)
        #expect(mismatch == 1)
        #expect("\(report["errors"] ?? "")".contains("differ"), "\(report)")
    }

    @Test(.enabled(if: OTLPConformance.python != nil, "set HALYARD_OTLP_PYTHON to a Python with opentelemetry-proto"))
    func everyProtobufBodyParsesWithOpenTelemetryProto() async throws {
        let python = try #require(OTLPConformance.python)
        let server = try await ControlPlaneServer.launched()
        defer { server.stop() }
        let clock = ManualClock()
        var o = ExposureOptions()
        o.flushInterval = .zero
        o.requestTimeout = .seconds(10)
        o.capacity = 20_000
        o.initialBackoff = .milliseconds(10)
        o.maxBackoff = .milliseconds(100)
        o.environment = [:]
        o.resourceAttributes = ["service.instance.id": "pod-1", "host.name": "h\u{E9}"]
        let configuration = try #require(
            OTLPEnvironment.configuration([
                "OTEL_EXPORTER_OTLP_ENDPOINT": server.otlpEndpoint.absoluteString,
                "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Basic%20dGVzdA==",
                "OTEL_RESOURCE_ATTRIBUTES": "service.version=2.1",
            ]))
        #expect(configuration.encoding == .protobuf)
        o.exporter = .otlpConfigured(configuration)
        let r = ExposureRecorder(
            options: o, clock: clock, transport: TransportKind.urlSession.make(), endpoint: server.baseURL,
            meta: OTLPIntegrationTests.meta, headers: ["Authorization": "Bearer control-plane-key"],
            startsTicker: false)
        try await server.addOTLPFaults([[:], ["partial": 5, "message": "5 over the limit"]])
        OTLPIntegrationTests.record(r, 2_500)
        var rounds = 0
        while r.counters.pending > 0, rounds < 100 {
            let result = await r.flush()
            if let wait = result.retryAfter { clock.advance(by: wait) }
            rounds += 1
        }
        #expect(rounds < 100)
        let report = try await server.otlpReport(bodies: true)
        #expect((report["rejected"] as? [Any])?.isEmpty == true, "\(report["rejected"] ?? "")")
        #expect((report["contentTypes"] as? [String])?.allSatisfy { $0 == "application/x-protobuf" } == true)
        let bodies = try #require(report["bodies"] as? [[String: String]])
        #expect(bodies.count >= 3)
        let records = try #require(report["records"] as? [[String: Any]])
        #expect(records.count == r.counters.sent)  // the receiver's own decoder agrees
        #expect(r.counters.rejected == 5)  // the partial success, answered in protobuf
        let (status, summary) = try OTLPConformance.parse(bodies, python: python)
        #expect(status == 0, "\(summary)")
        #expect((summary["parsed"] as? Int) == bodies.count, "\(summary)")
        #expect((summary["records"] as? Int) == r.counters.sent + 5)
        #expect((summary["eventNames"] as? [String]) == ["feature_flag.evaluation"])
    }
}
