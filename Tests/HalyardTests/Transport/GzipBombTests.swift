import Foundation
import Testing

@testable import Halyard

/// A gzip bomb (about 1 MiB that inflates to 1 GiB of zeros) served by the loopback control plane
/// with `Content-Encoding: gzip` is refused as too large, and the process's peak resident memory
/// stays near the limit: the body is inflated once, never past the limit.
@Suite(.serialized) struct GzipBombTests {
    static let limit = 4 << 20

    /// libcurl under URLSession decodes the declared encoding itself: the bomb reaches the
    /// transport's own inflate as a second gzip layer. CurlTransport decodes the declared layer.
    @Test(arguments: TransportKind.available)
    func bombIsRefusedAsTooLargeWithBoundedPeakMemory(kind: TransportKind) async throws {
        let server = try await ControlPlaneServer.launched()
        defer { server.stop() }
        let layers = kind == .urlSession ? 2 : 1
        try await server.script([["action": "gzipbomb", "inflatedBytes": 1 << 30, "layers": layers]])
        let transport = kind.make()
        let request = TransportRequest(
            url: server.baseURL.appendingPathComponent("ofrep/v1/evaluate/flags"),
            headers: ["Content-Type": "application/json", "Accept-Encoding": "gzip"],
            body: Data(#"{"context":{"targetingKey":"","kind":"user"}}"#.utf8),
            timeout: .seconds(60), maxResponseBytes: Self.limit)
        let reset = ProcessProbe.resetPeak()
        let before = try #require(reset ? ProcessProbe.residentBytes : ProcessProbe.peakResidentBytes)
        await #expect(throws: TransportError.responseTooLarge(limit: Self.limit)) {
            try await transport.send(request)
        }
        let peak = try #require(ProcessProbe.peakResidentBytes)
        let growth = peak - before
        // The limit is 4 MiB; the inflated bomb is 1 GiB. Other suites run in parallel, so leave
        // them room: the old double inflate grew the peak by more than 1 GiB.
        print(
            "gzip bomb (\(kind.rawValue)): peak resident growth \(growth >> 10) KiB, before \(before >> 10) KiB, peak \(peak >> 10) KiB, reset \(reset)"
        )
        #expect(growth < 192 << 20, "peak resident memory grew by \(growth >> 20) MiB (reset: \(reset))")
    }
}
