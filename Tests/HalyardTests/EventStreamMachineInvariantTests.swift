import Testing

@testable import Halyard

/// The event-stream machine under seeded random input sequences: after every step, the rules
/// its types do not already enforce are checked against the actions it returned and the state
/// it is in (see ``StreamInvariants``). A failure names the seed and the step.
@Suite("Event stream machine: random sequences against its invariants")
struct EventStreamMachineInvariantTests {
    @Test("500 seeded sequences of 60 inputs: every invariant holds after every step")
    func randomSequences() {
        RandomSequences.run(
            StreamScenario.self,
            reaching: [
                "idle", "waiting", "connecting", "connected", "suspended", "stopped", "healthy", "degraded",
                "fetch pending", "activated pending", "inactive", "fetch held", "suspended owing a Retry-After",
            ])
    }
}

/// One random scenario: the machine, the clock and the random source the machine draws from,
/// and what the driver has seen (``StreamInvariants``).
struct StreamScenario: RandomScenario {
    /// The machine under test.
    var machine: EventStreamMachine
    /// The machine's own random source (reconnect jitter).
    var machineRandom: SplitMix64
    /// The monotonic clock.
    var now: Duration = .zero
    /// The checker, with its model of the connections open and the fetches in flight.
    var invariants = StreamInvariants()
    /// The states reached so far (names; see ``EventStreamMachineInvariantTests``).
    var coverage = Set<String>()

    /// A scenario whose configuration and machine randomness derive from `seed`.
    init(seed: UInt64) {
        var random = SplitMix64(seed: ~seed)
        var configuration = EventStreamMachine.Configuration()
        configuration.pollInterval = random.element(of: [.seconds(30), .zero, .seconds(3_600)])
        configuration.closesBeforeFailed = random.element(of: [1, 2, 3])
        configuration.inactivityDelayOverride = random.element(of: [nil, .zero, .seconds(3)])
        configuration.resetAfter = random.element(of: [.seconds(60), .seconds(5)])
        machine = EventStreamMachine(configuration: configuration)
        machineRandom = SplitMix64(seed: seed &* 0x9E37_79B9_7F4A_7C15)
    }

    /// The kinds of input, drawn by weight.
    private enum Kind {
        case advertised, withdrawn, opened, bytes, message, closed, fetchFinished, setActive, timer, stop
        case reauthenticate
    }

    /// Draws one input (moving the clock), feeds it, and checks the invariants.
    mutating func step(_ random: inout SplitMix64) -> (input: String, violations: [String]) {
        let input = nextInput(&random)
        let before = machine
        let actions = machine.event(input, now: now, random: &machineRandom)
        note()
        let violations = invariants.check(input, now: now, before: before, actions: actions, after: machine)
        return ("\(input) at \(now)", violations)
    }

    /// Draws the next input, moving the clock first (to the next wake, for most timers).
    mutating func nextInput(_ random: inout SplitMix64) -> EventStreamMachine.Input {
        var connecting = false
        if case .connecting = machine.phase { connecting = true }
        var connected = false
        if case .connected = machine.phase { connected = true }
        // Suspended: activation is what matters next (a Retry-After owed across it, issue 47).
        var suspended = false
        if case .suspended = machine.phase { suspended = true }
        let kind = random.pick([
            (6, Kind.advertised), (2, .withdrawn), (connecting ? 20 : 2, .opened), (12, .bytes),
            (connected ? 40 : 8, .message),
            (8, .closed), (invariants.fetchesInFlight > 0 ? 20 : 0, .fetchFinished), (suspended ? 30 : 6, .setActive),
            (28, .timer), (1, .stop), (2, .reauthenticate),
        ])
        if kind == .timer, random.chance(0.8), let wake = machine.nextWake {
            now = max(now, wake)
        } else if kind == .message || kind == .fetchFinished, random.chance(0.5) {
            // Events and answers in quick succession (the rate limit's case): same instant.
        } else {
            now += random.advance()
        }
        // Mostly the current connection; sometimes an earlier one (late events of a superseded stream).
        let connection = random.chance(0.85) ? machine.connection : UInt64(random.below(Int(machine.connection) + 1))
        switch kind {
        case .advertised: return .advertised(inactivityDelay: random.element(of: [nil, .seconds(10), .zero]))
        case .withdrawn: return .withdrawn
        case .opened:
            return .opened(
                connection: connection, status: random.element(of: [200, 200, 200, 204, 404, 500, 429, 503, 401]),
                isEventStream: random.chance(0.85),
                retryAfter: random.chance(0.3)
                    ? random.element(of: [.seconds(5), .seconds(600), .seconds(90_000)]) : nil)
        case .bytes:
            return .bytes(connection: connection, retry: random.chance(0.2) ? random.duration(upTo: .seconds(60)) : nil)
        case .message:
            let data = random.element(of: [
                #"{"type":"refetchEvaluation"}"#, #"{"type":"refetchEvaluation","etag":"\"v\#(random.below(3))\""}"#,
                #"{"type":"refetchEvaluation","lastModified":17}"#, #"{"type":"other"}"#, "not json",
            ])
            return .message(connection: connection, data: data)
        case .closed:
            return .closed(
                connection: connection,
                random.element(of: [EventStreamMachine.CloseReason.ended, .transportError, .garbage]))
        case .fetchFinished: return .fetchFinished
        case .setActive:
            let active = random.chance(0.5)
            return .setActive(suspended || active)
        case .timer: return .timer
        case .stop: return .stop
        case .reauthenticate: return .reauthenticate
        }
    }

    /// Records which states the step reached.
    private mutating func note() {
        switch machine.phase {
        case .idle: coverage.insert("idle")
        case .waiting: coverage.insert("waiting")
        case .connecting: coverage.insert("connecting")
        case .connected: coverage.insert("connected")
        case .suspended(_, _, let owed):
            coverage.insert("suspended")
            if owed != nil { coverage.insert("suspended owing a Retry-After") }
        case .stopped: coverage.insert("stopped")
        }
        if machine.isHealthy { coverage.insert("healthy") }
        if machine.degraded { coverage.insert("degraded") }
        if machine.inactiveSince != nil { coverage.insert("inactive") }
        if case .inFlight(let pending?) = machine.fetch {
            coverage.insert(pending.reason == .activated ? "activated pending" : "fetch pending")
        }
        if case .held = machine.fetch { coverage.insert("fetch held") }
    }
}

/// The event-stream machine's rules that its types leave open, checked after every step
/// against the actions returned and a model of what the driver has seen (the connections it
/// holds open, the fetches it runs).
struct StreamInvariants {
    /// Fetches the driver runs: asked for, not yet reported finished.
    var fetchesInFlight = 0
    /// When the last event-triggered fetch was asked for (the rate limit).
    var lastEventFetchAt: Duration?
    /// The connections the driver holds open: connected, not yet disconnected or ended.
    var open = Set<UInt64>()
    /// The last connection id the machine asked for.
    var lastConnection: UInt64 = 0
    /// The polling interval last asked for.
    var announced: Duration?
    /// The reconnect a stream URL's `Retry-After` deferred (issue 47 item 5): no connect before
    /// it, whatever `setActive` does meanwhile; forgotten when the stream is withdrawn (another
    /// URL may follow).
    var retryAfterUntil: Duration?

    /// The broken rules after the step (empty when every rule holds).
    mutating func check(
        _ input: EventStreamMachine.Input, now: Duration, before: EventStreamMachine,
        actions: [EventStreamMachine.Action],
        after: EventStreamMachine
    ) -> [String] {
        var broken: [String] = []
        let stopped = after.phase == .stopped
        if before.phase == .stopped, !actions.isEmpty { broken.append("a stopped machine produced \(actions)") }
        if stopped, after.nextWake != nil { broken.append("a stopped machine wakes at \(after.nextWake!)") }
        switch input {
        case .fetchFinished: fetchesInFlight -= 1
        case .closed(let connection, _): open.remove(connection)
        default: break
        }
        checkActions(input, now: now, before: before, actions: actions, after: after, into: &broken)
        if !stopped {
            var slotInFlight = false
            if case .inFlight = after.fetch { slotInFlight = true }
            if (fetchesInFlight > 0) != slotInFlight {
                broken.append("the driver runs \(fetchesInFlight) fetches, the machine's slot is \(after.fetch)")
            }
            if after.announcedPoll != after.desiredPollInterval || announced != after.desiredPollInterval {
                broken.append("polling asked at \(String(describing: announced)), wanted \(after.desiredPollInterval)")
            }
        }
        checkConnections(after: after, into: &broken)
        checkState(input, now: now, before: before, after: after, into: &broken)
        return broken
    }

    /// One fetch in flight at most and a fetch for the input's reason, connection ids in order,
    /// a change of polling only when it changes, no URL in a log line.
    private mutating func checkActions(
        _ input: EventStreamMachine.Input, now: Duration, before: EventStreamMachine,
        actions: [EventStreamMachine.Action],
        after: EventStreamMachine, into broken: inout [String]
    ) {
        var polls = 0
        // A 429 or 503 with Retry-After on the connection being opened: no reconnect before it
        // (capped at 1 h).
        if case .opened(let id, let status, _, let retryAfter?) = input, EventStreamMachine.honoursRetryAfter(status),
            id == before.connection, case .connecting = before.phase, case .waiting(let until, _) = after.phase,
            until < now + min(retryAfter, EventStreamMachine.maxRetryAfter)
        {
            broken.append("reconnects at \(until) before the Retry-After of \(retryAfter) from \(now)")
        }
        if case .opened(let id, let status, _, let retryAfter?) = input, EventStreamMachine.honoursRetryAfter(status),
            retryAfter > .zero, id == before.connection, case .connecting = before.phase,
            case .waiting(let until, _) = after.phase
        {
            retryAfterUntil = until
        }
        if case .withdrawn = input { retryAfterUntil = nil }
        for action in actions {
            switch action {
            case .fetch(let fetch):
                if fetchesInFlight > 0 { broken.append("a \(fetch.reason) fetch while one is in flight") }
                fetchesInFlight += 1
                let expected: EventStreamMachine.Fetch.Reason? =
                    switch input {
                    case .opened(_, let status, _, _) where EventStreamMachine.relearnStatuses.contains(status):
                        .relearn
                    case .opened: .connected
                    case .message: .event
                    case .setActive(true): .activated
                    default: nil
                    }
                if fetch.reason == .event {
                    if let last = lastEventFetchAt, now - last < before.configuration.minEventFetchSpacing {
                        broken.append("an event fetch \(now - last) after the previous one")
                    }
                    lastEventFetchAt = now
                }
                if case .held(let held, let until) = before.fetch, fetch == held {
                    // The held event fetch, released by its time (or taken over by the input's).
                    if case .timer = input, now < until { broken.append("a held fetch sent before \(until)") }
                } else if case .fetchFinished = input {
                    if before.fetch != .inFlight(pending: fetch) {
                        broken.append("the fetch after a finished one is not the pending one")
                    }
                } else if fetch.reason != expected {
                    broken.append("a \(fetch.reason) fetch for \(input)")
                }
            case .connect(let connection):
                if let until = retryAfterUntil {
                    if now < until {
                        broken.append("connect \(connection) at \(now), before the Retry-After's \(until)")
                    }
                    retryAfterUntil = nil
                }
                if connection != lastConnection + 1 {
                    broken.append("connection \(connection) after \(lastConnection)")
                }
                lastConnection = connection
                open.insert(connection)
                var connectingNow = false
                if case .connecting(now, _) = after.phase { connectingNow = true }
                if !connectingNow || after.connection != connection {
                    broken.append("connect \(connection) but the machine is \(after.phase) on \(after.connection)")
                }
            case .disconnect(let connection):
                if connection > lastConnection { broken.append("disconnect \(connection), never connected") }
                open.remove(connection)
            case .pollInterval(let interval):
                polls += 1
                if interval == announced { broken.append("polling asked again at \(interval)") }
                announced = interval
            case .log(_, let message, _):
                if message.contains("://") { broken.append("a log line with a URL: \(message)") }
            }
        }
        if polls > 1 { broken.append("\(polls) polling changes in one step") }
        if case .inFlight(let pending?) = before.fetch, pending.unconditional,
            !actions.contains(where: { if case .fetch = $0 { true } else { false } }),
            case .inFlight(let still?) = after.fetch, !still.unconditional
        {
            broken.append("a pending unconditional fetch was replaced by a \(still.reason) one")
        }
    }

    /// At most one connection open, and it is the machine's current one exactly while the
    /// machine is connecting or connected (none leaks, none is missing).
    private func checkConnections(after: EventStreamMachine, into broken: inout [String]) {
        if open.count > 1 { broken.append("connections open at once: \(open.sorted())") }
        switch after.phase {
        case .connecting, .connected:
            if open != [after.connection] {
                broken.append("\(after.phase) on \(after.connection) but the driver holds \(open.sorted()) open")
            }
        case .idle, .waiting, .suspended, .stopped:
            if !open.isEmpty { broken.append("\(after.phase) but the driver holds \(open.sorted()) open") }
        }
    }

    /// Health, counters, inactivity and the schedule agree with the phase.
    private func checkState(
        _ input: EventStreamMachine.Input, now: Duration, before: EventStreamMachine, after: EventStreamMachine,
        into broken: inout [String]
    ) {
        let stats = after.stats
        var connected = false
        if case .connected = after.phase { connected = true }
        if stats.healthy != after.isHealthy || stats.connected != connected {
            broken.append("stats say healthy \(stats.healthy), connected \(stats.connected) in \(after.phase)")
        }
        if after.isHealthy, after.degraded { broken.append("healthy while degraded") }
        if after.failures >= max(after.configuration.closesBeforeFailed, 1), !after.degraded {
            broken.append("\(after.failures) failures but not degraded")
        }
        let old = before.stats
        let counters = [
            (old.connects, stats.connects), (old.connections, stats.connections), (old.failures, stats.failures),
            (old.refetchEvents, stats.refetchEvents), (old.ignoredEvents, stats.ignoredEvents),
            (old.coalescedEvents, stats.coalescedEvents), (old.inactivityCloses, stats.inactivityCloses),
        ]
        if counters.contains(where: { $0.1 < $0.0 }) { broken.append("a counter went down") }
        if stats.connections > stats.connects { broken.append("more connections than connects") }
        if case .suspended = after.phase, after.inactiveSince == nil { broken.append("suspended while active") }
        // A reconnect newly scheduled (the `Following` a waiting phase carries may change alone).
        var waitedUntil: Duration?
        if case .waiting(let until, _) = before.phase { waitedUntil = until }
        if case .waiting(let until, _) = after.phase, waitedUntil != until, until <= now {
            broken.append("a reconnect scheduled at \(until), not after now")
        }
        if case .timer = input, let wake = after.nextWake, wake <= now {
            broken.append("after the timer at \(now) the next wake is \(wake): the driver would spin")
        }
        if let since = after.inactiveSince {
            switch after.phase {
            case .waiting, .connecting, .connected:
                if (after.nextWake.map { $0 > since + after.inactivityDelay }) ?? true {
                    broken.append("inactive, but no wake to close the stream")
                }
            case .idle, .suspended, .stopped: break
            }
        }
    }
}
