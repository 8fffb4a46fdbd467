import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// The OTLP exporter configured as OpenTelemetry users configure it (SPEC §13, docs/exposures.md
/// "OTLP configuration"): the logs URL rule, `otlpFromEnvironment`, and the resource.
@Suite struct OTLPConfigurationTests {
    typealias Scripted = OTLPDeliveryTests.ScriptedTransport

    static func url(_ s: String) throws -> URL { try #require(URL(string: s)) }

    /// The URL a recorder with `exporter` posts to (through the scripted transport).
    static func postedURL(_ exporter: ExposureExporter) async throws -> String {
        let transport = Scripted()
        let r = OTLPDeliveryTests.recorder(transport, clock: ManualClock(), edit: { $0.exporter = exporter })
        OTLPDeliveryTests.record(r, 1)
        _ = await r.flush()
        return try #require(transport.requests.first).url.absoluteString
    }

    /// The decompressed body a recorder posts for one exposure.
    static func body(_ edit: (inout ExposureOptions) -> Void, meta: ExposureMeta = OTLPDeliveryTests.meta)
        async throws -> String
    {
        let transport = Scripted()
        var o = ExposureOptions()
        o.flushInterval = .zero
        o.exporter = .otlp(endpoint: try url("https://otel.example:4318"), headers: [:])
        o.environment = [:]
        edit(&o)
        let r = ExposureRecorder(
            options: o, clock: ManualClock(), transport: transport, endpoint: try url("https://flags.example"),
            meta: meta, headers: [:], startsTicker: false)
        OTLPDeliveryTests.record(r, 1)
        _ = await r.flush()
        let request = try #require(transport.requests.first)
        return String(decoding: try Gzip.inflate(request.body, limit: 1 << 20), as: UTF8.self)
    }

    static func attribute(_ key: String, _ value: String) -> String {
        #"{"key":"\#(key)","value":{"stringValue":"\#(value)"}}"#
    }

    // MARK: - The logs URL

    /// Issue 24: the signal URL (`…/v1/logs`) was given `/v1/logs` again, and a query string
    /// was broken by concatenation onto the whole URL.
    @Test func baseEndpointsGetTheSignalPathAndSignalURLsAreKept() async throws {
        let cases: [(String, String)] = [
            ("https://otel.example:4318", "https://otel.example:4318/v1/logs"),
            ("https://otel.example:4318/", "https://otel.example:4318/v1/logs"),
            ("https://otel.example/otlp", "https://otel.example/otlp/v1/logs"),
            ("https://otel.example/otlp/", "https://otel.example/otlp/v1/logs"),
            ("https://otel.example:4318/v1/logs", "https://otel.example:4318/v1/logs"),
            ("https://otel.example:4318/v1/logs/", "https://otel.example:4318/v1/logs/"),
            ("https://otel.example/tenant/v1/logs", "https://otel.example/tenant/v1/logs"),
            ("https://otel.example/otlp?tenant=a%20b", "https://otel.example/otlp/v1/logs?tenant=a%20b"),
            ("https://otel.example/?k=1&j=2", "https://otel.example/v1/logs?k=1&j=2"),
            ("https://otel.example/v1/logs?tenant=t1", "https://otel.example/v1/logs?tenant=t1"),
        ]
        for (endpoint, expected) in cases {
            let exporter = ExposureExporter.otlp(endpoint: try Self.url(endpoint), headers: [:])
            #expect(exporter.otlpLogsURL?.absoluteString == expected, "\(endpoint)")
            #expect(try await Self.postedURL(exporter) == expected, "\(endpoint)")
        }
        #expect(ExposureExporter.halyard.otlpLogsURL == nil)
    }

    // MARK: - otlpFromEnvironment

    @Test func noEndpointMeansNoExporter() {
        #expect(ExposureExporter.otlpFromEnvironment([:]) == nil)
        #expect(
            ExposureExporter.otlpFromEnvironment([
                "OTEL_EXPORTER_OTLP_ENDPOINT": " ", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "",
                "OTEL_EXPORTER_OTLP_HEADERS": "a=b", "OTEL_SERVICE_NAME": "svc",
            ]) == nil)
    }

    static func configuration(_ env: [String: String]) throws -> OTLPExporterConfiguration {
        guard case .otlpConfigured(let c)? = ExposureExporter.otlpFromEnvironment(env) else {
            throw ConfigurationMissing()
        }
        return c
    }

    struct ConfigurationMissing: Error {}

    @Test func theSignalEndpointIsUsedAsItIsTheGenericOneGetsTheSignalPath() async throws {
        let generic = try Self.configuration(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318/base?x=1"])
        #expect(generic.logsURL.absoluteString == "http://127.0.0.1:4318/base/v1/logs?x=1")
        let signal = try Self.configuration([
            "OTEL_EXPORTER_OTLP_ENDPOINT": "https://generic.example",
            "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "https://logs.example/custom/ingest",
        ])
        #expect(signal.logsURL.absoluteString == "https://logs.example/custom/ingest")
        let copied = try Self.configuration(["OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": " http://127.0.0.1:4318/v1/logs "])
        #expect(copied.logsURL.absoluteString == "http://127.0.0.1:4318/v1/logs")
        #expect(
            try await Self.postedURL(.otlpConfigured(signal)) == "https://logs.example/custom/ingest")
    }

    @Test func signalHeadersReplaceTheGenericOnesAndAreURLDecoded() throws {
        let generic = try Self.configuration([
            "OTEL_EXPORTER_OTLP_ENDPOINT": "https://c.example",
            "OTEL_EXPORTER_OTLP_HEADERS":
                " Authorization = Basic%20dXNlcjpwdw%3D%3D , X-Tenant=a%2Cb,broken, =x,bad%zz=1",
        ])
        #expect(generic.headers == ["Authorization": "Basic dXNlcjpwdw==", "X-Tenant": "a,b"])
        let signal = try Self.configuration([
            "OTEL_EXPORTER_OTLP_ENDPOINT": "https://c.example",
            "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=generic,X-Generic=1",
            "OTEL_EXPORTER_OTLP_LOGS_HEADERS": "Authorization=logs",
        ])
        // Not merged: the generic variable is ignored altogether.
        #expect(signal.headers == ["Authorization": "logs"])
        // A value that would split the request (CR LF) or a name that is not a token is skipped.
        let hostile = try Self.configuration([
            "OTEL_EXPORTER_OTLP_ENDPOINT": "https://c.example",
            "OTEL_EXPORTER_OTLP_HEADERS": "A=1%0D%0AInjected: yes,Bad Name=2,Ok=3",
        ])
        #expect(hostile.headers == ["Ok": "3"])
    }

    @Test func serviceNameAndResourceAttributesComeFromTheEnvironment() throws {
        let c = try Self.configuration([
            "OTEL_EXPORTER_OTLP_ENDPOINT": "https://c.example",
            "OTEL_SERVICE_NAME": "checkout",
            "OTEL_RESOURCE_ATTRIBUTES":
                "service.name=ignored,service.version=1.2.3,deployment.environment.name=prod%20eu,service.instance.id=i-7",
        ])
        #expect(
            c.resourceAttributes == [
                "service.name": "checkout", "service.version": "1.2.3", "deployment.environment.name": "prod eu",
                "service.instance.id": "i-7",
            ])
        // A value that cannot be decoded discards the whole variable (OpenTelemetry SDK rule).
        let bad = try Self.configuration([
            "OTEL_EXPORTER_OTLP_ENDPOINT": "https://c.example",
            "OTEL_RESOURCE_ATTRIBUTES": "service.version=1,deployment.environment.name=%zz",
        ])
        #expect(bad.resourceAttributes.isEmpty)
    }

    /// The environment's configuration never makes creation throw (SPEC §13): plain http to a
    /// collector in the cluster is what the OpenTelemetry Operator injects. (Until then it threw
    /// `invalidExposureExporter`: a telemetry variable took the flags away.) A plain-http
    /// `.otlp(endpoint:)` written in code is still refused (OTLPDeliveryTests).
    @Test func anInsecureEnvironmentEndpointIsAcceptedAtClientCreation() throws {
        let exporter = try #require(
            ExposureExporter.otlpFromEnvironment(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector.example:4318"]))
        var options = FlagClientOptions(baseURL: try Self.url("https://flags.example"), key: "cli-1")
        options.transport = Scripted()
        options.pollInterval = .zero
        options.maxCachedContexts = 0
        options.exposures.exporter = exporter
        let client = try FlagClient(options: options)
        client.close()
        // Not even an endpoint that cannot be used: a warning at creation, its exposures dropped.
        options.exposures.exporter = try #require(
            ExposureExporter.otlpFromEnvironment(["OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "ftp://collector.example"]))
        let other = try FlagClient(options: options)
        other.close()
    }

    // MARK: - The resource

    @Test func resourceCarriesTheKnownAttributesAndTheSchemaURL() async throws {
        let logsURL = try Self.url("https://otel.example/v1/logs")
        let body = try await Self.body {
            $0.exporter = .otlpConfigured(
                OTLPExporterConfiguration(
                    logsURL: logsURL,
                    resourceAttributes: [
                        "service.name": "from-env", "service.version": "env", "deployment.environment.name": "staging",
                        "telemetry.sdk.name": "spoofed",
                    ]))
            $0.resourceAttributes = ["service.version": "2.0.0", "service.instance.id": "pod-3"]
        }
        let resource =
            #"{"resource":{"attributes":["# + Self.attribute("service.name", "from-env") + ","
            + Self.attribute("deployment.environment.name", "staging") + ","
            + Self.attribute("service.instance.id", "pod-3") + "," + Self.attribute("service.version", "2.0.0") + ","
            + Self.attribute("telemetry.sdk.name", "halyard") + ","
        #expect(body.contains(resource), "\(body)")
        #expect(
            body.hasSuffix(
                #"],"schemaUrl":"\#(OTLPLogsEncoder.schemaURL)"}],"schemaUrl":"\#(OTLPLogsEncoder.schemaURL)"}]}"#))
        #expect(!body.contains("spoofed"))
    }

    @Test func theOptionsServiceNameWinsOverTheEnvironment() async throws {
        let meta = ExposureMeta(sdk: "Halyard", version: "0.1.0", appId: "app", installId: "i", serviceName: "opt")
        let body = try await Self.body({ $0.environment = ["OTEL_SERVICE_NAME": "env"] }, meta: meta)
        #expect(body.contains(Self.attribute("service.name", "opt")))
        // Without it the environment's beats the app id.
        let fromEnv = try await Self.body { $0.environment = ["OTEL_SERVICE_NAME": "env"] }
        #expect(fromEnv.contains(Self.attribute("service.name", "env")))
        let fromApp = try await Self.body { _ in }
        #expect(fromApp.contains(Self.attribute("service.name", "app")))
    }

    /// `.otlp(endpoint:headers:)` given directly reads the process environment at creation
    /// (here injected), under the options.
    @Test func directOTLPReadsTheEnvironmentAtCreation() async throws {
        let body = try await Self.body {
            $0.environment = ["OTEL_RESOURCE_ATTRIBUTES": "service.version=9,deployment.environment.name=dev"]
            $0.resourceAttributes = ["deployment.environment.name": "qa"]
        }
        #expect(body.contains(Self.attribute("deployment.environment.name", "qa")))
        #expect(body.contains(Self.attribute("service.version", "9")))
    }

    /// Every record says how it was sampled and de-duplicated: one record is one exposure.
    @Test func recordsCarryTheSampleRateAndTheDedupWindow() async throws {
        let body = try await Self.body {
            $0.sampleRate = 1
            $0.dedupWindow = .seconds(60)
        }
        #expect(
            body.contains(
                #"{"key":"halyard.exposure.sample_rate","value":{"doubleValue":1}},{"key":"halyard.exposure.dedup_window","value":{"intValue":"60"}}]}"#
            ))
    }
}
