import Foundation
import Testing

@testable import Halyard

/// Drives the pure state machine without threads, sleeps or clocks.
struct MachineDriver {
    var machine: RefreshMachine
    var random = SplitMix64(seed: 42)
    var now: Duration = .zero
    var effects: [RefreshMachine.Effect] = []

    init(_ configure: (inout RefreshMachine.Configuration) -> Void = { _ in }) {
        var configuration = RefreshMachine.Configuration()
        configure(&configuration)
        machine = RefreshMachine(configuration: configuration)
    }

    @discardableResult
    mutating func feed(_ input: RefreshMachine.Input) -> RefreshMachine.Step {
        let step = machine.event(input, now: now, random: &random)
        effects.append(contentsOf: step.effects)
        return step
    }

    var sent: [RefreshMachine.Request] {
        effects.compactMap { if case .send(let r) = $0 { r } else { nil } }
    }

    var events: [ClientEvent] {
        effects.compactMap { if case .emit(let e) = $0 { e } else { nil } }
    }

    /// The id of the request in flight (a recorded failure, not a crash, when there is none).
    var inFlightID: UInt64 {
        get throws { try #require(machine.inFlight, "no request in flight").request.id }
    }

    /// Answers the request in flight.
    mutating func respond(_ outcome: RefreshMachine.Outcome) throws {
        feed(.response(requestID: try inFlightID, outcome))
    }

    /// The next wake (a recorded failure, not a crash, when the machine will never wake).
    var nextWake: Duration {
        get throws { try #require(machine.nextWake, "the machine has no next wake") }
    }

    /// Advances to the next wake and fires the timer.
    mutating func fireTimer() {
        if let wake = machine.nextWake { now = max(now, wake) }
        feed(.timer)
    }
}

@Suite struct RefreshMachineTests {
    @Test func startFetchesThenReadyAndPollsWithJitter() throws {
        var d = MachineDriver()
        d.feed(.start(fingerprint: "fp1"))
        #expect(d.sent.count == 1)
        #expect(d.sent[0].trigger == .start)
        #expect(d.sent[0].ifNoneMatch == nil)
        #expect(d.machine.status == .notReady)
        try d.respond(.updated(etag: "\"e1\""))
        #expect(d.machine.status == .ready)
        #expect(d.events == [.ready])
        #expect(d.effects.contains(.apply(requestID: 1)))
        let wake = try d.nextWake
        #expect(wake >= .seconds(27) && wake <= .seconds(33))
        d.fireTimer()
        #expect(d.sent.count == 2)
        #expect(d.sent[1].trigger == .poll)
        #expect(d.sent[1].ifNoneMatch == "\"e1\"")
        try d.respond(.notModified)
        #expect(d.effects.last(where: { $0 == .confirm }) != nil)
        #expect(d.machine.status == .ready)
        #expect(d.events == [.ready])  // nothing new on a 304
    }

    @Test func pollJitterStaysWithinTenPercent() throws {
        var d = MachineDriver()
        d.feed(.start(fingerprint: "fp"))
        try d.respond(.updated(etag: "\"e\""))
        for _ in 0..<200 {
            let before = d.now
            d.fireTimer()
            let delta = d.now - before
            #expect(delta >= .seconds(27) && delta <= .seconds(33))
            try d.respond(.notModified)
        }
    }

    @Test func zeroPollIntervalDisablesPolling() throws {
        var d = MachineDriver { $0.pollInterval = .zero }
        d.feed(.start(fingerprint: "fp"))
        try d.respond(.updated(etag: nil))
        #expect(d.machine.nextWake == nil)
    }

    @Test func refreshIsCoalescedWhileInFlight() throws {
        var d = MachineDriver()
        d.feed(.start(fingerprint: "fp"))
        for _ in 0..<10_000 {
            let step = d.feed(.refresh)
            #expect(step.wait == .request(1))
        }
        #expect(d.sent.count == 1)
        try d.respond(.updated(etag: nil))
        let step = d.feed(.refresh)
        #expect(step.wait == .request(2))
        #expect(d.sent.count == 2)
    }

    @Test func ifNoneMatchOnlyWhileContextUnchanged() throws {
        var d = MachineDriver()
        d.feed(.start(fingerprint: "A"))
        try d.respond(.updated(etag: "\"a\""))
        d.feed(.identify(fingerprint: "B"))
        #expect(d.sent.last?.ifNoneMatch == nil)
        try d.respond(.transient(.status(503), retryAfter: nil))
        // Back to A: the ETag for A is still valid and A's values are still served.
        d.feed(.identify(fingerprint: "A"))
        #expect(d.sent.last?.ifNoneMatch == "\"a\"")
        try d.respond(.notModified)
        #expect(d.machine.status == .ready)
        #expect(d.events.last == .contextChanged)
    }

    @Test func unsolicited304IsABadAnswer() throws {
        var d = MachineDriver()
        d.feed(.start(fingerprint: "A"))
        try d.respond(.notModified)
        #expect(d.machine.status == .error)
        #expect(!d.machine.hasValues)
        #expect(d.machine.failures == 1)
    }

    /// An unsolicited 304 still ends its request: without `finished`, the `refresh()`,
    /// `setKey` and stream callers waiting on it were never resumed (found by
    /// RefreshMachineInvariantTests).
    @Test func unsolicited304FinishesItsRequest() throws {
        var d = MachineDriver()
        d.feed(.start(fingerprint: "A"))
        #expect(d.feed(.refresh).wait == .request(1))
        try d.respond(.notModified)
        #expect(d.effects.last == .finished(requestID: 1))
        #expect(d.machine.inFlight == nil)
    }

    @Test func serverErrorsBackOffExponentiallyWithinBounds() throws {
        var d = MachineDriver()
        d.feed(.start(fingerprint: "fp"))
        var ceilings: [Duration] = []
        for failure in 1...20 {
            let sentAt = d.now
            try d.respond(.transient(.status(503), retryAfter: nil))
            let delay = try d.nextWake - sentAt
            let ceiling = min(Duration.seconds(1) * (1 << min(failure - 1, 20)), .seconds(300))
            ceilings.append(ceiling)
            #expect(delay >= .zero)  // full jitter, from the first retry on
            #expect(delay <= ceiling)
            d.fireTimer()
            #expect(d.sent.last?.trigger == .retry)
        }
        #expect(d.machine.status == .error)  // never got values
        try d.respond(.updated(etag: nil))
        #expect(d.machine.status == .ready)
        #expect(d.machine.failures == 0)
    }

    @Test func backoffCeilingDoublesToFiveMinutes() throws {
        let b = Backoff(initial: .seconds(1), maximum: .seconds(300))
        #expect(b.ceiling(failures: 1) == .seconds(1))
        #expect(b.ceiling(failures: 2) == .seconds(2))
        #expect(b.ceiling(failures: 9) == .seconds(256))
        #expect(b.ceiling(failures: 10) == .seconds(300))
        #expect(b.ceiling(failures: 10_000) == .seconds(300))
        #expect(b.delay(failures: 5, unit: 0) == .seconds(1))
        let full = Backoff(base: .seconds(1), maximum: .seconds(300))
        #expect(full.delay(failures: 5, unit: 0) == .zero)
        #expect(full.delay(failures: 1, unit: 0.5) == .milliseconds(500))
        #expect(b.delay(failures: 5, unit: 0.999_999) <= .seconds(16))
    }

    @Test func retryAfterBlocksEveryTrigger() throws {
        var d = MachineDriver()
        d.feed(.start(fingerprint: "fp"))
        try d.respond(.updated(etag: nil))
        d.fireTimer()
        let t429 = d.now
        try d.respond(.rateLimited(retryAfter: .seconds(120)))
        let sentAfter429 = d.sent.count
        // Wakes before the instant (status re-evaluation) send nothing.
        while let wake = d.machine.nextWake, wake < t429 + .seconds(120) {
            d.fireTimer()
            #expect(d.sent.count == sentAfter429)
        }
        let wake = try d.nextWake
        // The floor keeps its jitter: the retry falls in [120 s, 132 s].
        #expect(wake >= t429 + .seconds(120) && wake <= t429 + .seconds(132))
        d.now = t429 + .seconds(119)
        #expect(d.feed(.refresh).wait == .none)
        #expect(d.feed(.refreshIfStale).wait == .none)
        d.feed(.timer)
        let sentBefore = d.sent.count
        d.feed(.identify(fingerprint: "other"))
        #expect(d.sent.count == sentBefore)  // owed, not sent
        #expect(d.machine.status == .reconciling)
        d.now = wake - .milliseconds(1)
        d.feed(.timer)
        #expect(d.sent.count == sentBefore)  // not a moment before the drawn instant
        d.now = wake
        d.feed(.timer)
        #expect(d.sent.count == sentBefore + 1)
        #expect(d.sent.last?.trigger == .identify)
        #expect(d.sent.last?.fingerprint == "other")
    }

    @Test func status400KeepsServingWithError() throws {
        var d = MachineDriver()
        d.feed(.start(fingerprint: "fp"))
        try d.respond(.updated(etag: "\"e\""))
        d.fireTimer()
        try d.respond(.badRequest)
        #expect(d.machine.status == .error)
        #expect(d.machine.hasValues)
        #expect(d.events.last == .error(code: .invalidContext, message: "the control plane rejected the context (400)"))
        #expect(d.machine.nextWake != nil)  // keeps polling at the normal cadence
        d.fireTimer()
        try d.respond(.notModified)
        #expect(d.machine.status == .ready)
        #expect(d.events.last == .ready)
    }

    @Test func status401WithNothingToServeIsFatalAndStopsBackgroundRefresh() throws {
        var d = MachineDriver()
        d.feed(.start(fingerprint: "fp"))
        try d.respond(.unauthorized(status: 401))
        #expect(d.machine.status == .fatal)
        #expect(d.machine.nextWake == nil)
        #expect(!d.machine.canBecomeReady)
        if case .error(let code, _)? = d.events.last {
            #expect(code == .providerFatal)
        } else {
            Issue.record("no error event")
        }
        // A context change resumes.
        d.feed(.identify(fingerprint: "fp2"))
        #expect(d.sent.count == 2)
        try d.respond(.updated(etag: nil))
        #expect(d.machine.status == .ready)
    }

    @Test func status403WhileServingIsErrorAndStopsPolling() throws {
        var d = MachineDriver()
        d.feed(.start(fingerprint: "fp"))
        try d.respond(.updated(etag: nil))
        d.fireTimer()
        try d.respond(.unauthorized(status: 403))
        #expect(d.machine.status == .error)
        #expect(d.machine.nextWake == nil)
    }

    @Test func staleAfterThreePollIntervalsOfFailures() throws {
        var d = MachineDriver { $0.staleAfter = .seconds(90) }
        d.feed(.start(fingerprint: "fp"))
        try d.respond(.updated(etag: nil))
        let confirmed = d.now
        var sawStale = false
        for _ in 0..<30 {
            d.fireTimer()
            if d.machine.inFlight != nil { try d.respond(.transient(.timedOut, retryAfter: nil)) }
            if d.machine.status == .stale {
                sawStale = true
                #expect(d.now - confirmed >= .seconds(90))
                break
            }
            #expect(d.machine.status == .ready)
        }
        #expect(sawStale)
        #expect(d.events.contains(.stale))
        d.fireTimer()
        try d.respond(.updated(etag: nil))
        #expect(d.machine.status == .ready)
        #expect(d.events.last == .ready)
    }

    @Test func identifySupersedesOlderIdentify() throws {
        var d = MachineDriver()
        d.feed(.start(fingerprint: "A"))
        try d.respond(.updated(etag: nil))
        d.feed(.identify(fingerprint: "B"))
        let b = try d.inFlightID
        d.feed(.identify(fingerprint: "C"))
        #expect(d.effects.contains(.cancel(requestID: b)))
        #expect(d.effects.contains(.supersede(below: 2)))
        // The late answer for B is ignored.
        d.feed(.response(requestID: b, .updated(etag: nil)))
        #expect(!d.effects.contains(.apply(requestID: b)))
        try d.respond(.updated(etag: nil))
        #expect(d.events.filter { $0 == .contextChanged }.count == 1)
        #expect(d.events.filter { $0 == .reconciling }.count == 2)
        #expect(d.effects.contains(.identifyResolved(generation: 2, true)))
        #expect(d.machine.status == .ready)
    }

    @Test func failedIdentifyReportsErrorAndKeepsOldValues() throws {
        var d = MachineDriver()
        d.feed(.start(fingerprint: "A"))
        try d.respond(.updated(etag: nil))
        d.feed(.identify(fingerprint: "B"))
        #expect(d.machine.status == .reconciling)
        try d.respond(.transient(.network, retryAfter: nil))
        #expect(d.machine.status == .error)
        #expect(d.machine.valuesFingerprint == "A")
        #expect(d.effects.contains(.identifyResolved(generation: 1, false)))
        // The background retry for B succeeds later: contextChanged then.
        d.fireTimer()
        try d.respond(.updated(etag: nil))
        #expect(d.events.last == .contextChanged)
        #expect(d.machine.isConfirmedForCurrentContext)
    }

    @Test func refreshIfStaleOnlyWhenOld() throws {
        var d = MachineDriver { $0.refreshIfStaleThreshold = .seconds(15) }
        d.feed(.start(fingerprint: "fp"))
        try d.respond(.updated(etag: nil))
        d.now += .seconds(10)
        #expect(d.feed(.refreshIfStale).wait == .none)
        d.now += .seconds(6)
        #expect(d.feed(.refreshIfStale).wait == .request(2))
    }

    @Test func explicitRefreshRespectsBackoff() throws {
        var d = MachineDriver()
        d.feed(.start(fingerprint: "fp"))
        try d.respond(.transient(.status(500), retryAfter: nil))
        #expect(d.feed(.refresh).wait == .none)
        d.now = try d.nextWake
        #expect(d.feed(.refresh).wait == .request(2))
    }

    @Test func closeStopsEverything() throws {
        var d = MachineDriver()
        d.feed(.start(fingerprint: "fp"))
        d.feed(.close)
        #expect(d.effects.contains(.cancel(requestID: 1)))
        #expect(d.machine.nextWake == nil)
        #expect(d.feed(.refresh).wait == .none)
        let count = d.effects.count
        d.feed(.close)
        #expect(d.effects.count == count)
    }

    @Test func invalidInitialContextIsAnErrorWithoutRequests() throws {
        var d = MachineDriver()
        d.feed(.start(fingerprint: nil))
        #expect(d.sent.isEmpty)
        #expect(d.machine.status == .error)
        if case .error(let code, _)? = d.events.first {
            #expect(code == .invalidContext)
        } else {
            Issue.record("no event")
        }
    }

    @Test func keyChangeLiftsTheAuthStopAndForgetsTheETag() throws {
        var d = MachineDriver()
        d.feed(.start(fingerprint: "fp"))
        try d.respond(.updated(etag: "\"e\""))
        d.fireTimer()
        try d.respond(.unauthorized(status: 401))
        #expect(d.machine.status == .error)
        #expect(d.machine.nextWake == nil)
        d.feed(.keyChanged)
        #expect(d.sent.last?.ifNoneMatch == nil)
        try d.respond(.updated(etag: nil))
        #expect(d.machine.status == .ready)
        #expect(d.machine.nextWake != nil)
    }

    /// Issue 47 item 3: after `keyChanged`, an answer to a request sent with the old key binds
    /// nothing: a 429 (which a superseded request's answer otherwise still carries over)
    /// pauses nothing, a 200 is not applied, a 5xx starts no backoff.
    @Test func anOldKeysAnswersBindNothingAfterKeyChanged() throws {
        for outcome in [
            RefreshMachine.Outcome.rateLimited(retryAfter: .seconds(600)), .updated(etag: "\"old\""),
            .transient(.status(503), retryAfter: .seconds(600)),
        ] {
            var d = MachineDriver()
            d.feed(.start(fingerprint: "fp"))
            try d.respond(.updated(etag: "\"e\""))
            d.fireTimer()
            let old = try d.inFlightID
            d.feed(.keyChanged)
            let current = try d.inFlightID
            #expect(current != old)
            d.feed(.response(requestID: old, outcome))
            #expect(d.machine.retryNotBefore == nil, "the old key's \(outcome) paused the client")
            #expect(!d.effects.contains(.apply(requestID: old)))
            #expect(try d.inFlightID == current)
            try d.respond(.updated(etag: "\"new\""))
            #expect(d.machine.status == .ready)
            // The next trigger goes at once.
            let sent = d.sent.count
            d.feed(.refresh)
            #expect(d.sent.count == sent + 1, "after the old key's \(outcome), a refresh was held back")
        }
    }

    /// Issue 14: the first retry is jittered too, so clients that failed together do not all
    /// retry at the same instant.
    @Test func firstRetryIsJittered() throws {
        var firstDelays = Set<Duration>()
        for seed in 1...50 {
            var d = MachineDriver()
            d.random = SplitMix64(seed: UInt64(seed))
            d.feed(.start(fingerprint: "fp"))
            let sentAt = d.now
            try d.respond(.transient(.status(503), retryAfter: nil))
            let delay = try d.nextWake - sentAt
            #expect(delay >= .zero && delay <= .seconds(1))
            firstDelays.insert(delay)
        }
        #expect(firstDelays.count > 40, "first retries are not spread: \(firstDelays.count) distinct delays")
    }

    /// Issue 14 bug 3: every trigger deferred by a Retry-After is owed and sent when it ends, and
    /// owing one does not hide the stale transition meanwhile.
    @Test func deferredTriggersAreOwedAndStaleStillComes() throws {
        for trigger in [RefreshMachine.Input.refresh, .refreshIfStale, .keyChanged] {
            var d = MachineDriver()
            d.feed(.start(fingerprint: "fp"))
            try d.respond(.updated(etag: nil))
            let confirmed = d.now
            d.now += .seconds(20)
            d.feed(.refresh)
            try d.respond(.rateLimited(retryAfter: .seconds(300)))
            let sentBefore = d.sent.count
            d.feed(trigger)
            #expect(d.sent.count == sentBefore, "\(trigger) sent during the Retry-After")
            #expect(d.machine.pendingFetch, "\(trigger) was not owed")
            let staleAt = confirmed + d.machine.configuration.staleAfter
            #expect(d.machine.nextWake == staleAt)
            d.now = staleAt
            d.feed(.timer)
            #expect(d.machine.status == .stale)
            #expect(d.sent.count == sentBefore)
            // The Retry-After ends at confirmed + 320 s, its jittered floor by 350 s.
            d.now = confirmed + .seconds(350)
            d.feed(.timer)
            #expect(d.sent.count == sentBefore + 1, "the owed \(trigger) fetch was not sent")
        }
    }

    /// Issue 47 item 6: the retry after a `Retry-After` was `max(backoff, RA)`, i.e. RA itself
    /// for every client given one date. It is spread over [RA, RA + max(1 s, RA / 10)].
    @Test func retryAfterFloorIsJittered() throws {
        var waits: [Duration] = []
        for seed in UInt64(1)...10 {
            var d = MachineDriver()
            d.random = SplitMix64(seed: seed)
            d.feed(.start(fingerprint: "fp"))
            let answeredAt = d.now
            try d.respond(.rateLimited(retryAfter: .seconds(120)))
            waits.append(try d.nextWake - answeredAt)
        }
        #expect(waits.allSatisfy { $0 >= .seconds(120) && $0 <= .seconds(132) }, "\(waits)")
        let spread = try #require(waits.max()) - (try #require(waits.min()))
        #expect(spread >= .seconds(4), "ten clients retry within \(spread) of each other: \(waits)")
    }

    /// Issue 47 item 4: one 503 with `Retry-After: 86400` blocked a client's polls, `identify`,
    /// `refresh()` and `setKey` for a day. Capped at 1 h (and its window, 6 min more).
    @Test func aDayLongRetryAfterHoldsAClientAnHourAtMost() throws {
        let response = TransportResponse(status: 503, headers: ["Retry-After": "86400"])
        let (outcome, _) = RefreshMachine.Outcome.classify(response, maxResponseBytes: 1 << 20, wallNow: Date())
        var d = MachineDriver()
        d.feed(.start(fingerprint: "fp"))
        try d.respond(.updated(etag: nil))
        d.feed(.refresh)
        let answeredAt = d.now
        try d.respond(outcome)
        d.feed(.identify(fingerprint: "other"))
        #expect(d.machine.pendingFetch, "the identify is owed to the Retry-After")
        let wake = try d.nextWake
        #expect(wake - answeredAt >= .seconds(3_600))
        #expect(wake - answeredAt <= .seconds(3_960), "held \(wake - answeredAt) by a day-long Retry-After")
    }
}
