import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// A control plane that hangs, resets, answers 429/5xx/garbage for some contexts: the others
/// keep being served, and nothing grows without bound.
@Suite struct ServiceFaultScheduleTests {
    /// The fault for context `user-<id>`: one in 40 hangs, resets, 503s, or gets garbage;
    /// among the last 100 contexts, one in 40 gets a 429 with `Retry-After: 1` (which pauses
    /// every context for a second, by design: it comes last so the pass can tell them apart).
    /// The rest are answered.
    static func fault(_ key: String) -> ServiceFaultTransport.Fault? {
        guard let id = Int(key.dropFirst(5)) else { return nil }
        if id >= 9_900 && id % 40 == 5 { return .status(429, headers: ["Retry-After": "1"]) }
        switch id % 40 {
        case 1: return .hang
        case 2: return .reset
        case 3: return .status(503)
        case 4: return .garbage
        default: return nil
        }
    }

    static func isHealthy(_ id: Int) -> Bool { fault("user-\(id)") == nil }

    @Test func faultsForSomeContextsDoNotStopTheOthers() async throws {
        let plane = ServiceStressTests.perContextPlane()
        plane.setRecording(false)
        let transport = ServiceFaultTransport(plane) { Self.fault($0) }
        var options = plane.makeServiceOptions()
        options.transport = transport
        options.maxContexts = 2_000
        options.maxCacheBytes = 4 << 20
        options.requestTimeout = .milliseconds(100)
        options.coldFetchTimeout = .seconds(3)
        options.maxQueuedFetches = 20_000
        let service = try FlagService(options: options)
        defer { service.close() }

        // 10,000 contexts, 100 requests at a time.
        let firstPass = try await Wait.result("10,000 contexts", seconds: 240) {
            var served = 0
            var servedFaulty = 0
            var servedBeforeThe429s = 0
            for start in stride(from: 0, to: 10_000, by: 100) {
                await withTaskGroup(of: (Int, Bool).self) { group in
                    for id in start..<(start + 100) {
                        group.addTask {
                            let flags = await service.flags(for: serviceContext(id))
                            return (id, flags.string("who", default: "") == "user-\(id)")
                        }
                    }
                    for await (id, ok) in group where ok {
                        if Self.isHealthy(id) { served += 1 } else { servedFaulty += 1 }
                        if Self.isHealthy(id) && id < 9_900 { servedBeforeThe429s += 1 }
                    }
                }
            }
            return (served, servedFaulty, servedBeforeThe429s)
        }
        let healthy = (0..<10_000).filter(Self.isHealthy).count
        let healthyBefore = (0..<9_900).filter(Self.isHealthy).count
        // Failing contexts back off alone: every healthy context before the 429s is served.
        // After a 429 everyone pauses for a second (by design): contexts asked in that second
        // are served defaults on the first ask.
        #expect(firstPass.2 == healthyBefore, "served \(firstPass.2) of \(healthyBefore) healthy contexts")
        #expect(firstPass.0 <= healthy)
        #expect(firstPass.1 == 0)

        // Nothing grows without bound.
        try await Wait.until("every fetch ended", seconds: 30) { service.stats.fetching.inFlight == 0 }
        let stats = service.stats
        #expect(stats.cache.contextsHeld <= 2_000 && stats.cache.peakBytesHeld <= 4 << 20)
        #expect(service.fetcher.queuedCount == 0 && service.fetcher.inFlightCount == 0)
        #expect(stats.fetching.timeouts > 0 && stats.fetching.networkErrors > 0 && stats.fetching.invalidBodies > 0)
        #expect(stats.fetching.byStatus[503, default: 0] > 0 && stats.fetching.byStatus[429, default: 0] > 0)
        #expect(stats.status != .fatal)

        // Healthy contexts asked again are served (from the cache, or fetched again after an eviction).
        try await Wait.untilAsync("recent healthy contexts served", seconds: 30) {
            var all = true
            for id in 9_900..<10_000 where Self.isHealthy(id) {
                if await service.flags(for: serviceContext(id)).string("who", default: "") != "user-\(id)" {
                    all = false
                }
            }
            return all
        }
    }
}
