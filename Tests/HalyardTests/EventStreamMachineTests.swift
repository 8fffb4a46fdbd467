import Testing

@testable import Halyard

/// Drives the pure event-stream machine without threads, sleeps or clocks.
struct StreamDriver {
    var machine: EventStreamMachine
    var random = SplitMix64(seed: 7)
    var now: Duration = .zero
    var actions: [EventStreamMachine.Action] = []

    init(_ configure: (inout EventStreamMachine.Configuration) -> Void = { _ in }) {
        var configuration = EventStreamMachine.Configuration()
        configure(&configuration)
        machine = EventStreamMachine(configuration: configuration)
    }

    @discardableResult
    mutating func feed(_ input: EventStreamMachine.Input) -> [EventStreamMachine.Action] {
        let step = machine.event(input, now: now, random: &random)
        actions.append(contentsOf: step)
        return step
    }

    var connects: [UInt64] { actions.compactMap { if case .connect(let c) = $0 { c } else { nil } } }
    var disconnects: [UInt64] { actions.compactMap { if case .disconnect(let c) = $0 { c } else { nil } } }
    var fetches: [EventStreamMachine.Fetch] { actions.compactMap { if case .fetch(let f) = $0 { f } else { nil } } }
    var polls: [Duration] { actions.compactMap { if case .pollInterval(let d) = $0 { d } else { nil } } }
    var logs: [String] { actions.compactMap { if case .log(_, let m, _) = $0 { m } else { nil } } }

    /// Advertises a stream and lets its connection open with 200 text/event-stream.
    mutating func connected() {
        feed(.advertised(inactivityDelay: nil))
        feed(.opened(connection: machine.connection, status: 200, isEventStream: true))
    }

    /// Advances to the next wake and fires the timer.
    mutating func fireTimer() throws {
        let wake = try #require(machine.nextWake, "the machine has no next wake")
        now = max(now, wake)
        feed(.timer)
    }

    static func refetch(etag: String? = nil, lastModified: String? = nil) -> String {
        var fields = ["\"type\":\"refetchEvaluation\""]
        if let etag { fields.append("\"etag\":\(etag)") }
        if let lastModified { fields.append("\"lastModified\":\(lastModified)") }
        return "{" + fields.joined(separator: ",") + "}"
    }
}

@Suite("Event stream machine (SPEC §14)")
struct EventStreamMachineTests {
    @Test("advertised → connect; 2xx head → re-fetch at once without flagConfig parameters")
    func connectThenFetch() {
        var d = StreamDriver()
        d.feed(.advertised(inactivityDelay: nil))
        #expect(d.connects == [1])
        #expect(d.fetches.isEmpty)
        d.feed(.opened(connection: 1, status: 200, isEventStream: true))
        #expect(d.fetches == [EventStreamMachine.Fetch(reason: .connected)])
        #expect(d.fetches.first?.unconditional == false)
    }

    @Test("refetchEvaluation forwards etag verbatim (quotes kept) and a numeric lastModified as digits")
    func routesRefetchWithParameters() {
        var d = StreamDriver()
        d.connected()
        d.feed(.fetchFinished)
        d.feed(
            .message(connection: 1, data: StreamDriver.refetch(etag: #""\"abc+1\"""#, lastModified: "1733061234")))
        #expect(
            d.fetches.last
                == EventStreamMachine.Fetch(
                    reason: .event, flagConfig: FlagConfigVersion(etag: #""abc+1""#, lastModified: "1733061234")))
    }

    @Test("flagConfig values: numbers as their digits, however large; over 1 KiB dropped, the fetch made without")
    func flagConfigValuesBoundedAndDigits() {
        func config(_ members: String) -> FlagConfigVersion? {
            EventStreamMachine.route(#"{"type":"refetchEvaluation",\#(members)}"#)?.flagConfig
        }
        #expect(config(#""etag":1e20"#)?.etag == "100000000000000000000")
        #expect(EventStreamMachine.integralDigits(-1e20) == "-100000000000000000000")
        #expect(EventStreamMachine.integralDigits(9_223_372_036_854_775_808) == "9223372036854775808")
        #expect(EventStreamMachine.integralDigits(1.5e300).count == 301)
        #expect(EventStreamMachine.integralDigits(-7) == "-7")
        #expect(config(#""lastModified":17.0"#)?.lastModified == "17")
        #expect(config(#""lastModified":-3"#)?.lastModified == "-3")
        let long = String(repeating: "x", count: 1_025)
        #expect(config(#""etag":"\#(long)","lastModified":"9""#) == FlagConfigVersion(etag: nil, lastModified: "9"))
        #expect(config(#""etag":"\#(long)""#) == nil)
        #expect(EventStreamMachine.route(#"{"type":"refetchEvaluation","etag":"\#(long)"}"#) == .init(reason: .event))
        let fits = String(repeating: "y", count: 1_024)
        #expect(config(#""etag":"\#(fits)""#)?.etag == fits)
    }

    @Test("routing looks at data's JSON type only: other types, non-JSON and non-objects are ignored")
    func routingOnTypeOnly() {
        #expect(EventStreamMachine.route(#"{"type":"refetchEvaluation"}"#) == .init(reason: .event))
        #expect(EventStreamMachine.route(#"{"type":"somethingElse","etag":"x"}"#) == nil)
        #expect(EventStreamMachine.route(#"{"event":"refetchEvaluation"}"#) == nil)
        #expect(EventStreamMachine.route("refetchEvaluation") == nil)
        #expect(EventStreamMachine.route(#"["refetchEvaluation"]"#) == nil)
        #expect(EventStreamMachine.route(#"{"type":"refetchEvaluation","etag":true}"#) == .init(reason: .event))
        var d = StreamDriver()
        d.connected()
        d.feed(.fetchFinished)
        d.feed(.message(connection: 1, data: #"{"type":"configurationChanged"}"#))
        #expect(d.fetches.count == 1)
        #expect(d.machine.stats.ignoredEvents == 1)
    }

    @Test("ten events in a burst: one fetch in flight, one pending carrying the latest parameters")
    func coalescing() throws {
        var d = StreamDriver()
        d.connected()
        d.feed(.fetchFinished)
        for i in 1...10 {
            d.feed(.message(connection: 1, data: StreamDriver.refetch(etag: "\"e\(i)\"")))
        }
        #expect(d.fetches.count == 2)  // the connect fetch and the first event's
        #expect(d.fetches.last?.flagConfig?.etag == "e1")
        d.feed(.fetchFinished)
        // The pending one waits for the rate limit (200 ms after the first event's fetch).
        #expect(d.fetches.count == 2)
        try d.fireTimer()
        #expect(d.now == .milliseconds(200))
        #expect(d.fetches.count == 3)
        #expect(d.fetches.last?.flagConfig?.etag == "e10")
        d.feed(.fetchFinished)
        #expect(d.fetches.count == 3)
        #expect(d.machine.fetch == .idle)
    }

    @Test("event fetches are rate-limited: the first at once, then at most 5 per second (before: ~400 in 10 s)")
    func eventFetchesRateLimited() throws {
        var d = StreamDriver()
        d.connected()
        d.feed(.fetchFinished)
        let first = d.fetches.count
        d.feed(.message(connection: 1, data: StreamDriver.refetch(etag: "\"first\"")))
        #expect(d.fetches.count == first + 1, "the first event's fetch goes at once")
        // An event every 5 ms for 10 s; each fetch answered 20 ms after it was sent.
        var answerAt: Duration? = .milliseconds(20)
        for step in 1...2_000 {
            d.now = .milliseconds(5 * step)
            let before = d.fetches.count
            if let due = answerAt, d.now >= due {
                answerAt = nil
                d.feed(.fetchFinished)
            }
            if let wake = d.machine.nextWake, wake <= d.now { d.feed(.timer) }
            d.feed(.message(connection: 1, data: StreamDriver.refetch(etag: "\"v\(step)\"")))
            if d.fetches.count > before { answerAt = d.now + .milliseconds(20) }
        }
        let eventFetches = d.fetches.count - first
        #expect(eventFetches <= 51, "\(eventFetches) event fetches in 10 s")
        #expect(eventFetches >= 45, "\(eventFetches): the limit, not a stall")
        #expect(d.fetches.last?.flagConfig?.etag != nil)
    }

    @Test("events on a superseded connection are ignored")
    func staleConnectionIgnored() throws {
        var d = StreamDriver()
        d.connected()
        d.feed(.fetchFinished)
        d.feed(.closed(connection: 1, .ended))
        try d.fireTimer()
        #expect(d.connects == [1, 2])
        d.feed(.message(connection: 1, data: StreamDriver.refetch()))
        #expect(d.fetches.count == 1)
    }

    @Test("a dropped stream reconnects after a jittered delay in [0.5 s, 30 s] and re-fetches")
    func reconnectBackoff() throws {
        var d = StreamDriver()
        d.connected()
        d.feed(.fetchFinished)
        var delays: [Duration] = []
        for round in 1...8 {
            d.feed(.closed(connection: d.machine.connection, .ended))
            let wake = try #require(d.machine.nextWake)
            delays.append(wake - d.now)
            try d.fireTimer()
            #expect(d.connects.count == round + 1)
            d.feed(.opened(connection: d.machine.connection, status: 200, isEventStream: true))
            #expect(d.fetches.count == round + 1, "re-fetch after reconnect \(round)")
            #expect(d.fetches.last == .init(reason: .connected))
            d.feed(.fetchFinished)
        }
        #expect(delays.allSatisfy { $0 >= .milliseconds(500) && $0 <= .seconds(30) })
        #expect(delays[0] >= .milliseconds(500) && delays[0] <= .seconds(1))
        #expect(delays[1] >= .seconds(1) && delays[1] <= .seconds(2))
        #expect(delays[2] >= .seconds(2) && delays[2] <= .seconds(4))
        #expect(delays[7] >= .seconds(15))
    }

    @Test("the jitter source is injected: delays are drawn from the upper half of the ceiling")
    func jitterInjected() {
        let m = EventStreamMachine(configuration: .init())
        #expect(m.reconnectDelay(failures: 3, unit: 0) == .seconds(2))
        #expect(m.reconnectDelay(failures: 3, unit: 1) == .seconds(4))
        #expect(m.reconnectDelay(failures: 10, unit: 1) == .seconds(30))
        #expect(m.reconnectDelay(failures: 1, unit: 0) == .milliseconds(500))
        #expect(m.reconnectDelay(failures: 1, unit: 1) == .seconds(1))
    }

    @Test("a fleet whose streams ended together does not reconnect at one instant: the first delay is jittered too")
    func firstReconnectIsJittered() throws {
        // Six clients (their own random sources, as six processes have) whose streams the
        // server ended at the same moment. Before the fix every first delay was exactly 1 s.
        var firstDelays: [Duration] = []
        for seed in UInt64(1)...6 {
            var d = StreamDriver()
            d.random = SplitMix64(seed: seed &* 0x9E37_79B9)
            d.connected()
            d.feed(.fetchFinished)
            d.feed(.closed(connection: d.machine.connection, .ended))
            let wake = try #require(d.machine.nextWake)
            firstDelays.append(wake - d.now)
        }
        #expect(firstDelays.allSatisfy { $0 >= .milliseconds(500) && $0 <= .seconds(1) }, "\(firstDelays)")
        let spread = try #require(firstDelays.max()) - (try #require(firstDelays.min()))
        #expect(Set(firstDelays).count == 6, "first reconnect delays: \(firstDelays)")
        #expect(spread >= .milliseconds(100), "six first delays within \(spread): \(firstDelays)")
    }

    @Test("backoff resets after 60 s connected")
    func backoffResets() throws {
        var d = StreamDriver()
        d.connected()
        d.feed(.fetchFinished)
        for _ in 1...5 {
            d.feed(.closed(connection: d.machine.connection, .ended))
            try d.fireTimer()
            d.feed(.opened(connection: d.machine.connection, status: 200, isEventStream: true))
            d.feed(.fetchFinished)
        }
        #expect(d.machine.failures == 5)
        d.now += .seconds(61)
        d.feed(.bytes(connection: d.machine.connection, retry: nil))
        #expect(d.machine.failures == 0)
        d.feed(.closed(connection: d.machine.connection, .ended))
        let wake = try #require(d.machine.nextWake)
        #expect(wake - d.now <= .seconds(1))
    }

    @Test("retry: is honoured within the bounds (clamped to [1 s, 30 s])")
    func retryHonoured() throws {
        var d = StreamDriver()
        d.connected()
        d.feed(.bytes(connection: 1, retry: .seconds(10)))
        d.feed(.closed(connection: 1, .ended))
        var wake = try #require(d.machine.nextWake)
        #expect(wake - d.now >= .seconds(5) && wake - d.now <= .seconds(10))
        try d.fireTimer()
        d.feed(.opened(connection: 2, status: 200, isEventStream: true))
        d.feed(.bytes(connection: 2, retry: .seconds(3600)))
        d.feed(.closed(connection: 2, .ended))
        wake = try #require(d.machine.nextWake)
        #expect(wake - d.now <= .seconds(30) && wake - d.now >= .seconds(15))
        try d.fireTimer()
        d.feed(.opened(connection: 3, status: 200, isEventStream: true))
        d.feed(.bytes(connection: 3, retry: .milliseconds(1)))
        d.feed(.closed(connection: 3, .ended))
        wake = try #require(d.machine.nextWake)
        #expect(wake - d.now >= .seconds(1))
    }

    @Test("healthy stream: safety polling at max(pollInterval, 5 min); failed: pollInterval")
    func safetyPolling() throws {
        var d = StreamDriver { $0.pollInterval = .seconds(30) }
        d.feed(.advertised(inactivityDelay: nil))
        #expect(d.polls == [.seconds(30)])
        d.feed(.opened(connection: 1, status: 200, isEventStream: true))
        #expect(d.polls.last == .seconds(300))
        d.feed(.fetchFinished)
        // One drop: still healthy while reconnecting.
        d.feed(.closed(connection: 1, .ended))
        #expect(d.polls.last == .seconds(300))
        try d.fireTimer()
        d.feed(.opened(connection: 2, status: 200, isEventStream: true))
        d.feed(.fetchFinished)
        // Closed repeatedly: failed.
        d.feed(.closed(connection: 2, .ended))
        #expect(d.polls.last == .seconds(30))
        #expect(d.machine.isHealthy == false)
        // Reconnected, but only healthy again after 60 s connected.
        try d.fireTimer()
        d.feed(.opened(connection: 3, status: 200, isEventStream: true))
        #expect(d.polls.last == .seconds(30))
        d.now += .seconds(60)
        try d.fireTimer()
        #expect(d.polls.last == .seconds(300))
        // A longer poll interval wins over the safety floor.
        var long = StreamDriver { $0.pollInterval = .seconds(3600) }
        long.connected()
        #expect(long.polls == [.seconds(3600)])
        // No polling configured: none with a stream either.
        var none = StreamDriver { $0.pollInterval = .zero }
        none.connected()
        #expect(none.polls == [.zero])
    }

    @Test("404, a non-event-stream 2xx, refused and garbage each fail the stream at once")
    func hardFailures() {
        for input in [
            EventStreamMachine.Input.opened(connection: 1, status: 404, isEventStream: false),
            .opened(connection: 1, status: 200, isEventStream: false),
            .closed(connection: 1, .transportError),
        ] {
            var d = StreamDriver()
            d.feed(.advertised(inactivityDelay: nil))
            d.feed(input)
            #expect(d.machine.isHealthy == false)
            #expect(d.polls.last == .seconds(30))
            // A 404 re-learns the advertisement (one unconditional fetch); the others fetch nothing.
            let relearns = input == .opened(connection: 1, status: 404, isEventStream: false)
            #expect(d.fetches == (relearns ? [.init(reason: .relearn)] : []))
            #expect(d.machine.nextWake != nil, "retried with backoff")
        }
        var d = StreamDriver()
        d.connected()
        d.feed(.closed(connection: 1, .garbage))
        #expect(d.machine.isHealthy == false)
        #expect(d.disconnects == [1])
        #expect(d.polls.last == .seconds(30))
    }

    @Test("a silent stream (no byte for 5 min) is closed and reopened; bytes keep it open")
    func readInactivity() throws {
        var d = StreamDriver()
        d.connected()
        d.feed(.fetchFinished)
        d.now += .seconds(200)
        d.feed(.bytes(connection: 1, retry: nil))
        #expect(try #require(d.machine.nextWake) == .seconds(500))
        try d.fireTimer()
        #expect(d.disconnects == [1])
        #expect(d.machine.stats.inactivityCloses == 1)
        try d.fireTimer()
        #expect(d.connects == [1, 2])
    }

    @Test("a head that never arrives is a failed connect after the connect timeout")
    func connectTimeout() throws {
        var d = StreamDriver()
        d.feed(.advertised(inactivityDelay: nil))
        try d.fireTimer()
        #expect(d.now == .seconds(10))
        #expect(d.disconnects == [1])
        #expect(d.machine.isHealthy == false)
    }

    @Test("setActive(false) closes after the inactivity delay (option ?? server ?? 120 s)")
    func inactivityDelay() throws {
        var d = StreamDriver()
        d.connected()
        d.feed(.fetchFinished)
        let inactiveAt = d.now
        d.feed(.setActive(false))
        d.now += .seconds(119)
        d.feed(.timer)
        #expect(d.disconnects.isEmpty)
        d.now += .seconds(1)
        d.feed(.timer)
        #expect(d.disconnects == [1])
        #expect(d.machine.phase == .suspended(inactiveSince: inactiveAt, degraded: false))
        #expect(d.machine.nextWake == nil)
        // Inactive, stream closed: polling no faster than while streaming (before: back to 30 s).
        #expect(d.polls.last == .seconds(300), "polls while suspended: \(d.polls)")
        #expect(d.machine.desiredPollInterval == .seconds(300))

        var server = StreamDriver()
        server.feed(.advertised(inactivityDelay: .seconds(10)))
        #expect(server.machine.inactivityDelay == .seconds(10))
        var option = StreamDriver { $0.inactivityDelayOverride = .seconds(3) }
        option.feed(.advertised(inactivityDelay: .seconds(10)))
        #expect(option.machine.inactivityDelay == .seconds(3))
    }

    @Test("setActive(true) within the delay keeps the stream; after it reconnects; both re-fetch unconditionally")
    func activation() throws {
        var d = StreamDriver()
        d.connected()
        d.feed(.fetchFinished)
        d.feed(.setActive(false))
        d.now += .seconds(5)
        d.feed(.setActive(true))
        #expect(d.disconnects.isEmpty)
        #expect(d.fetches.last == .init(reason: .activated))
        #expect(d.fetches.last?.unconditional == true)
        d.feed(.fetchFinished)
        d.feed(.setActive(false))
        d.now += .seconds(200)
        d.feed(.timer)
        #expect(d.disconnects == [1])
        d.feed(.setActive(true))
        #expect(d.connects == [1, 2])
        #expect(d.fetches.last == .init(reason: .activated))
        d.feed(.opened(connection: 2, status: 200, isEventStream: true))
        // The reconnect fetch waits for the unconditional one (coalesced), then follows.
        #expect(d.fetches.count == 3)
        d.feed(.fetchFinished)
        #expect(d.fetches.last == .init(reason: .connected))
        // setActive(true) while active changes nothing.
        d.feed(.fetchFinished)
        d.feed(.setActive(true))
        #expect(d.fetches.count == 4)
    }

    @Test("an event while an unconditional fetch is pending does not lose the unconditional one")
    func activatedPendingKept() {
        var d = StreamDriver()
        d.connected()
        d.feed(.setActive(false))
        d.feed(.setActive(true))
        d.feed(.message(connection: 1, data: StreamDriver.refetch(etag: "\"x\"")))
        d.feed(.fetchFinished)
        #expect(d.fetches.last?.reason == .activated)
    }

    @Test("a 429/503 Retry-After holds the reconnect (capped at 1 h, jittered); other statuses ignore it")
    func retryAfterOnTheStreamURL() throws {
        for (status, retryAfter, expected) in [
            (429, Duration.seconds(600), Duration.seconds(600)),
            (503, .seconds(20), .seconds(20)),
            (503, .seconds(86_400), .seconds(3_600)),  // capped
            (500, .seconds(600), nil),  // not a status that carries one: the backoff alone
        ] as [(Int, Duration, Duration?)] {
            var d = StreamDriver()
            d.feed(.advertised(inactivityDelay: nil))
            d.feed(.opened(connection: 1, status: status, isEventStream: false, retryAfter: retryAfter))
            let wait = try #require(d.machine.nextWake) - d.now
            if let expected {
                // The floor keeps its jitter: [RA, RA + max(1 s, RA / 10)].
                #expect(
                    wait >= expected && wait <= expected + max(.seconds(1), expected / 10),
                    "\(status) Retry-After \(retryAfter): waits \(wait)")
            } else {
                #expect(wait <= .seconds(1), "\(status): waits \(wait), the first backoff step")
            }
            // Nothing connects before that instant, whatever the timer does.
            d.now += wait - .milliseconds(1)
            d.feed(.timer)
            #expect(d.connects == [1], "\(status): reconnected before its Retry-After")
            try d.fireTimer()
            #expect(d.connects == [1, 2])
        }
    }

    /// Issue 47 item 6: ten clients whose streams answered 503 with one HTTP-date all
    /// reconnected within 10 ms of it (`max(jittered, retryAfter)`): the herd SPEC §14 forbids,
    /// moved to the date. The floor keeps its jitter: uniform in [RA, RA + max(1 s, RA / 10)].
    @Test("a fleet given one Retry-After does not reconnect at one instant: spread over [RA, RA + RA/10]")
    func retryAfterFloorIsJittered() throws {
        var waits: [Duration] = []
        for seed in UInt64(1)...10 {
            var d = StreamDriver()
            d.random = SplitMix64(seed: seed &* 0x9E37_79B9)
            d.feed(.advertised(inactivityDelay: nil))
            d.feed(.opened(connection: 1, status: 503, isEventStream: false, retryAfter: .seconds(600)))
            waits.append(try #require(d.machine.nextWake) - d.now)
        }
        #expect(waits.allSatisfy { $0 >= .seconds(600) && $0 <= .seconds(660) }, "\(waits)")
        let spread = try #require(waits.max()) - (try #require(waits.min()))
        #expect(spread >= .seconds(20), "ten reconnects within \(spread) of each other: \(waits)")
    }

    /// Issue 47 item 5: a stream answered 503 with `Retry-After: 600`; `setActive(false)`,
    /// 2.5 s, `setActive(true)`: the client reconnected at once (the suspension turned the
    /// wait into `.suspended`, and activation started again from 0 failures).
    @Test("a stream's Retry-After survives background/foreground: no reconnect before it, failures kept")
    func retryAfterSurvivesSuspension() throws {
        var d = StreamDriver { $0.inactivityDelayOverride = .seconds(1) }
        d.feed(.advertised(inactivityDelay: nil))
        d.feed(.opened(connection: 1, status: 503, isEventStream: false, retryAfter: .seconds(600)))
        let refusedAt = d.now
        let until = try #require(d.machine.nextWake)
        #expect(until - refusedAt >= .seconds(600))
        d.feed(.setActive(false))
        d.now += .milliseconds(2_500)
        d.feed(.timer)
        if case .suspended = d.machine.phase {} else { Issue.record("not suspended: \(d.machine.phase)") }
        d.feed(.setActive(true))
        #expect(d.connects == [1], "reconnected \(d.now - refusedAt) after a Retry-After of 600 s")
        #expect(d.fetches.last == .init(reason: .activated), "the activation's bulk re-fetch still goes")
        #expect(d.machine.failures == 1, "activation reset the failures of a Retry-After refusal")
        #expect(d.machine.nextWake == until)
        try d.fireTimer()
        #expect(d.connects == [1, 2])
        #expect(d.now == until)

        // Foreground after the Retry-After has passed: reconnects at once, failures still counted.
        var late = StreamDriver { $0.inactivityDelayOverride = .seconds(1) }
        late.feed(.advertised(inactivityDelay: nil))
        late.feed(.opened(connection: 1, status: 429, isEventStream: false, retryAfter: .seconds(5)))
        late.feed(.setActive(false))
        late.now += .seconds(2)
        late.feed(.timer)
        late.now += .seconds(60)
        late.feed(.setActive(true))
        #expect(late.connects == [1, 2])
        #expect(late.machine.failures == 1)

        // A suspension after a failure without Retry-After: activation reconnects at once, as before.
        var plain = StreamDriver { $0.inactivityDelayOverride = .seconds(1) }
        plain.feed(.advertised(inactivityDelay: nil))
        plain.feed(.opened(connection: 1, status: 500, isEventStream: false, retryAfter: .seconds(600)))
        plain.feed(.setActive(false))
        plain.now += .seconds(2)
        plain.feed(.timer)
        plain.feed(.setActive(true))
        #expect(plain.connects == [1, 2])
        #expect(plain.machine.failures == 0)
    }

    /// Issue 47 item 7: a connect's, an activation's or a re-learn's fetch merged with a
    /// pending or held event fetch erased the event's `flagConfig*` values; the fetch that went
    /// out could be answered from a cache that predates the change.
    @Test("an event's flagConfig values survive being merged with a connect, activation or re-learn fetch")
    func eventParametersSurviveMerges() throws {
        let x = #""x""#  // JSON text: the string x
        // Pending behind the connect fetch, then an activation: the activation's fetch carries them.
        var activation = StreamDriver()
        activation.connected()
        activation.feed(.message(connection: 1, data: StreamDriver.refetch(etag: x)))
        activation.feed(.setActive(false))
        activation.feed(.setActive(true))
        activation.feed(.fetchFinished)
        #expect(activation.fetches.last?.reason == .activated)
        #expect(activation.fetches.last?.unconditional == true)
        #expect(activation.fetches.last?.flagConfig?.etag == "x", "\(activation.fetches)")

        // Pending, then the stream drops and reconnects: the reconnect's fetch carries them.
        var reconnect = StreamDriver()
        reconnect.connected()
        reconnect.feed(.message(connection: 1, data: StreamDriver.refetch(etag: x)))
        reconnect.feed(.closed(connection: 1, .ended))
        try reconnect.fireTimer()
        reconnect.feed(.opened(connection: 2, status: 200, isEventStream: true))
        reconnect.feed(.fetchFinished)
        #expect(reconnect.fetches.last?.reason == .connected)
        #expect(reconnect.fetches.last?.flagConfig?.etag == "x", "\(reconnect.fetches)")

        // Pending, then the stream URL is refused: the re-learn fetch carries them.
        var relearn = StreamDriver()
        relearn.connected()
        relearn.feed(.message(connection: 1, data: StreamDriver.refetch(etag: x)))
        relearn.feed(.closed(connection: 1, .ended))
        try relearn.fireTimer()
        relearn.feed(.opened(connection: 2, status: 401, isEventStream: false))
        relearn.feed(.fetchFinished)
        #expect(relearn.fetches.last?.reason == .relearn)
        #expect(relearn.fetches.last?.flagConfig?.etag == "x", "\(relearn.fetches)")

        // Held by the rate limit, then an activation: sent at once, with them.
        var held = StreamDriver()
        held.connected()
        held.feed(.fetchFinished)
        held.feed(.message(connection: 1, data: StreamDriver.refetch(etag: #""a""#)))
        held.feed(.fetchFinished)
        held.feed(.message(connection: 1, data: StreamDriver.refetch(etag: x)))
        if case .held = held.machine.fetch {} else { Issue.record("not held: \(held.machine.fetch)") }
        held.feed(.setActive(false))
        held.feed(.setActive(true))
        #expect(held.fetches.last?.reason == .activated)
        #expect(held.fetches.last?.flagConfig?.etag == "x", "\(held.fetches)")

        // The latest event's values win, even when it names none (an older version is stale).
        var latest = StreamDriver()
        latest.connected()
        latest.feed(.message(connection: 1, data: StreamDriver.refetch(etag: x)))
        latest.feed(.message(connection: 1, data: StreamDriver.refetch()))
        latest.feed(.fetchFinished)
        #expect(latest.fetches.last == .init(reason: .event))
    }

    @Test("401, 403, 404 and 410 on the stream URL re-fetch once, unconditionally, per failing step")
    func refusedStreamURLRelearnsTheAdvertisement() throws {
        for status in [401, 403, 404, 410] {
            var d = StreamDriver()
            d.feed(.advertised(inactivityDelay: nil))
            d.feed(.opened(connection: 1, status: status, isEventStream: false))
            #expect(d.fetches == [.init(reason: .relearn)], "\(status)")
            #expect(d.fetches.last?.unconditional == true)
            d.feed(.fetchFinished)
            try d.fireTimer()
            d.feed(.opened(connection: 2, status: status, isEventStream: false))
            #expect(d.fetches.count == 2, "\(status): one re-fetch per failing step")
        }
        // A 500, a 429 or a 200 that is not an event stream is no reason to re-learn.
        for status in [500, 429, 200] {
            var d = StreamDriver()
            d.feed(.advertised(inactivityDelay: nil))
            d.feed(.opened(connection: 1, status: status, isEventStream: false))
            #expect(d.fetches.isEmpty, "\(status)")
        }
    }

    /// Seed 8 of the propagation checker (I4): the re-learn a 401 asked for was held back by a
    /// `Retry-After` (nothing sent), reported as finished, and the reconnect delay (shorter than
    /// the hold) reopened the refused URL before the advertisement was learned again.
    @Test("a held re-learn keeps the refused stream URL closed: the reconnect time asks for the re-learn again")
    func heldRelearnKeepsRefusedURLClosed() throws {
        var d = StreamDriver()
        d.feed(.advertised(inactivityDelay: nil))
        d.feed(.opened(connection: 1, status: 401, isEventStream: false))
        #expect(d.fetches == [.init(reason: .relearn)])
        d.feed(.fetchHeld)
        try d.fireTimer()
        #expect(d.connects == [1], "the refused stream URL was opened again before a re-learn went")
        #expect(d.fetches.map(\.reason) == [.relearn, .relearn])
        // The re-learn goes: the next reconnect opens the URL (the answer may re-advertise it).
        d.feed(.fetchFinished)
        try d.fireTimer()
        #expect(d.connects == [1, 2])

        // A re-advertisement clears the hold; a held fetch that is no re-learn sets none.
        var readvertised = StreamDriver()
        readvertised.feed(.advertised(inactivityDelay: nil))
        readvertised.feed(.opened(connection: 1, status: 401, isEventStream: false))
        readvertised.feed(.fetchHeld)
        readvertised.feed(.advertised(inactivityDelay: nil))
        try readvertised.fireTimer()
        #expect(readvertised.connects == [1, 2])
        var event = StreamDriver()
        event.connected()
        event.feed(.message(connection: 1, data: StreamDriver.refetch()))
        event.feed(.fetchHeld)
        event.feed(.closed(connection: 1, .ended))
        try event.fireTimer()
        #expect(event.connects == [1, 2])
    }

    /// Seed 57 of the propagation checker (I4(e)): a client going to the background had its
    /// stream URL refused 401 and the re-learn held back by a bulk `Retry-After`; the suspension
    /// forgot the held re-learn, and `setActive(true)` opened the refused URL again at once.
    @Test("a held re-learn survives background/foreground: activation does not reopen the refused URL first")
    func heldRelearnSurvivesSuspension() throws {
        var d = StreamDriver { $0.inactivityDelayOverride = .milliseconds(300) }
        d.feed(.advertised(inactivityDelay: nil))
        d.feed(.setActive(false))
        d.feed(.opened(connection: 1, status: 401, isEventStream: false))
        d.feed(.fetchHeld)
        d.now += .milliseconds(400)
        d.feed(.timer)
        if case .suspended = d.machine.phase {} else { Issue.record("not suspended: \(d.machine.phase)") }
        d.feed(.setActive(true))
        #expect(d.connects == [1], "activation opened the stream URL refused 401 before a re-learn went")
        #expect(d.fetches.last == .init(reason: .activated), "the activation's fetch (unconditional) goes")
        // The activation's fetch was held back too: the reconnect time asks for the re-learn.
        d.feed(.fetchHeld)
        try d.fireTimer()
        #expect(d.connects == [1])
        #expect(d.fetches.last == .init(reason: .relearn))
        // It goes and re-advertises the URL: the next reconnect opens it.
        d.feed(.fetchFinished)
        d.feed(.advertised(inactivityDelay: nil))
        try d.fireTimer()
        #expect(d.connects == [1, 2])

        // Suspended with no re-learn owed: activation reconnects at once, as before.
        var plain = StreamDriver { $0.inactivityDelayOverride = .milliseconds(300) }
        plain.feed(.advertised(inactivityDelay: nil))
        plain.feed(.setActive(false))
        plain.feed(.opened(connection: 1, status: 401, isEventStream: false))
        plain.feed(.fetchFinished)
        plain.now += .milliseconds(400)
        plain.feed(.timer)
        plain.feed(.setActive(true))
        #expect(plain.connects == [1, 2])
    }

    @Test("withdrawn closes the stream and polling returns to normal; stop ends everything")
    func withdrawnAndStop() {
        var d = StreamDriver()
        d.connected()
        d.feed(.withdrawn)
        #expect(d.disconnects == [1])
        #expect(d.polls.last == .seconds(30))
        d.feed(.advertised(inactivityDelay: nil))
        #expect(d.connects == [1, 2])
        d.feed(.stop)
        #expect(d.disconnects == [1, 2])
        #expect(d.feed(.advertised(inactivityDelay: nil)).isEmpty)
        #expect(d.machine.nextWake == nil)
    }

    @Test("no log line of the machine can carry a URL (it never sees one)")
    func logsCarryNoURL() throws {
        var d = StreamDriver()
        d.connected()
        d.feed(.closed(connection: 1, .garbage))
        try d.fireTimer()
        d.feed(.opened(connection: 2, status: 404, isEventStream: false))
        #expect(!d.logs.isEmpty)
        #expect(d.logs.allSatisfy { !$0.contains("http") && !$0.contains("/") })
    }

    @Test("a key change replaces a connected or connecting stream at once; a waiting one keeps its time")
    func reauthenticateReconnects() throws {
        var d = StreamDriver()
        d.connected()
        d.feed(.fetchFinished)
        d.feed(.reauthenticate)
        #expect(d.disconnects == [1])
        #expect(d.connects == [1, 2])
        #expect(d.machine.stats.connected == false)
        d.feed(.reauthenticate)  // still connecting: that connect goes too
        #expect(d.disconnects == [1, 2])
        #expect(d.connects == [1, 2, 3])
        d.feed(.opened(connection: 3, status: 200, isEventStream: true))
        #expect(d.fetches.last == EventStreamMachine.Fetch(reason: .connected))
        // Waiting to reconnect (a failure): the wait and its failure count stay.
        d.feed(.fetchFinished)
        d.feed(.closed(connection: 3, .transportError))
        let wake = d.machine.nextWake
        let failures = d.machine.failures
        d.feed(.reauthenticate)
        #expect(d.connects == [1, 2, 3])
        #expect(d.machine.nextWake == wake)
        #expect(d.machine.failures == failures)
        // Idle (nothing advertised): nothing.
        var idle = StreamDriver()
        idle.feed(.reauthenticate)
        #expect(idle.connects.isEmpty && idle.disconnects.isEmpty)
    }

    /// A service re-learns its stream URL without a wave unless the re-learn fetch absorbed an
    /// event's or a connect's: then that wave is owed too (FlagService+Streaming).
    @Test("a re-learn or activation fetch that absorbed an event or a connect still announces a change")
    func absorbedChangesAreAnnounced() {
        typealias Fetch = EventStreamMachine.Fetch
        #expect(!Fetch(reason: .relearn).announcesChange)
        #expect(!Fetch(reason: .activated).announcesChange)
        #expect(!Fetch(reason: .relearn).merged(with: Fetch(reason: .relearn)).announcesChange)
        #expect(!Fetch(reason: .relearn).merged(with: Fetch(reason: .activated)).announcesChange)
        let named = Fetch(reason: .event, flagConfig: FlagConfigVersion(etag: "e", lastModified: nil))
        for absorbed in [Fetch(reason: .event), named, Fetch(reason: .connected)] {
            let relearn = Fetch(reason: .relearn).merged(with: absorbed)
            #expect(relearn.reason == .relearn && relearn.announcesChange, "\(absorbed)")
            // And it stays announced through a later merge of a fetch that announces none.
            #expect(relearn.merged(with: Fetch(reason: .relearn)).announcesChange)
            let earlier = absorbed.merged(with: Fetch(reason: .relearn))
            #expect(earlier.reason == .relearn && earlier.announcesChange, "\(absorbed)")
        }
        // A fetch that announces a change by its reason equals a fresh one of that reason.
        #expect(Fetch(reason: .event).merged(with: Fetch(reason: .event)) == Fetch(reason: .event))
        #expect(Fetch(reason: .relearn).merged(with: Fetch(reason: .connected)) != Fetch(reason: .relearn))
    }

    /// Found by the propagation checker (seed 8, fleet): a service whose stream answered 503
    /// with a `Retry-After` date was advertised another URL (an answer computed before a
    /// rotation): the withdrawal and the new advertisement reconnected at once, and the two URLs
    /// then alternated 401 and 503 every few tens of milliseconds.
    @Test("a Retry-After holds across a change of stream URL; a later advertisement waits for it")
    func retryAfterHoldsAcrossAnotherURL() throws {
        var d = StreamDriver()
        d.feed(.advertised(inactivityDelay: nil))
        d.feed(.opened(connection: 1, status: 503, isEventStream: false, retryAfter: .seconds(30)))
        let refusedAt = d.now
        let until = try #require(d.machine.nextWake)
        #expect(until - refusedAt >= .seconds(30))
        // Another URL: the driver withdraws the old stream and advertises the new one.
        d.now += .milliseconds(20)
        d.feed(.withdrawn)
        d.feed(.advertised(inactivityDelay: nil))
        #expect(d.connects == [1], "reconnected \(d.now - refusedAt) after a Retry-After of 30 s")
        #expect(d.machine.nextWake == until)
        try d.fireTimer()
        #expect(d.connects == [1, 2])
        #expect(d.now == until)

        // The switch raced the old connection's answer: its 503 arrives after the new URL's
        // connect went; the new one is refused (401): the reconnect waits for the old floor.
        var raced = StreamDriver()
        raced.feed(.advertised(inactivityDelay: nil))
        raced.feed(.withdrawn)
        raced.feed(.advertised(inactivityDelay: nil))
        #expect(raced.connects == [1, 2])
        raced.feed(.opened(connection: 1, status: 503, isEventStream: false, retryAfter: .seconds(30)))
        let floorGivenAt = raced.now
        raced.feed(.opened(connection: 2, status: 401, isEventStream: false))
        let wake = try #require(raced.machine.nextWake)
        #expect(wake - floorGivenAt >= .seconds(30), "the abandoned connection's Retry-After was lost")

        // Once the floor has passed, a new URL connects at once as before.
        var late = StreamDriver()
        late.feed(.advertised(inactivityDelay: nil))
        late.feed(.opened(connection: 1, status: 429, isEventStream: false, retryAfter: .seconds(5)))
        late.now += .seconds(60)
        late.feed(.withdrawn)
        late.feed(.advertised(inactivityDelay: nil))
        #expect(late.connects == [1, 2])
    }
}
