import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// The transports' error mapping against the loopback server (each transport), install ids, and
/// fitting.
@Suite(.serialized) struct RefreshTransportTests {
    static func request(_ server: ControlPlaneServer, timeout: Duration = .seconds(2), limit: Int = 1 << 20)
        -> TransportRequest
    {
        TransportRequest(
            url: server.baseURL.appendingPathComponent("ofrep/v1/evaluate/flags"),
            headers: ["Content-Type": "application/json"],
            body: Data(#"{"context":{"targetingKey":"","kind":"user"}}"#.utf8),
            timeout: timeout, maxResponseBytes: limit)
    }

    @Test(arguments: TransportKind.available)
    func errorMapping(kind: TransportKind) async throws {
        let server = try await ControlPlaneServer.launched(flags: ["default": [["key": "a", "value": 1]]])
        defer { server.stop() }
        let transport = kind.make()

        let ok = try await transport.send(Self.request(server))
        #expect(ok.status == 200)
        #expect(ok.header("etag") != nil)

        try await server.script([["action": "delay", "seconds": 1.5]])
        await #expect(throws: TransportError.timedOut) {
            try await transport.send(Self.request(server, timeout: .milliseconds(700)))
        }

        try await server.script([["action": "oversize", "bytes": 50_000]])
        await #expect(throws: TransportError.responseTooLarge(limit: 10_000)) {
            try await transport.send(Self.request(server, limit: 10_000))
        }
        try await server.script([["action": "oversize", "bytes": 50_000, "declareLength": false]])
        await #expect(throws: TransportError.responseTooLarge(limit: 10_000)) {
            try await transport.send(Self.request(server, limit: 10_000))
        }

        // Content-Encoding: gzip is decoded, the header is kept, and the limit holds on the
        // decoded size (2 KiB on the wire, 2 MiB decoded).
        try await server.script([["action": "gzipbomb", "inflatedBytes": 2 << 20]])
        let inflated = try await transport.send(Self.request(server, limit: 4 << 20))
        #expect(inflated.status == 200)
        #expect(inflated.header("Content-Encoding") == "gzip")
        #expect(inflated.body == Data(count: 2 << 20))
        try await server.script([["action": "gzipbomb", "inflatedBytes": 2 << 20]])
        await #expect(throws: TransportError.responseTooLarge(limit: 1 << 20)) {
            try await transport.send(Self.request(server, limit: 1 << 20))
        }

        try await server.script([["action": "status", "status": 503, "headers": ["Retry-After": "7"], "body": "busy"]])
        let busy = try await transport.send(Self.request(server))
        #expect(busy.status == 503)
        #expect(busy.header("Retry-After") == "7")
        #expect(String(decoding: busy.body, as: UTF8.self) == "busy")

        // The server holds the request 10 s (the send's timeout is 20 s), so the cancel below
        // arrives first even on a loaded machine; with 1 s and the default 2 s timeout, a full
        // parallel run once answered 200 before the cancel. A passing run does not wait it out.
        try await server.script([["action": "delay", "seconds": 10]])
        let logged = try await server.requests().count
        let task = Task { try await transport.send(Self.request(server, timeout: .seconds(20))) }
        // Cancel once the server holds the request (it logs before the delay).
        try await Wait.untilAsync("the server to receive the request") { try await server.requests().count > logged }
        task.cancel()
        await #expect(throws: TransportError.cancelled) {
            try await Wait.result("the cancelled send") { try await task.value }
        }

        let refused = TransportRequest(url: try #require(URL(string: "http://127.0.0.1:1/x")), timeout: .seconds(2))
        await #expect(throws: TransportError.self) { try await transport.send(refused) }
    }

    @Test func gzipInflationRespectsTheLimit() throws {
        let big = Data(repeating: 0x61, count: 100_000)
        let packed = Gzip.compress(big)
        #expect(packed.count < 1_000)
        #expect(try Gzip.inflate(packed, limit: 200_000) == big)
        #expect(throws: GzipError.tooLarge(limit: 50_000)) { try Gzip.inflate(packed, limit: 50_000) }
        #expect(throws: GzipError.invalid) { try Gzip.inflate(Data("not gzip".utf8), limit: 0) }
    }

    @Test func fileInstallIDIsPersisted() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "halyard-\(UUID().uuidString)/install-id")
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let first = InstallIDStorage.file(url).resolve()
        let second = InstallIDStorage.file(url).resolve()
        #expect(first == second)
        #expect(first.count == 36)
        #expect(InstallIDStorage.memory.resolve() != InstallIDStorage.memory.resolve())
        #expect(InstallIDStorage.fixed("x").resolve() == "x")
    }

    @Test func oversizedContextsAreTrimmedAndTheTrimIsCountedAndLoggedOnce() async throws {
        let plane = InMemoryControlPlane(values: ["a": 1])
        let lines = Locked<[String]>([])
        var options = plane.makeOptions()
        options.maxContextCodeUnits = 200
        options.logHandler = { _, message in lines.withLock { $0.append(message) } }
        options.initialContext = EvaluationContext(
            targetingKey: "u1", attributes: ["big": .string(String(repeating: "x", count: 300)), "small": "s"])
        let client = try FlagClient(options: options)
        defer { client.close() }
        #expect(try await Wait.result("ready(timeout:)") { await client.ready(timeout: .seconds(30)) })
        #expect(client.stats.sync.droppedAttributes == ["big"])
        #expect(plane.contextUpdates.last == ["targetingKey": "u1", "kind": "user", "small": "s"])
        let big = EvaluationContext(
            targetingKey: "u2", attributes: ["big": .string(String(repeating: "y", count: 300))])
        #expect(try await Wait.result("identify(u2)") { await client.identify(big) })
        #expect(client.stats.sync.contextTrims == 2)
        // A marker log line: a failed refresh is logged after anything the identify logged.
        plane.failInitialization(status: 503)
        try await client.refreshOrFail()
        try await Wait.until("the marker log line (503)") { lines.value.contains { $0.contains("503") } }
        #expect(lines.value.filter { $0.contains("trimmed") }.count == 1)
    }
}
