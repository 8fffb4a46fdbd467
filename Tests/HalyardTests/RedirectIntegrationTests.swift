import Foundation
import Testing

@testable import Halyard

/// The redirect rule through the whole client, for each of its requests (SPEC §5): OFREP, the
/// exposure upload and the OTLP export. A 307/308 to another loopback origin (another port) sends
/// nothing there, logs one line naming only `host:port`, and the client keeps serving; a
/// same-origin 307 is followed.
@Suite(.serialized) struct RedirectIntegrationTests {
    static var flags: [String: Any] { ["default": [["key": "a", "value": 1, "reason": "STATIC", "variant": "one"]]] }

    enum Upload: String, CaseIterable, CustomTestStringConvertible {
        case exposures = "/v1/exposures"
        case otlp = "/v1/logs"
        var testDescription: String { rawValue }
    }

    static func options(_ server: ControlPlaneServer, _ kind: TransportKind, _ log: CurlLoaderTests.LogLines)
        -> FlagClientOptions
    {
        var options = FlagClientOptions(baseURL: server.baseURL, key: "cli-redirect")
        options.transport = kind.make()
        options.pollInterval = .zero
        options.installIDStorage = .fixed("install-redirect")
        options.maxCachedContexts = 0
        options.requestTimeout = .seconds(10)
        options.exposures.enabled = false
        options.logHandler = log.handler
        return options
    }

    static func redirectLines(_ log: CurlLoaderTests.LogLines) -> [String] {
        log.lines.value.map(\.1).filter { $0.contains("redirect to") }
    }

    @Test(arguments: TransportKind.available)
    func ofrepRedirects(kind: TransportKind) async throws {
        let server = try await ControlPlaneServer.launched(flags: Self.flags)
        defer { server.stop() }
        let other = try await ControlPlaneServer.launched(flags: ["default": [["key": "a", "value": 666]]])
        defer { other.stop() }
        let log = CurlLoaderTests.LogLines()
        let client = try FlagClient(options: Self.options(server, kind, log))
        defer { client.close() }
        #expect(try await Wait.result("ready(timeout:)") { await client.ready(timeout: .seconds(30)) })
        #expect(client.int("a", default: 0) == 1)

        // Same origin: followed, and its answer is applied.
        try await server.setFlags(["default": [["key": "a", "value": 2, "reason": "STATIC"]]])
        try await server.script([
            ["action": "status", "status": 307, "headers": ["Location": "/ofrep/v1/evaluate/flags"]]
        ])
        let before = try await server.requests().count
        try await client.refreshOrFail()
        #expect(try await server.requests().count == before + 2)
        #expect(client.int("a", default: 0) == 2)

        // Another origin: refused, nothing sent there, one log line.
        try await server.script([
            [
                "action": "status", "status": 308,
                "headers": ["Location": "\(other.baseURL.absoluteString)/ofrep/v1/evaluate/flags?token=leak"],
            ]
        ])
        try await client.refreshOrFail()
        #expect(try await other.requests().isEmpty)
        #expect(client.int("a", default: 0) == 2)  // still serving the held values
        let lines = Self.redirectLines(log)
        #expect(lines.count == 1, "\(lines)")
        #expect(lines.first?.contains("127.0.0.1:\(other.port)") == true, "\(lines)")
        #expect(lines.allSatisfy { !$0.contains("leak") && !$0.contains("/ofrep") }, "\(lines)")

    }

    @Test(arguments: TransportKind.available, Upload.allCases)
    func uploadToAnotherOriginSendsNothingThere(kind: TransportKind, upload: Upload) async throws {
        let server = try await ControlPlaneServer.launched(flags: Self.flags)
        defer { server.stop() }
        let other = try await ControlPlaneServer.launched(flags: Self.flags)
        defer { other.stop() }
        let log = CurlLoaderTests.LogLines()
        var options = Self.options(server, kind, log)
        options.exposures.enabled = true
        options.exposures.flushInterval = .zero
        if upload == .otlp {
            options.exposures.exporter = .otlp(endpoint: server.otlpEndpoint, headers: ["Authorization": "Basic a2V5"])
        }
        let client = try FlagClient(options: options)
        defer { client.close() }
        #expect(try await Wait.result("ready(timeout:)") { await client.ready(timeout: .seconds(30)) })
        try await server.script([
            [
                "path": upload.rawValue, "action": "status", "status": 307,
                "headers": ["Location": "\(other.baseURL.absoluteString)\(upload.rawValue)?k=leak"],
            ]
        ])
        #expect(client.int("a", default: 0) == 1)
        let result = try await Wait.result("flushExposures()") { await client.flushExposures() }
        #expect(result.sentEvents == 0)
        #expect(try await other.requests().isEmpty)
        #expect(client.int("a", default: 0) == 1)
        let lines = Self.redirectLines(log)
        #expect(lines.count == 1, "\(lines)")
        #expect(lines.first?.contains("127.0.0.1:\(other.port)") == true, "\(lines)")
        #expect(lines.allSatisfy { !$0.contains("leak") && !$0.contains(upload.rawValue) }, "\(lines)")
    }

    @Test(arguments: TransportKind.available, Upload.allCases)
    func uploadSameOrigin307IsFollowed(kind: TransportKind, upload: Upload) async throws {
        let server = try await ControlPlaneServer.launched(flags: Self.flags)
        defer { server.stop() }
        let log = CurlLoaderTests.LogLines()
        var options = Self.options(server, kind, log)
        options.exposures.enabled = true
        options.exposures.flushInterval = .zero
        if upload == .otlp {
            options.exposures.exporter = .otlp(endpoint: server.otlpEndpoint, headers: ["Authorization": "Basic a2V5"])
        }
        let client = try FlagClient(options: options)
        defer { client.close() }
        #expect(try await Wait.result("ready(timeout:)") { await client.ready(timeout: .seconds(30)) })
        try await server.script([
            ["path": upload.rawValue, "action": "status", "status": 307, "headers": ["Location": upload.rawValue]]
        ])
        #expect(client.int("a", default: 0) == 1)
        let result = try await Wait.result("flushExposures()") { await client.flushExposures() }
        #expect(result.sentEvents == 1)
        let uploads = try await server.requests().filter { $0.path == upload.rawValue }
        #expect(uploads.count == 2)
        #expect(Self.redirectLines(log).isEmpty)
    }
}
