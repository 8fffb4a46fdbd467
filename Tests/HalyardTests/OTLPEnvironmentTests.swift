import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// Every OpenTelemetry variable `otlpFromEnvironment` reads (SPEC §13, docs/exposures.md "OTLP
/// configuration"), one test each, observed on the request a recorder posts through a scripted
/// transport (no network); and the rule that the telemetry configuration never makes a client or
/// a service throw.
@Suite struct OTLPEnvironmentTests {
    typealias Scripted = OTLPDeliveryTests.ScriptedTransport

    static let base = ["OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector.example:4318"]

    /// The environment's exporter, or a thrown error when there is none.
    static func exporter(_ env: [String: String]) throws -> ExposureExporter {
        try #require(ExposureExporter.otlpFromEnvironment(env))
    }

    /// The first request a recorder with the environment's exporter posts for one exposure, and
    /// the warnings it logged.
    static func posted(_ env: [String: String]) async throws -> (request: TransportRequest, logs: [String]) {
        let exporter = try Self.exporter(env)
        let transport = Scripted()
        let logs = Locked([String]())
        let r = OTLPDeliveryTests.recorder(
            transport, clock: ManualClock(), log: { line in logs.withLock { $0.append(line) } },
            edit: { $0.exporter = exporter })
        OTLPDeliveryTests.record(r, 1)
        _ = await r.flush()
        return (try #require(transport.requests.first), logs.withLock { $0 })
    }

    /// The body as sent, gunzipped when it says gzip.
    static func plainBody(_ request: TransportRequest) throws -> Data {
        if request.headers["Content-Encoding"] == "gzip" { return try Gzip.inflate(request.body, limit: 1 << 20) }
        return request.body
    }

    // MARK: - OTEL_EXPORTER_OTLP_(LOGS_)PROTOCOL

    @Test func theDefaultProtocolIsHTTPProtobuf() async throws {
        let (request, _) = try await Self.posted(Self.base)
        #expect(request.headers["Content-Type"] == "application/x-protobuf")
        let body = try Self.plainBody(request)
        #expect(body.first == 0x0A)  // field 1 (resource_logs), length-delimited
    }

    @Test func httpJSONSendsTheJSONFormAndTheSignalVariableWins() async throws {
        var env = Self.base
        env["OTEL_EXPORTER_OTLP_PROTOCOL"] = "http/json"
        let (json, _) = try await Self.posted(env)
        #expect(json.headers["Content-Type"] == "application/json")
        #expect(try Self.plainBody(json).first == UInt8(ascii: "{"))

        env["OTEL_EXPORTER_OTLP_LOGS_PROTOCOL"] = "HTTP/Protobuf"  // enums are case-insensitive
        let (protobuf, _) = try await Self.posted(env)
        #expect(protobuf.headers["Content-Type"] == "application/x-protobuf")
    }

    @Test func grpcGivesNoExporter() {
        var env = Self.base
        env["OTEL_EXPORTER_OTLP_PROTOCOL"] = "grpc"
        #expect(ExposureExporter.otlpFromEnvironment(env) == nil)
        env["OTEL_EXPORTER_OTLP_LOGS_PROTOCOL"] = "http/json"
        #expect(ExposureExporter.otlpFromEnvironment(env) != nil)
        env = Self.base
        env["OTEL_EXPORTER_OTLP_PROTOCOL"] = "http/json"
        env["OTEL_EXPORTER_OTLP_LOGS_PROTOCOL"] = "grpc"
        #expect(ExposureExporter.otlpFromEnvironment(env) == nil)
    }

    // MARK: - OTEL_EXPORTER_OTLP_(LOGS_)TIMEOUT

    @Test func theTimeoutIsReadInMilliseconds() async throws {
        var env = Self.base
        env["OTEL_EXPORTER_OTLP_TIMEOUT"] = "2500"
        #expect(try await Self.posted(env).request.timeout == .milliseconds(2500))
        env["OTEL_EXPORTER_OTLP_LOGS_TIMEOUT"] = "750"
        #expect(try await Self.posted(env).request.timeout == .milliseconds(750))
        // Not a non-negative integer: ignored with a warning (the exposure options' timeout).
        env["OTEL_EXPORTER_OTLP_LOGS_TIMEOUT"] = "-5"
        env["OTEL_EXPORTER_OTLP_TIMEOUT"] = nil
        let (request, logs) = try await Self.posted(env)
        #expect(request.timeout == ExposureOptions().requestTimeout)
        #expect(logs.contains { $0.contains("OTEL_EXPORTER_OTLP_LOGS_TIMEOUT") }, "\(logs)")
    }

    // MARK: - OTEL_EXPORTER_OTLP_(LOGS_)COMPRESSION

    @Test func compressionNoneSendsThePlainBody() async throws {
        var env = Self.base
        env["OTEL_EXPORTER_OTLP_COMPRESSION"] = "none"
        let (plain, _) = try await Self.posted(env)
        #expect(plain.headers["Content-Encoding"] == nil)
        #expect(plain.body.first == 0x0A)
        env["OTEL_EXPORTER_OTLP_LOGS_COMPRESSION"] = "gzip"
        let (gzipped, _) = try await Self.posted(env)
        #expect(gzipped.headers["Content-Encoding"] == "gzip")
        #expect(gzipped.body.prefix(2) == Data([0x1F, 0x8B]))
    }

    // MARK: - OTEL_EXPORTER_OTLP_(LOGS_)CERTIFICATE

    @Test func theCertificateVariableIsReadAndTheSignalOneWins() throws {
        var env = Self.base
        env["OTEL_EXPORTER_OTLP_CERTIFICATE"] = "/etc/hostname"
        #expect(try #require(OTLPEnvironment.configuration(env)).trustedCAFile == "/etc/hostname")
        env["OTEL_EXPORTER_OTLP_LOGS_CERTIFICATE"] = "/nonexistent/collector-ca.pem"
        let c = try #require(OTLPEnvironment.configuration(env))
        #expect(c.trustedCAFile == "/nonexistent/collector-ca.pem")
        #expect(c.warnings.contains { $0.contains("OTEL_EXPORTER_OTLP_LOGS_CERTIFICATE") }, "\(c.warnings)")
    }

    #if canImport(CHalyardCurl)
        /// A collector behind a private CA, reached from the environment alone: through a client's
        /// default (libcurl) transport, the upload trusts the CA file; without it, it cannot.
        @Test func aCollectorBehindAPrivateCAIsReachedWithTheCertificateVariable() async throws {
            let certificate = try TransportTLSTests.makeCertificate()
            defer { try? FileManager.default.removeItem(at: certificate.folder) }
            let server = try await ControlPlaneServer.launched(tls: (certificate.certificate, certificate.key))
            defer { server.stop() }
            #expect(server.otlpEndpoint.scheme == "https")
            func sent(_ env: [String: String]) async throws -> Int {
                var o = ExposureOptions()
                o.flushInterval = .zero
                o.requestTimeout = .seconds(10)
                o.environment = [:]
                o.exporter = try Self.exporter(env)
                // What a client hands its recorder: its default transport, guarded.
                let transport = GuardedTransport.wrapping(CurlTransport(), logHandler: nil)
                let r = ExposureRecorder(
                    options: o, clock: ManualClock(), transport: transport, endpoint: server.baseURL,
                    meta: OTLPDeliveryTests.meta, headers: [:], startsTicker: false)
                OTLPDeliveryTests.record(r, 2)
                _ = await r.flush()
                return r.counters.sent
            }
            var env = ["OTEL_EXPORTER_OTLP_ENDPOINT": server.otlpEndpoint.absoluteString]
            #expect(try await sent(env) == 0)  // no system store trusts this certificate
            env["OTEL_EXPORTER_OTLP_CERTIFICATE"] = certificate.certificate
            #expect(try await sent(env) == 2)  // the strict receiver answered 200 to both records
        }
    #endif

    // MARK: - OTEL_SDK_DISABLED, OTEL_LOGS_EXPORTER

    @Test func aDisabledSDKOrNoLogsExporterGivesNoExporter() {
        for (name, value) in [
            ("OTEL_SDK_DISABLED", "true"), ("OTEL_SDK_DISABLED", "TRUE"), ("OTEL_LOGS_EXPORTER", "none"),
            ("OTEL_LOGS_EXPORTER", "console"),
        ] {
            var env = Self.base
            env[name] = value
            #expect(ExposureExporter.otlpFromEnvironment(env) == nil, "\(name)=\(value)")
        }
        for (name, value) in [
            ("OTEL_SDK_DISABLED", "false"), ("OTEL_LOGS_EXPORTER", "otlp"), ("OTEL_SDK_DISABLED", ""),
        ] {
            var env = Self.base
            env[name] = value
            #expect(ExposureExporter.otlpFromEnvironment(env) != nil, "\(name)=\(value)")
        }
    }

    // MARK: - A plain-http collector from the environment

    /// What the OpenTelemetry Operator injects: plain http to a collector Service in the cluster.
    static let operatorEnvironment = ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel-collector.observability:4318"]

    @Test func anOperatorEndpointNeverMakesTheClientThrowAndWarnsOnce() async throws {
        let exporter = try Self.exporter(Self.operatorEnvironment)
        var options = FlagClientOptions(baseURL: try #require(URL(string: "https://flags.example")), key: "cli-1")
        let transport = Scripted()
        options.transport = transport
        options.pollInterval = .zero
        options.maxCachedContexts = 0
        options.exposures.exporter = exporter
        options.exposures.flushInterval = .zero
        let logs = Locked([String]())
        options.logHandler = { _, message in logs.withLock { $0.append(message) } }
        let client = try FlagClient(options: options)
        defer { client.close() }
        let recorder = try #require(client.exposureRecorder)
        OTLPDeliveryTests.record(recorder, 1)
        _ = try await Wait.result("flushExposures()") { await client.flushExposures() }
        let posted = transport.requests.filter { $0.url.host == "otel-collector.observability" }
        #expect(posted.count == 1)
        #expect(posted.first?.url.absoluteString == "http://otel-collector.observability:4318/v1/logs")
        let warnings = logs.withLock { $0 }.filter { $0.contains("otel-collector.observability") }
        #expect(warnings.count == 1, "\(logs.withLock { $0 })")
    }

    @Test func anOperatorEndpointNeverMakesTheServiceThrow() throws {
        var options = FlagServiceOptions(baseURL: try #require(URL(string: "https://flags.example")), key: "srv-1")
        options.transport = Scripted()
        options.exposures.exporter = try Self.exporter(Self.operatorEnvironment)
        let service = try FlagService(options: options)
        service.close()
    }
}
