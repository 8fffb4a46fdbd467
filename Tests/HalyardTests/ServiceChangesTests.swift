import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// `FlagService.withChanges(for:)`: the changed keys of one context, scoped, coalesced while the
/// consumer is away, finished by the scope's end and by `close()` (docs/service.md, "Changes").
@Suite struct ServiceChangesTests {
    /// A service on a manual clock over `plane`: values older than 30 s are refreshed on a read.
    static func service(_ plane: InMemoryControlPlane, clock: ManualClock) throws -> FlagService {
        var options = plane.makeServiceOptions()
        options.clock = clock
        options.refreshAfter = .seconds(30)
        return try FlagService(options: options)
    }

    /// Makes the held values of `context` old enough to refresh, reads (which refreshes them in
    /// the background), and waits for the refresh's answer.
    static func refresh(_ service: FlagService, _ context: EvaluationContext, clock: ManualClock) async throws {
        let fingerprint = try context.fitted().fingerprint
        let refreshes = service.stats.fetching.backgroundRefreshes
        clock.advance(by: .seconds(31))
        _ = service.flagsIfCached(for: context)
        #expect(service.stats.fetching.backgroundRefreshes == refreshes + 1)
        // The refresh's flight leaves the cache's table when its answer is stored.
        if let flight = service.cache.shard(for: fingerprint).withLock({ $0.flights[fingerprint] }) {
            let result = try await Wait.result("the background refresh") {
                await flight.wait(timeout: .seconds(30), clock: SystemClock())
            }
            #expect(result != nil)
        }
    }

    /// The stream's next element, waited for at most the tests' real-time bound.
    static func next(_ changes: AsyncStream<Set<String>>, _ what: String) async throws -> Set<String>? {
        try await Wait.result(what) {
            var iterator = changes.makeAsyncIterator()
            return await iterator.next()
        }
    }

    @Test func aChangeThroughTheControlPlaneDeliversTheChangedKeys() async throws {
        let plane = InMemoryControlPlane(values: ["a": .bool(true), "b": .int(1), "c": .string("x")])
        let clock = ManualClock()
        let service = try Self.service(plane, clock: clock)
        defer { service.close() }
        let context = EvaluationContext(targetingKey: "user-1")
        _ = await service.flags(for: context)
        try await service.withChanges(for: context) { changes in
            plane.setValue(.int(2), for: "b")
            plane.removeValue(for: "c")
            try await Self.refresh(service, context, clock: clock)
            #expect(try await Self.next(changes, "the change") == ["b", "c"])
            // An answer with the same values (a 304, or a 200 that changed nothing) delivers nothing.
            try await Self.refresh(service, context, clock: clock)
            plane.setValue(.bool(false), for: "a")
            try await Self.refresh(service, context, clock: clock)
            #expect(try await Self.next(changes, "the next change") == ["a"])
        }
        #expect(service.changes.openCount == 0)
    }

    @Test func twoContextsAreIndependentAndAFirstLoadReportsEveryKey() async throws {
        let plane = InMemoryControlPlane()
        plane.setContextValues { context in
            guard case .object(let fields) = context, case .string(let key)? = fields["targetingKey"] else {
                return nil
            }
            return ["owner": .string(key), "shared": .bool(true)]
        }
        let clock = ManualClock()
        let service = try Self.service(plane, clock: clock)
        defer { service.close() }
        let one = EvaluationContext(targetingKey: "user-1")
        let two = EvaluationContext(targetingKey: "user-2")
        _ = await service.flags(for: one)
        try await service.withChanges(for: one) { first in
            try await service.withChanges(for: two) { second in
                #expect(service.changes.openCount == 2)
                // The first values of `two` (not held yet): every key, to `two`'s stream only.
                _ = await service.flags(for: two)
                let keys = try await Self.next(second, "two's first values")
                #expect(keys == ["owner", "shared"])
                // Only `one`'s values change.
                plane.setContextValues { context in
                    guard case .object(let fields) = context, case .string(let key)? = fields["targetingKey"] else {
                        return nil
                    }
                    return ["owner": .string(key), "shared": .bool(key != "user-1")]
                }
                try await Self.refresh(service, one, clock: clock)
                try await Self.refresh(service, two, clock: clock)
                let changed = try await Self.next(first, "one's change")
                #expect(changed == ["shared"])
                #expect(service.changes.isWatching(try two.fitted().fingerprint))
            }
            #expect(service.changes.openCount == 1)
        }
        #expect(service.changes.openCount == 0)
    }

    /// A consumer that does not read while changes arrive gets them merged into one set: the
    /// buffer holds one set, never one per change.
    @Test func aSlowConsumerGetsCoalescedSets() async throws {
        let plane = InMemoryControlPlane(values: ["k0": .int(0)])
        let clock = ManualClock()
        let service = try Self.service(plane, clock: clock)
        defer { service.close() }
        let context = EvaluationContext(targetingKey: "user-1")
        _ = await service.flags(for: context)
        try await service.withChanges(for: context) { changes in
            for round in 1...20 {
                plane.setValue(.int(Int64(round)), for: "k\(round % 5)")
                try await Self.refresh(service, context, clock: clock)
            }
            let keys = try await Self.next(changes, "the merged set")
            #expect(keys == ["k0", "k1", "k2", "k3", "k4"])
        }
        // The buffer itself: many deliveries, one pending set.
        let buffer = ContextChangeBuffer()
        for i in 0..<10_000 { buffer.deliver(["k\(i % 3)"]) }
        #expect(await buffer.next() == ["k0", "k1", "k2"])
        buffer.finish()
        #expect(await buffer.next() == nil)
    }

    @Test func theStreamEndsWithTheScopeOnCloseAndForAnInvalidContext() async throws {
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        let clock = ManualClock()
        let service = try Self.service(plane, clock: clock)
        let context = EvaluationContext(targetingKey: "user-1")
        _ = await service.flags(for: context)
        // close() while a consumer waits: its loop ends.
        let ended = try await Wait.result("the loop to end at close()") {
            await service.withChanges(for: context) { changes in
                Task {
                    try? await Wait.until("the consumer to wait") { service.changes.openCount == 1 }
                    service.close()
                }
                var count = 0
                for await _ in changes { count += 1 }
                return count
            }
        }
        #expect(ended == 0)
        #expect(service.changes.openCount == 0)
        // A closed service's stream, and an invalid context's, end at once.
        let closedCount = await service.withChanges(for: context) { changes in
            var count = 0
            for await _ in changes { count += 1 }
            return count
        }
        #expect(closedCount == 0)
        let open = try Self.service(plane, clock: clock)
        defer { open.close() }
        let invalid = EvaluationContext(targetingKey: "user-1", kind: "Not A Kind!")
        let invalidCount = await open.withChanges(for: invalid) { changes in
            var count = 0
            for await _ in changes { count += 1 }
            return count
        }
        #expect(invalidCount == 0 && open.changes.openCount == 0)
        // A scope that returns ends its stream: a task still iterating it finishes.
        let leftover = await open.withChanges(for: context) { changes in changes }
        var iterator = leftover.makeAsyncIterator()
        #expect(await iterator.next() == nil)
        #expect(open.changes.openCount == 0)
    }
}
