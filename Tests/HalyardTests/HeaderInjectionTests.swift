import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// No control character (U+0000–U+001F, U+007F) reaches a request line or header (SPEC §5): a key
/// or app id holding one is refused where it is configured (init and `setKey` throw a typed error
/// naming the field), an OTLP header holding one is dropped with one warning, and both transports
/// refuse a request whose header holds one rather than send it.
@Suite(.serialized) struct HeaderInjectionTests {
    static let hostile = "k1\r\nX-Evil: 1"

    static func clientOptions(key: String = "cli-1", appID: String? = nil) throws -> FlagClientOptions {
        var options = FlagClientOptions(baseURL: try #require(URL(string: "https://flags.example")), key: key)
        options.transport = OTLPDeliveryTests.ScriptedTransport()
        options.pollInterval = .zero
        options.maxCachedContexts = 0
        options.appID = appID
        return options
    }

    @Test func aKeyOrAppIDWithAControlCharacterIsRefusedAtInit() throws {
        for key in [Self.hostile, "k1\nX-Evil: 1", "k\u{0}1", "k\u{7F}1", "k\t1"] {
            #expect(throws: FlagClientError.controlCharacter(field: "key"), "\(key.debugDescription)") {
                let client = try FlagClient(options: try Self.clientOptions(key: key))
                client.close()
            }
        }
        #expect(throws: FlagClientError.controlCharacter(field: "appID")) {
            let client = try FlagClient(options: try Self.clientOptions(appID: "app\r\nX-Evil: 1"))
            client.close()
        }
        var service = FlagServiceOptions(baseURL: try #require(URL(string: "https://flags.example")), key: Self.hostile)
        service.transport = OTLPDeliveryTests.ScriptedTransport()
        #expect(throws: FlagServiceError.controlCharacter(field: "key")) {
            let s = try FlagService(options: service)
            s.close()
        }
        service.key = "srv-1"
        service.appID = "a\u{1B}b"
        #expect(throws: FlagServiceError.controlCharacter(field: "appID")) {
            let s = try FlagService(options: service)
            s.close()
        }
    }

    @Test func setKeyRefusesAControlCharacterAndKeepsTheOldKey() async throws {
        let client = try FlagClient(options: try Self.clientOptions())
        defer { client.close() }
        await #expect(throws: FlagClientError.controlCharacter(field: "key")) { try await client.setKey(Self.hostile) }
        #expect(client.sync?.identityHeaders["Authorization"] == "Bearer cli-1")

        var options = FlagServiceOptions(baseURL: try #require(URL(string: "https://flags.example")), key: "srv-1")
        options.transport = OTLPDeliveryTests.ScriptedTransport()
        let service = try FlagService(options: options)
        defer { service.close() }
        await #expect(throws: FlagServiceError.controlCharacter(field: "key")) {
            try await service.setKey(Self.hostile)
        }
    }

    /// A key file's final newline is surrounding whitespace: trimmed, as before, not refused.
    @Test func surroundingWhitespaceIsTrimmedNotRefused() async throws {
        let client = try FlagClient(options: try Self.clientOptions(key: " cli-1\n", appID: "app\n"))
        defer { client.close() }
        #expect(client.sync?.identityHeaders["Authorization"] == "Bearer cli-1")
        #expect(client.sync?.identityHeaders[ClientIdentity.appIDHeader] == "app")
        try await client.setKey("cli-2\r\n")
        #expect(client.sync?.identityHeaders["Authorization"] == "Bearer cli-2")
    }

    /// Defence in depth: whatever hands a transport a header value with CR/LF (a custom caller,
    /// a future bug), neither transport puts it on the wire.
    @Test(arguments: TransportKind.available)
    func transportsRefuseAHeaderHoldingCRLF(kind: TransportKind) async throws {
        let server = try await ControlPlaneServer.launched()
        defer { server.stop() }
        let transport = kind.make()
        let url = server.baseURL.appendingPathComponent("ofrep/v1/evaluate/flags")
        for (name, value) in [("Authorization", "Bearer " + Self.hostile), ("X-Halyard-App-Id", "a\nX-Evil: 2")] {
            let request = TransportRequest(
                url: url, headers: [name: value, "Content-Type": "application/json"],
                body: Data(#"{"context":{}}"#.utf8),
                timeout: .seconds(10))
            await #expect(throws: TransportError.self, "\(kind) \(name)") { _ = try await transport.send(request) }
        }
        let seen = try await server.requests()
        #expect(seen.allSatisfy { $0.header("X-Evil") == nil }, "\(seen.map(\.headers))")
        #expect(seen.isEmpty, "\(seen.map(\.headers))")
    }

    /// An OTLP header given in code with a control character is dropped with one warning; the
    /// others are sent.
    @Test func anOTLPHeaderWithAControlCharacterIsDroppedWithOneWarning() async throws {
        let transport = OTLPDeliveryTests.ScriptedTransport()
        let logs = Locked([String]())
        let r = OTLPDeliveryTests.recorder(
            transport, clock: ManualClock(), log: { line in logs.withLock { $0.append(line) } },
            edit: {
                $0.exporter = .otlp(
                    endpoint: OTLPDeliveryTests.endpoint, headers: ["X-Bad": "a\r\nX-Evil: 1", "X-Good": "ok"])
            })
        OTLPDeliveryTests.record(r, 2)
        _ = await r.flush()
        OTLPDeliveryTests.record(r, 2, from: 2)
        _ = await r.flush()
        let requests = transport.requests
        #expect(requests.count == 2)
        #expect(requests.allSatisfy { $0.headers["X-Bad"] == nil && $0.headers["X-Good"] == "ok" })
        let warnings = logs.withLock { $0 }.filter { $0.contains("X-Bad") }
        #expect(warnings.count == 1, "\(logs.withLock { $0 })")
        #expect(!logs.withLock { $0 }.joined().contains("X-Evil"))  // the value is never logged
    }
}
