import Foundation
import Halyard
import HalyardServiceLifecycle
import HalyardTesting
import ServiceLifecycle
import ServiceLifecycleTestKit
import Testing

/// `HalyardService`: waits for graceful shutdown, flushes within the deadline, closes; honours
/// cancellation.
@Suite struct HalyardServiceTests {
    /// Collects the outcomes `onShutdown` reports.
    final class Outcomes: @unchecked Sendable {
        private let lock = NSLock()
        private var list: [HalyardService.Outcome] = []
        func append(_ outcome: HalyardService.Outcome) {
            lock.lock()  // NSLock's withLock is newer than macOS 13
            defer { lock.unlock() }
            list.append(outcome)
        }
        var all: [HalyardService.Outcome] {
            lock.lock()
            defer { lock.unlock() }
            return list
        }
    }

    /// The plane, with exposure uploads that take 2 s (real time): longer than a deadline.
    struct SlowUploads: FlagTransport {
        let plane: InMemoryControlPlane
        func send(_ request: TransportRequest) async throws -> TransportResponse {
            if !request.url.path.contains("/ofrep/") { try await Task.sleep(for: .seconds(2)) }
            return try await plane.send(request)
        }
    }

    @Test func aClientIsShutDownOnGracefulShutdownWithItsExposuresSent() async throws {
        let plane = InMemoryControlPlane(values: ["checkout.new": true])
        var options = plane.makeOptions()
        options.exposures.enabled = true
        let client = try FlagClient(options: options)
        #expect(await client.ready(timeout: .seconds(5)))
        _ = client.bool("checkout.new", default: false)
        let outcomes = Outcomes()
        try await cancelled(after: .seconds(10)) {
            try await testGracefulShutdown { trigger in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await HalyardService(client: client, onShutdown: outcomes.append).run() }
                    trigger.triggerGracefulShutdown()
                    try await group.waitForAll()
                }
            }
        }
        #expect(outcomes.all == [HalyardService.Outcome(sentEvents: 1, lostEvents: 0, completed: true)])
        #expect(plane.receivedExposures.count == 1)
    }

    @Test func aServiceIsFlushedAndClosedOnGracefulShutdown() async throws {
        let plane = InMemoryControlPlane(values: ["checkout.new": true])
        var options = plane.makeServiceOptions()
        options.exposures.enabled = true
        let service = try FlagService(options: options)
        let flags = await service.flags(for: EvaluationContext(targetingKey: "u1"))
        #expect(flags.bool("checkout.new", default: false))
        let outcomes = Outcomes()
        try await cancelled(after: .seconds(10)) {
            try await testGracefulShutdown { trigger in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await HalyardService(service: service, onShutdown: outcomes.append).run() }
                    trigger.triggerGracefulShutdown()
                    try await group.waitForAll()
                }
            }
        }
        #expect(service.isClosed)
        #expect(outcomes.all == [HalyardService.Outcome(sentEvents: 1, lostEvents: 0, completed: true)])
    }

    @Test func aFlushThatOutlastsTheDeadlineIsLeftAndTheServiceClosed() async throws {
        let plane = InMemoryControlPlane(values: ["checkout.new": true])
        var options = plane.makeServiceOptions()
        options.transport = SlowUploads(plane: plane)
        let service = try FlagService(options: options)
        _ = await service.flags(for: EvaluationContext(targetingKey: "u1")).bool("checkout.new", default: false)
        let clock = ManualClock()
        let outcomes = Outcomes()
        try await cancelled(after: .seconds(10)) {
            try await testGracefulShutdown { trigger in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        try await HalyardService(
                            service: service, shutdownTimeout: .seconds(1), clock: clock, onShutdown: outcomes.append
                        ).run()
                    }
                    trigger.triggerGracefulShutdown()
                    #expect(await MetricsExporterTests.eventually { clock.sleeperCount == 1 })
                    clock.advance(by: .seconds(1))
                    try await group.waitForAll()
                }
            }
        }
        #expect(service.isClosed)
        #expect(outcomes.all.map(\.completed) == [false])
    }

    @Test func cancellationClosesAtOnceAndThrows() async throws {
        let plane = InMemoryControlPlane(values: ["checkout.new": true])
        let service = try FlagService(options: plane.makeServiceOptions())
        let outcomes = Outcomes()
        let running = Task { try await HalyardService(service: service, onShutdown: outcomes.append).run() }
        running.cancel()
        await #expect(throws: CancellationError.self) {
            try await cancelled(after: .seconds(10)) { try await running.value }
        }
        #expect(service.isClosed)
        #expect(outcomes.all.isEmpty)
    }
}
