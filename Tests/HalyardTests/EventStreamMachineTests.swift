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
    var logs: [String] { actions.compactMap { if case .log(_, let m) = $0 { m } else { nil } } }

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

    @Test("a 429 or 503 with Retry-After is not reconnected before it (capped at 1 h); other statuses ignore it")
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
                #expect(wait == expected, "\(status) Retry-After \(retryAfter): waits \(wait)")
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
}
