import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// What happens to a client its owner drops without calling `close()`.
@Suite struct ClientLifetimeTests {
    @Test func aDroppedClientStopsPollingAndFlushesExposures() async throws {
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        var options = plane.makeOptions()
        options.pollInterval = .milliseconds(10)
        options.pollJitter = 0
        options.exposures.flushInterval = .zero
        var client: FlagClient? = try FlagClient(options: options)
        #expect(await client!.ready(timeout: .seconds(5)))
        _ = client!.bool("a", default: false)
        try await Task.sleep(for: .milliseconds(100))
        client = nil
        try await Task.sleep(for: .milliseconds(100))
        let afterDrop = plane.requests.count
        try await Task.sleep(for: .milliseconds(300))
        // No more polls once the client is gone (at most one already in flight).
        #expect(plane.requests.count <= afterDrop + 1)
        #expect(plane.receivedExposures.count == 1)
    }
}
