import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// What happens to a client its owner drops without calling `close()`.
@Suite struct ClientLifetimeTests {
    /// On the manual clock: once the client is gone nothing sleeps on the clock any more, so no
    /// amount of time can send another poll; the pending exposure is flushed.
    @Test func aDroppedClientStopsPollingAndFlushesExposures() async throws {
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        let clock = ManualClock()
        var options = plane.makeOptions()
        options.clock = clock
        options.pollInterval = .seconds(30)
        options.pollJitter = 0
        options.exposures.flushInterval = .zero
        var client: FlagClient? = try FlagClient(options: options)
        let ready = try await Wait.result("ready(timeout:)") { [client] in
            guard let client else { return false }
            return await client.ready(timeout: .seconds(30))
        }
        #expect(ready)
        #expect(client?.bool("a", default: false) == true)
        // Polling is live: a poll is armed (two sleepers: the poll timer and the exposure
        // ticker the read started), and advancing the clock sends it.
        try await Wait.until("the poll timer and the exposure ticker to sleep") {
            client?.sync?.engine.nextWake != nil && clock.sleeperCount >= 2
        }
        let evaluations = { plane.requests.filter { $0.url.path.hasSuffix("/ofrep/v1/evaluate/flags") }.count }
        clock.advance(by: .seconds(30))
        try await Wait.until("the first poll") { evaluations() == 2 }
        try await Wait.until("the next poll timer") {
            client?.sync?.engine.nextWake.map { $0 > clock.monotonicNow } ?? false
        }
        client = nil
        try await Wait.until("the dropped client's timers to stop") { clock.sleeperCount == 0 }
        try await Wait.until("the dropped client's exposure flush") { plane.receivedExposures.count == 1 }
        clock.advance(by: .seconds(3600))
        #expect(clock.sleeperCount == 0)
        #expect(evaluations() == 2)
        #expect(plane.receivedExposures.count == 1)
    }
}
