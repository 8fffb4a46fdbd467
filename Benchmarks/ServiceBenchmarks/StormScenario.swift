import BenchmarkSupport
import Foundation
import Halyard
import HalyardTesting

// Section 8: a `503` + `Retry-After: 0` storm on simulated time.

extension ServiceBench {
    /// Section 8: 100 contexts requested every 10 ms while the plane answers every evaluation
    /// 503 with `Retry-After: 0`; the requests per context must stay within what the backoff's
    /// shortest draws allow.
    func storm() async throws -> Storm {
        let seconds = quick ? 60 : 300
        let clock = ManualClock()
        let transport = SimulatedPlane(makePlane(latency: .zero), clock: clock, latency: .zero, storm: true)
        let service = try simulatedService(transport, clock: clock)
        let contexts = try (0..<100).map { try context(universe - 30_000 - $0).fitted() }
        for _ in 0..<(seconds * 100) {
            for f in contexts { _ = service.flagsIfCached(for: f) }
            clock.advance(by: .milliseconds(10))
            await settle()
        }
        // The bound: a context's own backoff never draws less than initialBackoff / 2 (0.5 s), so
        // at most 1 + seconds / 0.5 attempts per context whatever Retry-After says; the
        // service-wide pause after 64 consecutive failures allows far fewer.
        let perContext = Double(transport.requests) / Double(contexts.count)
        let bound = 1 + Double(seconds) / 0.5
        print("\n## 8. 503 + Retry-After: 0 storm: 100 contexts every 10 ms, \(seconds) simulated seconds")
        print(
            "  requests sent per context \(fmt(perContext, 2)) (\(transport.requests) in all; bound by the backoff's shortest draws: \(fmt(bound, 0)); without the floor it would be one per request: \(seconds * 100))"
        )
        verdict(
            "Retry-After: 0 storm: requests per context bounded by the backoff", perContext <= bound,
            "\(fmt(perContext, 2)) <= \(fmt(bound, 0))")
        service.close()
        return Storm(requestsPerContext: perContext, bound: bound, seconds: seconds)
    }
}
