import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// The one identity every request carries (issue 8), and its lazily resolved install id
/// (issue 14: never read or written on the thread that creates the client).
@Suite struct ClientIdentityTests {
    @Test func headersAndEndpointsComeFromOnePlace() {
        let identity = ClientIdentity(
            baseURL: URL(string: "https://flags.example.com/base/")!, key: "k-1", appID: "app", installID: "inst")
        #expect(identity.headers["Authorization"] == "Bearer k-1")
        #expect(identity.headers[ClientIdentity.installIDHeader] == "inst")
        #expect(identity.headers[ClientIdentity.appIDHeader] == "app")
        #expect(identity.headers["User-Agent"] == ClientIdentity.userAgent)
        #expect(identity.endpoint("/v1/exposures").absoluteString == "https://flags.example.com/base/v1/exposures")
        #expect(identity.endpoint("ofrep/v1/evaluate/flags").absoluteString.hasSuffix("/base/ofrep/v1/evaluate/flags"))
        identity.setKey("k-2")
        #expect(identity.headers["Authorization"] == "Bearer k-2")
    }

    @Test func installIDIsResolvedOnFirstUseAndOnlyOnce() async {
        let calls = Locked(0)
        let identity = ClientIdentity(
            baseURL: URL(string: "https://flags.example.com")!, key: "k", appID: nil,
            installID: {
                calls.withLock { $0 += 1 }
                return "resolved"
            })
        #expect(calls.value == 0)  // creating the identity reads nothing
        await withTaskGroup(of: String?.self) { group in
            for _ in 0..<16 { group.addTask { identity.headers[ClientIdentity.installIDHeader] } }
            for await id in group { #expect(id == "resolved") }
        }
        #expect(calls.value == 1)
    }

    /// The client's first request builds its headers (and so resolves the install id) in the
    /// fetch task; a file-backed install id still reaches every request and the exposure meta.
    @Test func fileInstallIDReachesRequestsAndExposures() async throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "halyard-\(UUID().uuidString)/install-id")
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        var options = plane.makeOptions()
        options.installIDStorage = .file(url)
        let client = try FlagClient(options: options)
        #expect(await client.ready(timeout: .seconds(30)))
        #expect(client.bool("a", default: false))
        _ = await client.shutdown(timeout: .seconds(5))
        let stored = try String(contentsOf: url, encoding: .utf8)
        #expect(plane.requests.allSatisfy { $0.headers[ClientIdentity.installIDHeader] == stored })
        #expect(plane.requests.count == 2)  // the fetch and the upload
    }
}
