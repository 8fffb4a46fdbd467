import Foundation
import Testing

@testable import Halyard

/// TLS to a loopback server whose self-signed certificate (made by `openssl` for this run) no
/// system store trusts: every transport refuses it; CurlTransport accepts it when told to trust
/// that certificate (`CurlTransport(trustedCAFile:)`), and still refuses another server's.
@Suite(.serialized) struct TransportTLSTests {
    struct Certificate {
        let folder: URL
        var certificate: String { folder.appendingPathComponent("cert.pem").path }
        var key: String { folder.appendingPathComponent("key.pem").path }
    }

    static func makeCertificate(commonName: String = "127.0.0.1") throws -> Certificate {
        let openssl = try #require(ExternalTool.find("openssl"), "openssl is required (.ci/run installs it)")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("halyard-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let certificate = Certificate(folder: folder)
        let result = try ExternalTool.filter(
            openssl,
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=\(commonName)",
                "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", certificate.key, "-out", certificate.certificate,
            ], input: Data())
        try #require(result.status == 0, "openssl req failed")
        return certificate
    }

    static func expectRefused(_ transport: any FlagTransport, _ request: TransportRequest) async {
        do {
            let response = try await transport.send(request)
            Issue.record("an untrusted certificate was accepted: status \(response.status)")
        } catch let error as TransportError {
            guard case .network = error else {
                Issue.record("expected a network error, got \(error)")
                return
            }
        } catch {
            Issue.record("expected a TransportError, got \(error)")
        }
    }

    @Test(arguments: TransportKind.available)
    func selfSignedCertificateIsRefusedUnlessTrusted(kind: TransportKind) async throws {
        let certificate = try Self.makeCertificate()
        let other = try Self.makeCertificate()
        defer {
            try? FileManager.default.removeItem(at: certificate.folder)
            try? FileManager.default.removeItem(at: other.folder)
        }
        let server = try await ControlPlaneServer.launched(
            flags: ["default": [["key": "a", "value": 1]]], tls: (certificate.certificate, certificate.key))
        defer { server.stop() }
        let request = RefreshTransportTests.request(server, timeout: .seconds(5))
        #expect(request.url.scheme == "https")

        await Self.expectRefused(kind.make(), request)
        guard kind == .curl else { return }  // URLSession on Linux has no per-session trust option
        await Self.expectRefused(kind.make(trustedCAFile: other.certificate), request)
        let trusted = try await kind.make(trustedCAFile: certificate.certificate).send(request)
        #expect(trusted.status == 200)
        #expect(String(decoding: trusted.body, as: UTF8.self).contains(#""key": "a""#))
    }
}
