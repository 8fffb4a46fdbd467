import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// OpenFeature semantics of the online client, end to end through the in-memory control plane:
/// reasons, error codes, status transitions, events, listeners, identify and close.
@Suite struct ClientSemanticsTests {
    static func client(
        _ plane: InMemoryControlPlane, clock: ManualClock? = nil, context: EvaluationContext = .anonymous,
        configure: (inout FlagClientOptions) -> Void = { _ in }
    ) throws -> FlagClient {
        var options = plane.makeOptions()
        if let clock { options.clock = clock }
        options.initialContext = context
        configure(&options)
        return try FlagClient(options: options)
    }

    // MARK: Reasons and error codes

    @Test func reasonsVariantsAndMetadataPassThrough() async throws {
        let plane = InMemoryControlPlane()
        plane.setFlag(
            ServedFlag(key: "t", value: true, variant: "on", reason: .targetingMatch, metadata: ["team": .string("x")]))
        plane.setFlag(ServedFlag(key: "s", value: "b", variant: "B", reason: .split))
        plane.setFlag(ServedFlag(key: "custom", value: 1, reason: EvaluationReason(rawValue: "EXPERIMENT")))
        plane.setFlag(ServedFlag(key: "off", value: nil, reason: .disabled))
        let client = try Self.client(plane)
        defer { client.close() }
        #expect(await client.ready(timeout: .seconds(5)))
        let t = client.boolDetail("t", default: false)
        #expect(t.value == true && t.variant == "on" && t.reason == .targetingMatch && t.errorCode == nil)
        #expect(t.metadata == ["team": .string("x")])
        #expect(client.stringDetail("s", default: "").reason == .split)
        #expect(client.intDetail("custom", default: 0).reason.rawValue == "EXPERIMENT")
        // A code-default item: the caller's default, the server's reason, no error.
        let off = client.boolDetail("off", default: true)
        #expect(off.value == true && off.reason == .disabled && off.errorCode == nil)
    }

    @Test func errorCodes() async throws {
        let plane = InMemoryControlPlane(values: ["n": 1, "d": 1.5])
        for code in [FlagErrorCode.flagNotFound, .parseError, .targetingKeyMissing, .invalidContext, .general] {
            plane.setFlag(
                ServedFlag(key: "e-\(code.rawValue)", value: nil, reason: .error, errorCode: code, errorMessage: "m"))
        }
        plane.holdInitialization()
        let client = try Self.client(plane)
        defer { client.close() }
        #expect(client.intDetail("n", default: 9).errorCode == .providerNotReady)
        plane.completeInitialization()
        #expect(await client.ready(timeout: .seconds(5)))
        for code in [FlagErrorCode.flagNotFound, .parseError, .targetingKeyMissing, .invalidContext, .general] {
            let detail = client.intDetail("e-\(code.rawValue)", default: 9)
            #expect(detail.value == 9 && detail.reason == .error && detail.errorCode == code)
        }
        #expect(client.intDetail("missing", default: 9).errorCode == .flagNotFound)
        #expect(client.intDetail("d", default: 9).errorCode == .typeMismatch)
        #expect(client.doubleDetail("n", default: 0).value == 1.0)
    }

    // MARK: Status and events

    @Test func startEmitsReadyOnce() async throws {
        let plane = InMemoryControlPlane(values: ["a": true])
        plane.holdInitialization()
        let client = try Self.client(plane)
        defer { client.close() }
        let recorder = EventRecorder(client)
        #expect(client.status == .notReady)
        plane.completeInitialization()
        #expect(await client.ready(timeout: .seconds(5)))
        await client.refresh()  // 304: nothing to report
        #expect(await recorder.wait { $0.contains(.ready) })
        try await Task.sleep(for: .milliseconds(20))
        #expect(
            recorder.all == [.ready, .configurationChanged(["a"])]
                || recorder.all == [.configurationChanged(["a"]), .ready])
    }

    @Test func failedStartIsErrorThenReadyAfterBackoff() async throws {
        let plane = InMemoryControlPlane(values: ["a": true])
        plane.failInitialization(status: 503)
        let clock = ManualClock()
        let client = try Self.client(plane, clock: clock)
        defer { client.close() }
        let recorder = EventRecorder(client)
        await client.refresh()  // joins the failed start
        #expect(client.status == .error)
        #expect(await recorder.wait { $0.contains { $0.isError } })
        await clock.advanceWhenArmed(by: .seconds(2))  // the retry fires
        #expect(await waitUntil { client.status == .ready })
        #expect(await recorder.wait { $0.contains(.ready) })
        #expect(
            recorder.all.filter { $0 == .ready || $0.isError } == [
                .error(code: .general, message: "the control plane answered 503"), .ready,
            ])
    }

    @Test func failedRefreshesBecomeStaleAfterThreePollIntervals() async throws {
        let plane = InMemoryControlPlane(values: ["a": true])
        let clock = ManualClock()
        let client = try Self.client(plane, clock: clock) { $0.pollInterval = .seconds(30) }
        defer { client.close() }
        let recorder = EventRecorder(client)
        #expect(await client.ready(timeout: .seconds(5)))
        var elapsed: Duration = .zero
        while client.status != .stale && elapsed < .seconds(600) {
            plane.failInitialization(status: 500)
            let step = client.sync!.engine.nextWake! - clock.monotonicNow
            await clock.advanceWhenArmed(by: step)
            elapsed += step
            #expect(await waitUntil { client.sync!.engine.nextWake.map { $0 > clock.monotonicNow } ?? false })
        }
        #expect(client.status == .stale)
        #expect(elapsed >= .seconds(90))
        #expect(client.bool("a", default: false))  // still serving
        #expect(await recorder.wait { $0.contains(.stale) })
        await clock.advanceWhenArmed(by: .seconds(600))
        #expect(await waitUntil { client.status == .ready })
        #expect(await recorder.wait { $0.last == .ready })
    }

    @Test func configurationChangedCarriesExactlyTheChangedKeys() async throws {
        let plane = InMemoryControlPlane(values: ["a": 1, "b": 2, "c": 3])
        let client = try Self.client(plane)
        defer { client.close() }
        #expect(await client.ready(timeout: .seconds(5)))
        let changes = Locked<[Set<String>]>([])
        let subscription = client.onChange { keys in changes.withLock { $0.append(keys) } }
        defer { subscription.cancel() }

        plane.setValue(10, for: "a")
        await client.refresh()
        #expect(await waitUntil { changes.value == [["a"]] })
        // Same value and a new reason: changed. Variant only: changed.
        plane.setFlag(ServedFlag(key: "b", value: 2, reason: .targetingMatch))
        plane.setFlag(ServedFlag(key: "c", value: 3, variant: "v2", reason: .staticValue))
        await client.refresh()
        #expect(await waitUntil { changes.value.count == 2 })
        #expect(changes.value.last == ["b", "c"])
        // Metadata only: not a change of the served result; the same set again: nothing.
        plane.setFlag(ServedFlag(key: "c", value: 3, variant: "v2", reason: .staticValue, metadata: ["m": .bool(true)]))
        await client.refresh()
        plane.replaceValues(["a": 10, "b": 2, "c": 3, "d": 4])  // d added; b/c lose reason/variant
        plane.removeValue(for: "a")
        await client.refresh()
        #expect(await waitUntil { changes.value.count == 3 })
        #expect(changes.value.last == ["a", "b", "c", "d"])
        await client.refresh()  // 304
        try await Task.sleep(for: .milliseconds(20))
        #expect(changes.value.count == 3)
    }

    @Test func slowAndThrowingListenersDoNotDelayOthers() async throws {
        struct Boom: Error {}
        let plane = InMemoryControlPlane(values: ["a": 1])
        let client = try Self.client(plane)
        defer { client.close() }
        #expect(await client.ready(timeout: .seconds(5)))
        let fast = Locked(0)
        let slowStarted = Locked(false)
        let slow = client.onChange { _ in
            slowStarted.withLock { $0 = true }
            Thread.sleep(forTimeInterval: 2)
        }
        let throwing = client.onChange { _ in throw Boom() }
        let quick = client.onChange { _ in fast.withLock { $0 += 1 } }
        plane.setValue(2, for: "a")
        let started = Date()
        await client.refresh()
        #expect(await waitUntil { fast.value == 1 })
        #expect(Date().timeIntervalSince(started) < 1.5)
        #expect(client.int("a", default: 0) == 2)  // reads are not delayed either
        quick.cancel()
        plane.setValue(3, for: "a")
        await client.refresh()
        try await Task.sleep(for: .milliseconds(20))
        #expect(fast.value == 1)  // cancelled
        slow.cancel()
        throwing.cancel()
        #expect(slowStarted.value)
    }

    // MARK: identify

    @Test func readsKeepPreviousValuesWhileIdentifyIsInFlight() async throws {
        let plane = InMemoryControlPlane(values: ["a": 1])
        let client = try Self.client(plane, context: EvaluationContext(targetingKey: "u1"))
        defer { client.close() }
        #expect(await client.ready(timeout: .seconds(5)))
        plane.holdInitialization()
        plane.setValue(2, for: "a")
        let identified = Task { await client.identify(EvaluationContext(targetingKey: "u2")) }
        #expect(await waitUntil { plane.requests.count == 2 })
        #expect(client.status == .reconciling)
        #expect(client.int("a", default: 0) == 1)
        plane.completeInitialization()
        #expect(await identified.value)
        #expect(client.int("a", default: 0) == 2)
        #expect(client.status == .ready)
    }

    @Test func newerIdentifySupersedesOlderAndOnlyTheLastReportsContextChanged() async throws {
        let plane = InMemoryControlPlane(values: ["a": 1])
        let client = try Self.client(plane)
        defer { client.close() }
        #expect(await client.ready(timeout: .seconds(5)))
        let recorder = EventRecorder(client)
        plane.holdInitialization()
        let first = Task { await client.identify(EvaluationContext(targetingKey: "u1")) }
        #expect(await waitUntil { plane.requests.count == 2 })
        let second = Task { await client.identify(EvaluationContext(targetingKey: "u2")) }
        #expect(await first.value == false)
        #expect(await waitUntil { plane.requests.count == 3 })
        plane.completeInitialization()
        #expect(await second.value)
        #expect(await recorder.wait { $0.contains(.contextChanged) })
        try await Task.sleep(for: .milliseconds(20))
        let events = recorder.all
        #expect(events.filter { $0 == .reconciling }.count == 2)
        #expect(events.filter { $0 == .contextChanged }.count == 1)
        #expect(client.sync!.currentContext.targetingKey == "u2")
        #expect(plane.contextUpdates.last == ["targetingKey": "u2", "kind": "user"])
    }

    @Test func invalidContextReturnsFalseAndChangesNothing() async throws {
        let plane = InMemoryControlPlane(values: ["a": 1])
        let client = try Self.client(plane, context: EvaluationContext(targetingKey: "u1"))
        defer { client.close() }
        #expect(await client.ready(timeout: .seconds(5)))
        let recorder = EventRecorder(client)
        let requests = plane.requests.count
        #expect(await client.identify(EvaluationContext(targetingKey: "u2", kind: "Not A Kind")) == false)
        #expect(await client.identify(EvaluationContext(targetingKey: "u2", attributes: ["kind": "x"])) == false)
        #expect(plane.requests.count == requests)
        #expect(client.status == .ready)
        #expect(client.sync!.currentContext.targetingKey == "u1")
        try await Task.sleep(for: .milliseconds(20))
        #expect(recorder.all.isEmpty)
    }

    @Test func invalidInitialContextIsAnErrorWithoutRequests() async throws {
        let plane = InMemoryControlPlane(values: ["a": 1])
        let client = try Self.client(plane, context: EvaluationContext(targetingKey: "u1", kind: ""))
        defer { client.close() }
        #expect(await client.ready(timeout: .seconds(5)) == false)
        #expect(client.status == .error)
        #expect(plane.requests.isEmpty)
        #expect(await client.identify(EvaluationContext(targetingKey: "u1")))
        #expect(client.status == .ready)
    }

    // MARK: Lifecycle

    @Test func closeIsIdempotentAndReadsKeepTheLastValues() async throws {
        let plane = InMemoryControlPlane(values: ["a": 1])
        let clock = ManualClock()
        let client = try Self.client(plane, clock: clock) { $0.pollInterval = .seconds(30) }
        #expect(await client.ready(timeout: .seconds(5)))
        let stream = client.events
        let hookRuns = Locked(0)
        client.sync!.addCloseHook { hookRuns.withLock { $0 += 1 } }
        client.close()
        client.close()
        #expect(hookRuns.value == 1)
        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next() == nil)  // the stream ended
        #expect(client.int("a", default: 0) == 1)
        let requests = plane.requests.count
        await client.refresh()
        clock.advance(by: .seconds(3600))
        #expect(await client.identify(EvaluationContext(targetingKey: "u9")) == false)
        try await Task.sleep(for: .milliseconds(20))
        #expect(plane.requests.count == requests)
        #expect(await client.ready(timeout: .seconds(1)))  // values were confirmed for the context
    }

    @Test func logsNeverContainTheKey() async throws {
        let plane = InMemoryControlPlane(values: ["a": 1])
        let lines = Locked<[String]>([])
        plane.failInitialization(status: 401)
        let client = try Self.client(plane) { options in
            options.key = "cli-SECRET-123"
            options.logHandler = { level, message in lines.withLock { $0.append("\(level): \(message)") } }
        }
        defer { client.close() }
        await client.refresh()
        #expect(await waitUntil { lines.value.contains { $0.contains("401") } })
        #expect(!lines.value.contains { $0.contains("SECRET") })
        #expect(plane.requests.first?.headers["Authorization"] == "Bearer cli-SECRET-123")
    }

    @Test func setKeyRecoversFromARefusedKey() async throws {
        let plane = InMemoryControlPlane(values: ["a": 1])
        plane.failInitialization(status: 401)
        let client = try Self.client(plane)
        defer { client.close() }
        await client.refresh()
        #expect(client.status == .fatal)
        await #expect(throws: FlagClientError.blankKey) { try await client.setKey(" ") }
        await #expect(throws: FlagClientError.serverKeyInClientRole(prefix: "srv-")) {
            try await client.setKey("srv-1")
        }
        #expect(plane.requests.count == 1)
        try await client.setKey("cli-rotated")
        #expect(client.status == .ready)
        #expect(client.int("a", default: 0) == 1)
        #expect(plane.requests.last?.headers["Authorization"] == "Bearer cli-rotated")
        #expect(client.sync!.identityHeaders["Authorization"] == "Bearer cli-rotated")
    }
}
