import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// Many requests at once (run under ThreadSanitizer: `swift test --sanitize=thread --filter
/// ServiceStressTests`).
@Suite struct ServiceStressTests {
    static func perContextPlane() -> InMemoryControlPlane {
        let plane = InMemoryControlPlane()
        plane.setContextValues { context in
            guard case .object(let m) = context, case .string(let key)? = m["targetingKey"] else { return nil }
            var values: [String: JSONValue] = ["who": .string(key), "on": .bool(true)]
            for i in 0..<8 { values["flag.\(i)"] = .int(Int64(i)) }
            return values
        }
        return plane
    }

    @Test func tenThousandConcurrentColdRequestsSendOneFetch() async throws {
        let plane = Self.perContextPlane()
        plane.holdInitialization()
        var options = plane.makeServiceOptions()
        options.clock = ManualClock()  // the cold-wait timers never fire: every request waits
        let service = try FlagService(options: options)
        defer { service.close() }
        let context = serviceContext(42)
        let fingerprint = try context.fitted().fingerprint
        let results = Task {
            await withTaskGroup(of: Bool.self) { group -> Int in
                for _ in 0..<10_000 {
                    group.addTask { await service.flags(for: context).string("who", default: "") == "user-42" }
                }
                var served = 0
                for await ok in group where ok { served += 1 }
                return served
            }
        }
        try await Wait.until("10,000 requests waiting on one flight", seconds: 60) {
            service.cache.shard(for: fingerprint).withLock { $0.flights[fingerprint]?.waiterCount } == 10_000
        }
        // The one fetch reaches the (held) plane; nothing has been answered yet.
        try await Wait.until("the fetch reached the plane") { plane.requests.count == 1 }
        #expect(plane.evaluationCount == 0 && plane.requests.count == 1)
        plane.completeInitialization()
        let served = try await Wait.result("the 10,000 requests", seconds: 60) { await results.value }
        #expect(served == 10_000)
        #expect(plane.evaluationCount == 1)
        #expect(service.stats.cache.coldWaits == 10_000 && service.stats.cache.coldWaitTimeouts == 0)
    }

    @Test func concurrentRequestsWithEvictionsAndBackgroundRefreshes() async throws {
        let plane = Self.perContextPlane()
        var options = plane.makeServiceOptions()
        options.maxContexts = 64
        options.refreshAfter = .milliseconds(1)
        options.maxStaleness = .seconds(30)
        options.coldFetchTimeout = .seconds(5)
        plane.setRecording(false)
        let service = try FlagService(options: options)
        defer { service.close() }
        let wrong = try await Wait.result("8 tasks of 1,500 requests", seconds: 120) {
            await withTaskGroup(of: Int.self) { group -> Int in
                for task in 0..<8 {
                    group.addTask {
                        var rng = SplitMix64(seed: UInt64(task + 1))
                        var wrong = 0
                        for _ in 0..<1_500 {
                            let id = Int(rng.next() % 300)
                            let flags = await service.flags(for: serviceContext(id))
                            guard flags.hasValues else { continue }
                            if flags.string("who", default: "") != "user-\(id)" { wrong += 1 }
                            for i in 0..<8 where flags.int("flag.\(i)", default: -1) != i { wrong += 1 }
                            if !flags.bool("on", default: false) { wrong += 1 }
                        }
                        return wrong
                    }
                }
                return await group.reduce(0, +)
            }
        }
        #expect(wrong == 0)
        try await Wait.until("no fetch left in flight") { service.stats.fetching.inFlight == 0 }
        let stats = service.stats
        #expect(stats.cache.contextsHeld <= 64 && stats.cache.evictions > 0)
        #expect(stats.cache.bytesHeld == service.cache.totals().bytes)
        #expect(stats.cache.hits + stats.cache.misses == 12_000)
        #expect(stats.fetching.backgroundRefreshes > 0)
    }
}
