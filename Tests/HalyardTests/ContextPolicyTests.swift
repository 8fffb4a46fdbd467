import Testing

@testable import Halyard

/// The service's per-context policy (Service/Policy/ContextPolicy.swift): its events one at a
/// time, then seeded random sequences of every event against its invariants.
@Suite("Service context policy: the per-context state machine")
struct ContextPolicyTests {
    static let policy = ContextPolicy(
        configuration: .init(refreshAfter: .seconds(30), maxStaleness: .seconds(600), probeLead: .seconds(120)),
        backoffs: .init(
            context: Backoff(initial: .seconds(1), maximum: .seconds(300), floor: .milliseconds(500)),
            recoveryInterval: .seconds(60)))

    static func gate(
        closed: Bool = false, fatal: Bool = false, pausedUntil: Duration? = nil, retryAfter: Bool = false,
        room: Bool = true
    ) -> ServiceFetcher.Gate {
        ServiceFetcher.Gate(
            closed: closed, fatal: fatal, pausedUntil: pausedUntil, retryAfterInForce: retryAfter, coldRoom: room,
            refreshRoom: room)
    }

    @Test("an answer is confirmed as of its request's send time: one that crossed a change event is stale to it")
    func sentTimeConfirmation() {
        var machine = ContextPolicy.Machine(policy: Self.policy)
        #expect(machine.read(now: .seconds(1), gate: Self.gate(), unit: 0.5) == .fetch)
        machine.sent(now: .seconds(1))
        machine.event(now: .seconds(2))  // the change's event, while the answer is on its way
        _ = machine.answer(.updated, now: .seconds(3), gate: Self.gate(room: false), unit: 0.5)
        #expect(machine.owed, "the flight the event found owes a refetch")
        guard case .held(let held) = machine.state else {
            Issue.record("not held: \(machine.state)")
            return
        }
        #expect(held.confirmedAt == .seconds(1))
        // No room now: the refetch stays owed; with room it starts.
        #expect(machine.tick(now: .seconds(4), gate: Self.gate(room: false)) == .none)
        #expect(machine.owed)
        #expect(machine.tick(now: .seconds(5), gate: Self.gate()) == .refetch)
    }

    @Test("after setKey, an answer to the old key changes nothing, whatever its status")
    func oldKeyAnswersChangeNothing() {
        for outcome: ContextPolicy.Outcome in [.updated, .notModified, .failed(retryAfter: .seconds(60)), .forbidden] {
            var machine = ContextPolicy.Machine(policy: Self.policy)
            _ = machine.read(now: .zero, gate: Self.gate(), unit: 0.5)
            machine.sent(now: .zero)
            machine.setKey()
            _ = machine.answer(outcome, now: .seconds(1), gate: Self.gate(), unit: 0.5)
            #expect(machine.state == .absent, "\(outcome)")
        }
    }

    @Test("500 seeded sequences of 60 events: every invariant holds after every step")
    func randomSequences() {
        RandomSequences.run(
            ContextPolicyScenario.self,
            reaching: [
                "absent", "failing", "held", "fetching", "marked flight", "owed refetch", "owed waits",
                "refetch", "probe", "shed", "old-key answer", "stale served while refreshing",
            ])
    }
}

/// One random scenario: a context's machine, the clock, the gate, and what was seen.
struct ContextPolicyScenario: RandomScenario {
    var machine = ContextPolicy.Machine(policy: ContextPolicyTests.policy)
    var now: Duration = .zero
    var closed = false
    var fatal = false
    var pausedUntil: Duration = .zero
    var room = true
    var coverage = Set<String>()

    init(seed: UInt64) {}

    var gate: ServiceFetcher.Gate {
        ContextPolicyTests.gate(
            closed: closed, fatal: fatal, pausedUntil: now < pausedUntil ? pausedUntil : nil, room: room)
    }

    private enum Kind {
        case read, send, answer, event, setKey, evict, pause, room, fatal, close, tick
    }

    mutating func step(_ random: inout SplitMix64) -> (input: String, violations: [String]) {
        now += random.advance()
        let fetching: Bool
        if case .fetching = machine.state { fetching = true } else { fetching = false }
        let kind = random.pick([
            (10, Kind.read), (fetching ? 8 : 0, .send), (fetching ? 10 : 0, .answer), (4, .event), (1, .setKey),
            (1, .evict), (2, .pause), (2, .room), (1, .fatal), (closed ? 0 : 1, .close), (4, .tick),
        ])
        let before = machine
        let unit = random.unit()
        var violations: [String] = []
        let gate = self.gate
        var input = "\(kind)"
        switch kind {
        case .read:
            let servable = machine.servable(now: now)
            let action = machine.read(now: now, gate: gate, unit: unit)
            input += " -> \(action)"
            violations += checkRead(before: before, servable: servable, action: action, gate: gate)
        case .send:
            machine.sent(now: now)
        case .answer:
            let outcome = Self.outcome(&random)
            input += " \(outcome)"
            let action = machine.answer(outcome, now: now, gate: gate, unit: unit)
            input += " -> \(action)"
            violations += checkAnswer(before: before, outcome: outcome, action: action)
        case .event:
            machine.event(now: now)
            if case .fetching(let flight) = machine.state, !flight.marked {
                violations.append("an event left a flight unmarked")
            }
        case .setKey:
            machine.setKey()
        case .evict:
            machine.evict()
        case .pause:
            pausedUntil = now + random.duration(upTo: .seconds(600))
        case .room:
            room.toggle()
        case .fatal:
            fatal.toggle()
        case .close:
            closed = true
        case .tick:
            let owed = machine.owed
            let action = machine.tick(now: now, gate: gate)
            input += " -> \(action)"
            if owed, case .held(let held) = before.state, !gate.closed, !gate.fatal, now >= held.retryAt,
                gate.admits(.refresh), action != .refetch
            {
                violations.append("an owed refetch the gate admits did not start")
            }
            if action == .refetch { coverage.insert("refetch") }
            if owed, action == .none, machine.owed { coverage.insert("owed waits") }
        }
        violations += checkState()
        note()
        return ("\(input) at \(now)", violations)
    }

    /// A request: values served only while servable; nothing created while the gate is shut
    /// (a probe only before expiry, never during a 429's Retry-After); values confirmed before
    /// the last event are never served without a refresh started, in flight, owed or barred.
    private mutating func checkRead(
        before: ContextPolicy.Machine, servable: ContextPolicy.Held?, action: ContextPolicy.Machine.Action,
        gate: ServiceFetcher.Gate
    ) -> [String] {
        var violations: [String] = []
        switch action {
        case .serve, .serveShed, .serveAndRefresh:
            if servable == nil { violations.append("served values that are not servable") }
        default:
            break
        }
        switch action {
        case .fetch, .serveAndRefresh(probe: false):
            if gate.closed || gate.fatal || gate.pausedUntil != nil {
                violations.append("a fetch created through a shut gate")
            }
        case .serveAndRefresh(probe: true):
            coverage.insert("probe")
            if !gate.admitsProbe { violations.append("a probe through a 429 or a shut gate") }
        case .serveShed:
            coverage.insert("shed")
        default:
            break
        }
        if case .held(let held) = before.state, let staleBefore = before.staleBefore, held.confirmedAt < staleBefore,
            servable != nil, action == .serve
        {
            let barred = now < held.retryAt || !gate.admits(.refresh)
            if !barred {
                violations.append("values confirmed before the last event served with no refresh")
            } else {
                coverage.insert("stale served while refreshing")
            }
        }
        if case .fetching = before.state, case .held = machine.state {
            violations.append("a read ended a flight")
        }
        return violations
    }

    /// An answer: a replaced key's changes nothing; new values are confirmed as of the send.
    private mutating func checkAnswer(
        before: ContextPolicy.Machine, outcome: ContextPolicy.Outcome, action: ContextPolicy.Machine.Action
    ) -> [String] {
        guard case .fetching(let flight) = before.state else { return [] }
        var violations: [String] = []
        if let sent = flight.sent, sent.keyGeneration != before.keyGeneration {
            coverage.insert("old-key answer")
            let unchanged: Bool
            switch machine.state {
            case .held(let held): unchanged = held == flight.held
            case .failing(let record): unchanged = flight.held == nil && record == flight.record
            case .absent: unchanged = flight.held == nil && flight.record == nil
            case .fetching(let next): unchanged = next.held == flight.held && action == .refetch
            }
            if !unchanged { violations.append("an answer to a replaced key changed the context: \(machine.state)") }
        }
        if outcome == .updated, let sent = flight.sent, sent.keyGeneration == before.keyGeneration {
            let held: ContextPolicy.Held?
            switch machine.state {
            case .held(let h): held = h
            case .fetching(let next): held = next.held
            default: held = nil
            }
            if held?.confirmedAt != min(sent.at, now) { violations.append("new values not confirmed as of their send") }
        }
        if flight.marked, machine.state != .absent, !machine.owed, action != .refetch, !closed, !fatal {
            if case .failing = machine.state {} else { violations.append("a marked flight's refetch was dropped") }
        }
        return violations
    }

    /// The state's own rules: a servable entry's retry time never passes its expiry (except a
    /// 429's floor, not modelled here); an owed refetch only for held values.
    private func checkState() -> [String] {
        var violations: [String] = []
        if case .held(let held) = machine.state, machine.policy.servable(held, now: now),
            held.retryAt > held.confirmedAt + machine.policy.configuration.maxStaleness
        {
            violations.append("a backoff outlasts what may be served")
        }
        if machine.owed {
            switch machine.state {
            case .held, .fetching: break
            default: violations.append("a refetch owed for a context without values")
            }
        }
        return violations
    }

    private mutating func note() {
        switch machine.state {
        case .absent: coverage.insert("absent")
        case .failing: coverage.insert("failing")
        case .held: coverage.insert("held")
        case .fetching(let flight):
            coverage.insert("fetching")
            if flight.marked { coverage.insert("marked flight") }
        }
        if machine.owed { coverage.insert("owed refetch") }
    }

    private static func outcome(_ random: inout SplitMix64) -> ContextPolicy.Outcome {
        switch random.below(12) {
        case 0..<4: return .updated
        case 4..<6: return .notModified
        case 6: return .badRequest
        case 7: return .forbidden
        case 8: return .skipped
        case 9: return .shed
        default: return .failed(retryAfter: random.chance(0.3) ? random.duration(upTo: .seconds(30)) : nil)
        }
    }
}
