import Dispatch
import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// The bugs of the sync and exposure pipeline review (issue 14), each through the real client.
@Suite(.serialized) struct PipelineRegressionTests {
    /// Answers the first request with 429 and `Retry-After: 60`, then passes everything to `inner`.
    final class RateLimitedOnce: FlagTransport {
        let inner: any FlagTransport
        private let sent = Locked(0)

        init(_ inner: any FlagTransport) { self.inner = inner }

        var count: Int { sent.value }

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            let n = sent.withLock { n -> Int in
                n += 1
                return n
            }
            if n == 1 { return TransportResponse(status: 429, headers: ["Retry-After": "60"]) }
            return try await inner.send(request)
        }
    }

    /// A client (exposures off, on a manual clock) whose start-up fetch got 429 `Retry-After: 60`.
    static func rateLimitedClient() async throws -> (FlagClient, RateLimitedOnce, ManualClock) {
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        let transport = RateLimitedOnce(plane)
        let clock = ManualClock()
        var options = plane.makeOptions()
        options.transport = transport
        options.clock = clock
        options.exposures.enabled = false
        let client = try FlagClient(options: options)
        #expect(await waitUntil { client.stats.sync.responsesByStatus[429] == 1 }, "the start-up fetch got no 429")
        return (client, transport, clock)
    }

    /// Bug 2: a client dropped without `close()` flushes its last exposures with its credentials.
    @Test func droppedClientUploadsItsLastExposuresWithCredentials() async throws {
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        do {
            let client = try plane.makeClient()
            #expect(await client.ready(timeout: .seconds(30)))
            #expect(client.bool("a", default: false))
        }  // the last reference goes: deinit closes the client and flushes detached
        #expect(
            await waitUntil(seconds: 5) { plane.receivedExposures.count + plane.unauthorizedUploads > 0 },
            "no exposure upload after the client was dropped")
        #expect(plane.unauthorizedUploads == 0, "the final flush was sent without credentials")
        #expect(plane.receivedExposures.count == 1)
    }

    /// Bug 3: `setKey` while a `Retry-After` is in force owes the fetch; it is sent when the
    /// `Retry-After` ends, without an explicit `refresh()`.
    @Test func setKeyDuringRetryAfterFetchesWhenItEnds() async throws {
        let (client, transport, clock) = try await Self.rateLimitedClient()
        defer { client.close() }
        try await client.setKey("test-key-2")
        #expect(transport.count == 1)  // deferred by the Retry-After
        #expect(
            await waitUntil(seconds: 2) { clock.sleeperCount >= 1 },
            "nothing is scheduled: the deferred fetch was forgotten")
        clock.advance(by: .seconds(67))  // past the Retry-After's window, [60 s, 66 s]
        #expect(await waitUntil { transport.count == 2 }, "no fetch after the Retry-After ended")
        #expect(await waitUntil { client.status == .ready })
        #expect(client.bool("a", default: false))
    }

    /// Bug 4: whenever `status` says ready or `ready()` returns true, the values are readable.
    /// The log handler holds the delivery thread at the status-change message, the moment when
    /// the old engine had reported ready but not yet published.
    @Test func readyIsReportedOnlyAfterTheValuesArePublished() async throws {
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        let entered = Locked(false)
        let release = DispatchSemaphore(value: 0)
        var options = plane.makeOptions()
        options.exposures.enabled = false
        options.logHandler = { _, message in
            guard message.hasSuffix("-> READY") else { return }
            entered.withLock { $0 = true }
            _ = release.wait(timeout: .now() + 5)
        }
        let client = try FlagClient(options: options)
        defer { client.close() }
        #expect(await waitUntil { entered.value }, "the status never became ready")
        let status = client.status
        let ready = await client.ready(timeout: .zero)
        let detail = client.boolDetail("a", default: false)
        release.signal()
        if status == .ready || ready {
            #expect(detail.errorCode == nil, "status \(status), ready() \(ready), but the read was \(detail)")
            #expect(detail.value)
        }
        #expect(await client.ready(timeout: .seconds(30)))
        #expect(client.bool("a", default: false))
    }

    /// Issue 14: `identify` during a long `Retry-After` returns `false` at once instead of waiting
    /// for it to end (up to 24 h); the owed fetch is sent when it ends.
    @Test func identifyDuringALongRetryAfterReturnsAtOnce() async throws {
        let (client, _, clock) = try await Self.rateLimitedClient()
        defer { client.close() }
        let events = EventRecorder(client)
        defer { events.stop() }
        let answer = Locked<Bool?>(nil)
        let identify = Task {
            answer.withLock { $0 = nil }; let ok = await client.identify(EvaluationContext(targetingKey: "u2"));
            answer.withLock { $0 = ok }
        }
        #expect(await waitUntil(seconds: 2) { answer.value != nil }, "identify waits for the Retry-After to end")
        #expect(answer.value == false)
        #expect(await waitUntil(seconds: 2) { clock.sleeperCount >= 1 }, "the owed fetch is not scheduled")
        clock.advance(by: .seconds(67))  // past the Retry-After's window, [60 s, 66 s]
        #expect(await events.wait { $0.contains(.contextChanged) }, "no contextChanged after the Retry-After")
        #expect(client.bool("a", default: false))
        _ = await identify.value
    }

    /// Issue 14: cancelling the task that awaits `identify` returns `false` promptly.
    @Test func identifyHonoursCancellation() async throws {
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        let client = try plane.makeClient()
        defer { client.close() }
        #expect(await client.ready(timeout: .seconds(30)))
        plane.holdInitialization()  // the identify fetch hangs
        let answer = Locked<Bool?>(nil)
        let task = Task {
            let ok = await client.identify(EvaluationContext(targetingKey: "u2"))
            answer.withLock { $0 = ok }
        }
        #expect(await waitUntil { plane.requests.count == 2 }, "the identify fetch was not sent")
        task.cancel()
        #expect(await waitUntil(seconds: 2) { answer.value != nil }, "identify ignored the cancellation")
        #expect(answer.value == false)
        plane.completeInitialization()  // let the held fetch end
        await task.value
    }

    /// Holds every exposure upload until released (OFREP requests pass through).
    final class HeldUploads: FlagTransport {
        let inner: any FlagTransport
        private let uploads = Barrier(open: false)

        init(_ inner: any FlagTransport) { self.inner = inner }

        func release() { uploads.open() }

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            if !request.url.path.hasSuffix("/ofrep/v1/evaluate/flags") { await uploads.pass() }
            return try await inner.send(request)
        }
    }

    /// Issue 14: `shutdown(timeout:)` closes, waits for the final flush and says what was sent.
    @Test func shutdownWaitsForTheFinalFlush() async throws {
        let plane = InMemoryControlPlane(values: ["a": .bool(true), "b": .int(2)])
        let client = try plane.makeClient()
        #expect(await client.ready(timeout: .seconds(30)))
        #expect(client.bool("a", default: false))
        #expect(client.int("b", default: 0) == 2)
        let report = await client.shutdown(timeout: .seconds(5))
        #expect(report == ShutdownReport(sentEvents: 2, lostEvents: 0, completed: true))
        #expect(plane.receivedExposures.count == 2)
        #expect(await client.shutdown(timeout: .seconds(1)) == ShutdownReport())  // again: nothing left
    }

    /// Issue 14: past its deadline, `shutdown(timeout:)` returns and reports the events at risk.
    @Test func shutdownReportsWhatIsLostAtTheDeadline() async throws {
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        let transport = HeldUploads(plane)
        let clock = ManualClock()
        var options = plane.makeOptions()
        options.transport = transport
        options.clock = clock
        let client = try FlagClient(options: options)
        #expect(await waitUntil { client.status == .ready })
        #expect(client.bool("a", default: false))
        let report = Locked<ShutdownReport?>(nil)
        let task = Task {
            let r = await client.shutdown(timeout: .seconds(2))
            report.withLock { $0 = r }
        }
        // Move time on until shutdown returns (its timer may start after the ticker stopped).
        var advanced: Duration = .zero
        while report.value == nil, advanced < .seconds(20) {
            _ = await waitUntil(seconds: 0.5) { clock.sleeperCount >= 1 }
            clock.advance(by: .seconds(1))
            advanced += .seconds(1)
            _ = await waitUntil(seconds: 0.2) { report.value != nil }
        }
        #expect(report.value != nil, "shutdown did not return at its deadline")
        #expect(report.value == ShutdownReport(sentEvents: 0, lostEvents: 1, completed: false))
        transport.release()
        await task.value
        #expect(await waitUntil { plane.receivedExposures.count == 1 })  // the flush went on
    }
}
