import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// OpenFeature semantics of the online client, end to end through the in-memory control plane:
/// reasons, error codes, status transitions, events, listeners, identify and close.
///
/// Negatives ("nothing else was emitted", "nothing was sent") are proved with a later marker
/// (a change whose event must come next) or with the manual clock, never by sleeping.
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

    static func engine(_ client: FlagClient) throws -> RefreshEngine {
        try #require(client.sync, "an online client has a sync controller").engine
    }

    /// `ready(timeout:)`, bounded in real time whatever clock the client runs on.
    static func ready(_ client: FlagClient, _ timeout: Duration = .seconds(5)) async throws -> Bool {
        try await Wait.result("ready(timeout: \(timeout))") { await client.ready(timeout: timeout) }
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
        #expect(try await Self.ready(client))
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
        #expect(try await Self.ready(client))
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
        #expect(try await Self.ready(client))
        try await client.refreshOrFail()  // 304: nothing to report
        // A marker change: its event comes after anything the start or the 304 emitted.
        plane.setValue(true, for: "marker")
        try await client.refreshOrFail()
        try await Wait.until("the marker's configurationChanged") {
            recorder.all.contains(.configurationChanged(["marker"]))
        }
        #expect(
            recorder.all == [.ready, .configurationChanged(["a"]), .configurationChanged(["marker"])]
                || recorder.all == [.configurationChanged(["a"]), .ready, .configurationChanged(["marker"])])
    }

    @Test func failedStartIsErrorThenReadyAfterBackoff() async throws {
        let plane = InMemoryControlPlane(values: ["a": true])
        plane.failInitialization(status: 503)
        let clock = ManualClock()
        let client = try Self.client(plane, clock: clock)
        defer { client.close() }
        let recorder = EventRecorder(client)
        try await client.refreshOrFail()  // joins the failed start
        #expect(client.status == .error)
        try await Wait.until("an error event") { recorder.all.contains { $0.isError } }
        try await Wait.advance(clock, by: .seconds(2), "the retry timer")  // the retry fires
        try await Wait.until("status .ready after the retry") { client.status == .ready }
        try await Wait.until("a ready event") { recorder.all.contains(.ready) }
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
        #expect(try await Self.ready(client))
        let engine = try Self.engine(client)
        var elapsed: Duration = .zero
        while client.status != .stale && elapsed < .seconds(600) {
            plane.failInitialization(status: 500)
            let step = try #require(engine.nextWake, "no timer armed while failing") - clock.monotonicNow
            try await Wait.advance(clock, by: step, "the poll/retry timer")
            elapsed += step
            try await Wait.until("the next timer to be armed") {
                engine.nextWake.map { $0 > clock.monotonicNow } ?? false
            }
        }
        #expect(client.status == .stale)
        #expect(elapsed >= .seconds(90))
        #expect(client.bool("a", default: false))  // still serving
        try await Wait.until("a stale event") { recorder.all.contains(.stale) }
        try await Wait.advance(clock, by: .seconds(600), "the retry timer")
        try await Wait.until("status .ready after recovery") { client.status == .ready }
        try await Wait.until("a final ready event") { recorder.all.last == .ready }
    }

    @Test func configurationChangedCarriesExactlyTheChangedKeys() async throws {
        let plane = InMemoryControlPlane(values: ["a": 1, "b": 2, "c": 3])
        let client = try Self.client(plane)
        defer { client.close() }
        #expect(try await Self.ready(client))
        let changes = Locked<[Set<String>]>([])
        let subscription = client.onChange { keys in changes.withLock { $0.append(keys) } }
        defer { subscription.cancel() }

        plane.setValue(10, for: "a")
        try await client.refreshOrFail()
        try await Wait.until("the first change") { changes.value.count == 1 }
        // Same value and a new reason: changed. Variant only: changed.
        plane.setFlag(ServedFlag(key: "b", value: 2, reason: .targetingMatch))
        plane.setFlag(ServedFlag(key: "c", value: 3, variant: "v2", reason: .staticValue))
        try await client.refreshOrFail()
        try await Wait.until("the second change") { changes.value.count == 2 }
        // Metadata only: not a change of the served result; the same set again: nothing.
        plane.setFlag(ServedFlag(key: "c", value: 3, variant: "v2", reason: .staticValue, metadata: ["m": .bool(true)]))
        try await client.refreshOrFail()
        plane.replaceValues(["a": 10, "b": 2, "c": 3, "d": 4])  // d added; b/c lose reason/variant
        plane.removeValue(for: "a")
        try await client.refreshOrFail()
        try await client.refreshOrFail()  // 304
        // The marker: one listener runs its calls in order, so anything the metadata-only
        // refresh or the 304 emitted would come before it.
        plane.setValue(1, for: "marker")
        try await client.refreshOrFail()
        try await Wait.until("the marker change") { changes.value.last == ["marker"] }
        #expect(changes.value == [["a"], ["b", "c"], ["a", "b", "c", "d"], ["marker"]])
    }

    @Test func withChangesEndsItsSubscriptionWhenTheBodyReturns() async throws {
        let plane = InMemoryControlPlane(values: ["a": 1])
        let client = try Self.client(plane)
        defer { client.close() }
        #expect(try await Self.ready(client))
        let hub = try #require(client.sync).hub
        let (first, stream) = try await client.withChanges { changes in
            #expect(hub.changeStreamCount == 1)
            plane.setValue(2, for: "a")
            try await client.refreshOrFail()
            let first = try await Wait.result("the first change") { await changes.first { _ in true } }
            return (first, changes)
        }
        #expect(first == ["a"])
        #expect(hub.changeStreamCount == 0)
        plane.setValue(3, for: "a")
        try await client.refreshOrFail()
        // Finished when the body returned: the later change never reaches it.
        #expect(try await Wait.result("the stream's end") { await stream.first { _ in true } } == nil)
    }

    @Test func withChangesEndsOnThrowAndOnCloseAndOffline() async throws {
        struct Boom: Error {}
        let plane = InMemoryControlPlane(values: ["a": 1])
        let client = try Self.client(plane)
        #expect(try await Self.ready(client))
        let hub = try #require(client.sync).hub
        await #expect(throws: Boom.self) {
            try await client.withChanges { _ in throw Boom() }
        }
        #expect(hub.changeStreamCount == 0)
        // A loop over the stream ends when the client closes.
        let ended = try await client.withChanges { changes in
            client.close()
            return try await Wait.result("the loop's end after close") {
                for await _ in changes {}
                return true
            }
        }
        #expect(ended)
        let offline = try FlagClient(offlineValues: ["a": 1])
        #expect(await offline.withChanges { changes in await changes.first { _ in true } } == nil)
    }

    @Test func slowAndThrowingListenersDoNotDelayOthers() async throws {
        struct Boom: Error {}
        let plane = InMemoryControlPlane(values: ["a": 1])
        let client = try Self.client(plane)
        defer { client.close() }
        #expect(try await Self.ready(client))
        let fast = Locked(0)
        let sibling = Locked<[Set<String>]>([])
        let slowCalls = Locked(0)
        let slowReturned = Locked(false)
        // The slow listener blocks until the test lets it go (bounded, so a broken test
        // cannot leave a thread stuck).
        let release = DispatchSemaphore(value: 0)
        let slow = client.onChange { _ in
            let call = slowCalls.withLock { calls -> Int in
                calls += 1
                return calls
            }
            guard call == 1 else { return }
            _ = release.wait(timeout: .now() + 10)
            slowReturned.withLock { $0 = true }
        }
        // The deprecated throwing form, still served for one release: its error is ignored.
        let throwing = (client as any ThrowingChangeListening).onChange { _ in throw Boom() }
        let quick = client.onChange { _ in fast.withLock { $0 += 1 } }
        let marker = client.onChange { keys in sibling.withLock { $0.append(keys) } }
        plane.setValue(2, for: "a")
        try await client.refreshOrFail()
        try await Wait.until("the quick listener's call") { fast.value == 1 }
        try await Wait.until("the slow listener to start") { slowCalls.value == 1 }
        // The quick listener ran and reads answer while the slow one is still blocked.
        #expect(!slowReturned.value, "the slow listener returned before the test released it")
        #expect(client.int("a", default: 0) == 2)
        release.signal()
        try await Wait.until("the slow listener to return") { slowReturned.value }
        quick.cancel()
        plane.setValue(3, for: "a")
        try await client.refreshOrFail()
        plane.setValue(4, for: "a")
        try await client.refreshOrFail()
        // A listener registered after `quick` saw both later changes: the cancelled one was
        // not called for them.
        try await Wait.until("the sibling listener's two later calls") { sibling.value.count == 3 }
        #expect(fast.value == 1)  // cancelled
        slow.cancel()
        throwing.cancel()
        marker.cancel()
    }

    // MARK: identify

    @Test func readsKeepPreviousValuesWhileIdentifyIsInFlight() async throws {
        let plane = InMemoryControlPlane(values: ["a": 1])
        let client = try Self.client(plane, context: EvaluationContext(targetingKey: "u1"))
        defer { client.close() }
        #expect(try await Self.ready(client))
        plane.holdInitialization()
        plane.setValue(2, for: "a")
        let identified = Task { await client.identify(EvaluationContext(targetingKey: "u2")) }
        try await Wait.until("the identify request") { plane.requests.count == 2 }
        #expect(client.status == .reconciling)
        #expect(client.int("a", default: 0) == 1)
        plane.completeInitialization()
        #expect(try await Wait.result("identify(u2)") { await identified.value })
        #expect(client.int("a", default: 0) == 2)
        #expect(client.status == .ready)
    }

    @Test func newerIdentifySupersedesOlderAndOnlyTheLastReportsContextChanged() async throws {
        let plane = InMemoryControlPlane(values: ["a": 1])
        let client = try Self.client(plane)
        defer { client.close() }
        #expect(try await Self.ready(client))
        let recorder = EventRecorder(client)
        plane.holdInitialization()
        let first = Task { await client.identify(EvaluationContext(targetingKey: "u1")) }
        try await Wait.until("the first identify's request") { plane.requests.count == 2 }
        let second = Task { await client.identify(EvaluationContext(targetingKey: "u2")) }
        #expect(try await Wait.result("the superseded identify(u1)") { await first.value } == false)
        try await Wait.until("the second identify's request") { plane.requests.count == 3 }
        plane.completeInitialization()
        #expect(try await Wait.result("identify(u2)") { await second.value })
        // A marker change: its event comes after anything the identifies emitted.
        plane.setValue(true, for: "marker")
        try await client.refreshOrFail()
        try await Wait.until("the marker's configurationChanged") {
            recorder.all.contains(.configurationChanged(["marker"]))
        }
        let events = recorder.all
        #expect(events.filter { $0 == .reconciling }.count == 2)
        #expect(events.filter { $0 == .contextChanged }.count == 1)
        #expect(try #require(client.sync).currentContext.targetingKey == "u2")
        #expect(plane.contextUpdates.last == ["targetingKey": "u2", "kind": "user"])
    }

    @Test func invalidContextReturnsFalseAndChangesNothing() async throws {
        let plane = InMemoryControlPlane(values: ["a": 1])
        let client = try Self.client(plane, context: EvaluationContext(targetingKey: "u1"))
        defer { client.close() }
        #expect(try await Self.ready(client))
        let recorder = EventRecorder(client)
        let requests = plane.requests.count
        #expect(await client.identify(EvaluationContext(targetingKey: "u2", kind: "Not A Kind")) == false)
        #expect(await client.identify(EvaluationContext(targetingKey: "u2", attributes: ["kind": "x"])) == false)
        #expect(plane.requests.count == requests)
        #expect(client.status == .ready)
        #expect(try #require(client.sync).currentContext.targetingKey == "u1")
        // A marker change: its event must be the first one.
        plane.setValue(2, for: "a")
        try await client.refreshOrFail()
        try await Wait.until("the marker's configurationChanged") { !recorder.all.isEmpty }
        #expect(recorder.all == [.configurationChanged(["a"])])
    }

    @Test func invalidInitialContextIsAnErrorWithoutRequests() async throws {
        let plane = InMemoryControlPlane(values: ["a": 1])
        let client = try Self.client(plane, context: EvaluationContext(targetingKey: "u1", kind: ""))
        defer { client.close() }
        #expect(try await Self.ready(client) == false)
        #expect(client.status == .error)
        #expect(plane.requests.isEmpty)
        #expect(try await Wait.result("identify(u1)") { await client.identify(EvaluationContext(targetingKey: "u1")) })
        #expect(client.status == .ready)
    }

    // MARK: Lifecycle

    @Test func closeIsIdempotentAndReadsKeepTheLastValues() async throws {
        let plane = InMemoryControlPlane(values: ["a": 1])
        let clock = ManualClock()
        let client = try Self.client(plane, clock: clock) { $0.pollInterval = .seconds(30) }
        #expect(try await Self.ready(client))
        let stream = client.events()
        let hookRuns = Locked(0)
        try #require(client.sync).addCloseHook { hookRuns.withLock { $0 += 1 } }
        client.close()
        client.close()
        #expect(hookRuns.value == 1)
        let ended = try await Wait.result("the event stream to end") {
            var iterator = stream.makeAsyncIterator()
            return await iterator.next() == nil
        }
        #expect(ended)
        #expect(client.int("a", default: 0) == 1)
        let requests = plane.requests.count
        try await client.refreshOrFail()
        // Nothing sleeps on the clock, so advancing it cannot send anything.
        #expect(clock.sleeperCount == 0, "a timer is still armed after close()")
        clock.advance(by: .seconds(3600))
        #expect(
            try await Wait.result("identify after close") {
                await client.identify(EvaluationContext(targetingKey: "u9"))
            } == false)
        #expect(plane.requests.count == requests)
        #expect(try await Self.ready(client, .seconds(1)))  // values were confirmed for the context
    }

    @Test func aStreamBufferingTheNewestEventKeepsOnlyTheLastOneWhileItsConsumerIsBehind() async throws {
        let plane = InMemoryControlPlane(values: ["a": 1])
        let client = try Self.client(plane) { $0.pollInterval = .seconds(30) }
        defer { client.close() }
        #expect(try await Self.ready(client))
        let newest = client.events(bufferingPolicy: .bufferingNewest(1))
        let every = client.events()
        // Three changes nobody consumes yet: the first stream keeps the last, the second all.
        for value in 2...4 {
            plane.setValue(.int(Int64(value)), for: "a")
            try await client.refreshOrFail()
        }
        #expect(client.int("a", default: 0) == 4)
        client.close()
        let kept = try await Wait.result("the newest-1 stream to end") {
            await newest.reduce(into: []) { $0.append($1) }
        }
        let all = try await Wait.result("the unbounded stream to end") {
            await every.reduce(into: []) { $0.append($1) }
        }
        let changes = all.filter { if case .configurationChanged = $0 { return true } else { return false } }
        #expect(changes.count == 3, "the unbounded stream: \(all)")
        #expect(kept.count == 1, "a stream buffering the newest 1 event kept \(kept)")
        #expect(kept.last == all.last, "the one kept is the last emitted: \(kept) vs \(all)")
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
        try await client.refreshOrFail()
        try await Wait.until("a log line about 401") { lines.value.contains { $0.contains("401") } }
        #expect(!lines.value.contains { $0.contains("SECRET") })
        #expect(plane.requests.first?.headers["Authorization"] == "Bearer cli-SECRET-123")
    }

    /// SPEC §12, "Key rotation" (the same holds for `FlagClient.setKey`): the request still on
    /// the wire with the old key is cancelled, and the new key's fetch does not wait for it.
    @Test func setKeyCancelsTheOldKeysRequest() async throws {
        let transport = HeldOldKeyTransport(oldKey: "cli-old-key")
        var options = FlagClientOptions(baseURL: try #require(URL(string: "http://127.0.0.1:9")), key: "cli-old-key")
        options.transport = transport
        options.changeDetection = .none
        options.exposures.enabled = false
        options.maxCachedContexts = 0
        options.installIDStorage = .fixed("install-1")
        // Only the cancellation may end the old request.
        options.requestTimeout = .seconds(120)
        let client = try FlagClient(options: options)
        defer {
            client.close()
            transport.releaseAll()
        }
        try await Wait.until("the start fetch on the wire with the old key") { transport.held == 1 }
        try await Wait.result("setKey(_:)", seconds: 10) { try await client.setKey("cli-new-key") }
        try await Wait.until("the old key's request to observe its cancellation", seconds: 10) {
            transport.cancelled == 1
        }
        #expect(client.string("env", default: "none") == "new")
        #expect(transport.newKeyRequests == 1)
        #expect(client.status == .ready)
    }

    @Test func setKeyRecoversFromARefusedKey() async throws {
        let plane = InMemoryControlPlane(values: ["a": 1])
        plane.failInitialization(status: 401)
        let client = try Self.client(plane)
        defer { client.close() }
        try await Wait.until("the start-up fetch to end") { plane.requests.count == 1 && client.status != .notReady }
        #expect(client.status == .fatal)
        await #expect(throws: FlagClientError.blankKey) { try await client.setKey(" ") }
        await #expect(throws: FlagClientError.serverKeyInClientRole(prefix: "srv-")) {
            try await client.setKey("srv-1")
        }
        #expect(plane.requests.count == 1)
        try await Wait.result("setKey(_:)") { try await client.setKey("cli-rotated") }
        #expect(client.status == .ready)
        #expect(client.int("a", default: 0) == 1)
        #expect(plane.requests.last?.headers["Authorization"] == "Bearer cli-rotated")
        #expect(try #require(client.sync).identityHeaders["Authorization"] == "Bearer cli-rotated")
    }
}

/// The deprecated throwing `onChange`, reached through a protocol so that the test of what it
/// still promises compiles without a deprecation warning.
protocol ThrowingChangeListening {
    func onChange(_ handler: @escaping @Sendable (Set<String>) throws -> Void) -> ChangeSubscription
}

extension FlagClient: ThrowingChangeListening {}
