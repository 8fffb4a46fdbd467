import Foundation
import Halyard
import HalyardTesting

// Section 5: cold single-flight.

extension ServiceBench {
    /// Section 5: 10,000 concurrent `flags(for:)` for one cold context must send one request.
    func singleFlight() async throws -> SingleFlight {
        let counter = CountingTransport(makePlane(latency: .milliseconds(2)))
        let service = try makeService(
            transport: counter, baseURL: InMemoryControlPlane.baseURL, clock: ManualClock(),
            coldFetchTimeout: .seconds(60))
        let ctx = context(123_456)
        let served = await withTaskGroup(of: Bool.self) { group -> Int in
            for _ in 0..<10_000 { group.addTask { await service.flags(for: ctx).hasValues } }
            var n = 0
            for await ok in group where ok { n += 1 }
            return n
        }
        let stats = service.stats
        print("\n## 5. cold single-flight: 10,000 concurrent flags(for:) for one cold context")
        print(
            "  control-plane requests \(counter.requests); served \(served); waited on the flight \(stats.cache.coldWaits)"
        )
        verdict("10,000 concurrent cold flags(for:) -> exactly 1 request", counter.requests == 1, "\(counter.requests)")
        service.close()
        return SingleFlight(requests: counter.requests, served: served, coldWaits: stats.cache.coldWaits)
    }
}
