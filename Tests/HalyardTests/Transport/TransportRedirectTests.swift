import Foundation
import Testing

@testable import Halyard

/// Redirects through each real transport against two loopback servers (SPEC §5): another origin
/// (another port) receives nothing; a same-origin 307 is followed with its method and body; the
/// fourth redirect is refused.
@Suite(.serialized) struct TransportRedirectTests {
    static var flags: [String: Any] { ["default": [["key": "a", "value": 1]]] }

    @Test(arguments: TransportKind.available)
    func anotherOriginReceivesNothing(kind: TransportKind) async throws {
        let server = try await ControlPlaneServer.launched(flags: Self.flags)
        defer { server.stop() }
        let other = try await ControlPlaneServer.launched(flags: Self.flags)
        defer { other.stop() }
        let transport = kind.make()
        var request = RefreshTransportTests.request(server, timeout: .seconds(10))
        request.headers["Authorization"] = "Bearer secret"
        for status in [301, 302, 307, 308] {
            try await server.script([
                [
                    "action": "status", "status": status,
                    "headers": ["Location": "\(other.baseURL.absoluteString)/ofrep/v1/evaluate/flags?leak=1"],
                ]
            ])
            await #expect(
                throws: TransportError.redirectRefused(origin: "127.0.0.1:\(other.port)", reason: .otherOrigin)
            ) {
                try await transport.send(request)
            }
        }
        #expect(try await other.requests().isEmpty)
        #expect(try await transport.send(request).status == 200)  // the transport keeps working
    }

    @Test(arguments: TransportKind.available)
    func aSameOrigin307IsFollowedWithItsMethodAndBody(kind: TransportKind) async throws {
        let server = try await ControlPlaneServer.launched(flags: Self.flags)
        defer { server.stop() }
        let transport = kind.make()
        let request = RefreshTransportTests.request(server, timeout: .seconds(10))
        try await server.script([
            ["action": "status", "status": 307, "headers": ["Location": "/ofrep/v1/evaluate/flags"]]
        ])
        let response = try await transport.send(request)
        #expect(response.status == 200)
        let log = try await server.requests()
        #expect(log.count == 2)
        #expect(log.allSatisfy { $0.path == "/ofrep/v1/evaluate/flags" })
        #expect(log.last?.body == String(decoding: request.body, as: UTF8.self), "\(log.map(\.body))")
    }

    @Test(arguments: TransportKind.available)
    func theFourthRedirectIsRefused(kind: TransportKind) async throws {
        let server = try await ControlPlaneServer.launched(flags: Self.flags)
        defer { server.stop() }
        let transport = kind.make()
        let request = RefreshTransportTests.request(server, timeout: .seconds(10))
        try await server.script([
            ["action": "status", "status": 308, "headers": ["Location": "/ofrep/v1/evaluate/flags"], "count": 4]
        ])
        await #expect(
            throws: TransportError.redirectRefused(origin: "127.0.0.1:\(server.port)", reason: .tooManyRedirects)
        ) {
            try await transport.send(request)
        }
        #expect(try await server.requests().count == 4)
    }
}
