import Testing

@testable import Halyard

/// The refresh machine under seeded random input sequences: after every step, the rules its
/// types do not already enforce are checked against the effects it returned and the state it
/// is in (see ``RefreshInvariants``). A failure names the seed and the step.
@Suite("Refresh machine: random sequences against its invariants")
struct RefreshMachineInvariantTests {
    @Test("500 seeded sequences of 60 inputs: every invariant holds after every step")
    func randomSequences() {
        RandomSequences.run(
            RefreshScenario.self,
            reaching: Set(ClientStatus.allCases.map { "status \($0)" }).union([
                "owed fetch", "key refused", "context rejected", "failing", "joined stream fetch", "closed",
                "unresolved identify", "invalid context", "cached values",
            ]))
    }
}

/// One random scenario: the machine, the clock and the random source the machine draws from,
/// and what the engine has seen (``RefreshInvariants``).
struct RefreshScenario: RandomScenario {
    /// The machine under test.
    var machine: RefreshMachine
    /// The machine's own random source (jitter).
    var machineRandom: SplitMix64
    /// The monotonic clock.
    var now: Duration = .zero
    /// The checker, with its model of the requests in flight.
    var invariants = RefreshInvariants()
    /// The states and events reached so far (names; see ``RefreshMachineInvariantTests``).
    var coverage = Set<String>()

    /// A scenario whose configuration and machine randomness derive from `seed`.
    init(seed: UInt64) {
        var random = SplitMix64(seed: ~seed)
        var configuration = RefreshMachine.Configuration()
        configuration.pollInterval = random.element(of: [.seconds(30), .seconds(5), .zero])
        configuration.staleAfter = random.element(of: [.seconds(90), .seconds(10)])
        configuration.learnsAdvertisement = random.chance(0.5)
        machine = RefreshMachine(configuration: configuration)
        machineRandom = SplitMix64(seed: seed &* 0x9E37_79B9_7F4A_7C15)
    }

    /// The kinds of input, drawn by weight.
    private enum Kind {
        case start, identify, refresh, refreshIfStale, keyChanged, timer, respond, lateResponse, cachedValues
        case streamFetch, pollInterval, close
    }

    /// Draws one input (moving the clock), feeds it, and checks the invariants.
    mutating func step(_ random: inout SplitMix64) -> (input: String, violations: [String]) {
        let input = nextInput(&random)
        let before = machine
        let step = machine.event(input, now: now, random: &machineRandom)
        note(step)
        let violations = invariants.check(input, now: now, before: before, step: step, after: machine)
        return ("\(input) at \(now)", violations)
    }

    /// Draws the next input, moving the clock first (to the next wake, for most timers).
    mutating func nextInput(_ random: inout SplitMix64) -> RefreshMachine.Input {
        let kind = random.pick([
            (2, Kind.start), (4, .identify), (5, .refresh), (3, .refreshIfStale), (2, .keyChanged), (14, .timer),
            (machine.inFlight == nil ? 0 : 22, .respond), (invariants.sent.isEmpty ? 0 : 2, .lateResponse),
            (2, .cachedValues), (5, .streamFetch), (3, .pollInterval), (1, .close),
        ])
        if kind == .timer, random.chance(0.8), let wake = machine.nextWake {
            now = max(now, wake)
        } else {
            now += random.advance()
        }
        let fingerprints = ["A", "B", "C"]
        switch kind {
        case .start: return .start(fingerprint: random.chance(0.15) ? nil : random.element(of: fingerprints))
        case .identify: return .identify(fingerprint: random.element(of: fingerprints))
        case .refresh: return .refresh
        case .refreshIfStale: return .refreshIfStale
        case .keyChanged: return .keyChanged
        case .timer: return .timer
        case .respond:
            return .response(requestID: machine.inFlight?.request.id ?? 0, Self.outcome(&random))
        case .lateResponse:
            return .response(requestID: random.element(of: invariants.sent), Self.outcome(&random))
        case .cachedValues:
            return .cachedValues(
                fingerprint: random.element(of: fingerprints), etag: random.element(of: [nil, "\"c1\""]))
        case .streamFetch:
            let reason = random.element(of: [EventStreamMachine.Fetch.Reason.connected, .event, .activated])
            return .streamFetch(
                .init(
                    reason: reason,
                    flagConfig: reason == .event
                        ? FlagConfigVersion(
                            etag: "\"v\(random.below(3))\"", lastModified: random.chance(0.5) ? "17" : nil)
                        : nil))
        case .pollInterval:
            return .setPollInterval(random.element(of: [.zero, .seconds(5), .seconds(30), .seconds(300)]))
        case .close: return .close
        }
    }

    /// An answer, weighted towards successes so sequences also recover.
    private static func outcome(_ random: inout SplitMix64) -> RefreshMachine.Outcome {
        let retryAfter: Duration? = random.chance(0.4) ? random.duration(upTo: .seconds(200)) : nil
        switch random.below(20) {
        case 0..<7: return .updated(etag: random.element(of: [nil, "\"e1\"", "\"e2\""]))
        case 7..<11: return .notModified
        case 11: return .badRequest
        case 12: return .unauthorized(status: random.chance(0.5) ? 401 : 403)
        case 13..<15: return .rateLimited(retryAfter: retryAfter)
        default:
            let cause = random.element(of: [
                RefreshMachine.TransientCause.status(503), .timedOut, .network, .invalidBody, .tooLarge,
            ])
            return .transient(cause, retryAfter: random.chance(0.2) ? retryAfter : nil)
        }
    }

    /// Records which states the step reached.
    private mutating func note(_ step: RefreshMachine.Step) {
        coverage.insert("status \(machine.status)")
        if machine.pendingFetch { coverage.insert("owed fetch") }
        if step.streamJoined { coverage.insert("joined stream fetch") }
        if machine.values != nil { coverage.insert("cached values") }
        switch machine.lifecycle {
        case .invalidContext: coverage.insert("invalid context")
        case .closed: coverage.insert("closed")
        case .idle, .running: break
        }
        guard let session = machine.session else { return }
        if session.contextSwitch == .unresolved { coverage.insert("unresolved identify") }
        switch session.health {
        case .rejected(.key, _): coverage.insert("key refused")
        case .rejected(.context, _): coverage.insert("context rejected")
        case .failing(_?): coverage.insert("failing")
        case .ok, .failing(nil): break
        }
    }
}

/// The refresh machine's rules that its types leave open, checked after every step against
/// the effects returned and a model of what the engine has seen (the request it believes in
/// flight, the ids sent).
struct RefreshInvariants {
    /// The request the engine believes in flight: sent, not yet finished.
    var outstanding: UInt64?
    /// Every request id sent, in order.
    var sent: [UInt64] = []

    /// The broken rules after `step` (empty when every rule holds).
    mutating func check(
        _ input: RefreshMachine.Input, now: Duration, before: RefreshMachine, step: RefreshMachine.Step,
        after: RefreshMachine
    ) -> [String] {
        var broken: [String] = []
        checkClosed(before: before, step: step, after: after, into: &broken)
        checkRequests(input, now: now, before: before, step: step, after: after, into: &broken)
        checkStatus(now: now, after: after, into: &broken)
        checkSchedule(input, now: now, before: before, after: after, into: &broken)
        checkEvents(input, before: before, step: step, after: after, into: &broken)
        return broken
    }

    /// A closed machine emits nothing, waits on nothing, never wakes and can never become ready.
    private func checkClosed(
        before: RefreshMachine, step: RefreshMachine.Step, after: RefreshMachine, into broken: inout [String]
    ) {
        if before.isClosed, !step.effects.isEmpty || step.wait != .none {
            broken.append("a closed machine produced \(step.effects) / \(step.wait)")
        }
        if after.isClosed {
            if after.nextWake != nil { broken.append("a closed machine wakes at \(after.nextWake!)") }
            if after.canBecomeReady { broken.append("a closed machine can still become ready") }
            if after.inFlight != nil || after.pendingFetch {
                broken.append("a closed machine has a fetch in flight or owed")
            }
        }
    }

    /// One request in flight at most, every request finished once, ids increasing, requests for
    /// the current context, `If-None-Match` only for the values held for it, nothing sent
    /// against a `Retry-After` or a backoff, callers never left waiting on a finished request.
    private mutating func checkRequests(
        _ input: RefreshMachine.Input, now: Duration, before: RefreshMachine, step: RefreshMachine.Step,
        after: RefreshMachine, into broken: inout [String]
    ) {
        var sentNow: [RefreshMachine.Request] = []
        for (index, effect) in step.effects.enumerated() {
            switch effect {
            case .send(let request):
                if let outstanding { broken.append("sent #\(request.id) while #\(outstanding) is in flight") }
                if let last = sent.last, request.id <= last { broken.append("request id \(request.id) after \(last)") }
                outstanding = request.id
                sent.append(request.id)
                sentNow.append(request)
            case .cancel(let id):
                if id != outstanding { broken.append("cancelled #\(id), which is not in flight") }
                if index + 1 >= step.effects.count || step.effects[index + 1] != .finished(requestID: id) {
                    broken.append("cancelled #\(id) without finishing it (its refresh() callers would hang)")
                }
            case .finished(let id):
                if id != outstanding { broken.append("finished #\(id), which is not in flight") }
                outstanding = nil
            case .apply, .confirm:
                if !input.answers(before.inFlight?.request.id) {
                    broken.append("\(effect) without an answer to the request in flight")
                }
            default: break
            }
        }
        if after.inFlight?.request.id != outstanding {
            broken.append(
                "the machine has \(String(describing: after.inFlight?.request.id)) in flight, the engine \(String(describing: outstanding))"
            )
        }
        if case .request(let id) = step.wait, id != after.inFlight?.request.id {
            broken.append("the caller waits on #\(id), which is not in flight (nothing would resume it)")
        }
        for request in sentNow {
            if request.generation != after.generation || request.fingerprint != after.session?.fingerprint {
                broken.append("#\(request.id) is not for the current context")
            }
            if let etag = request.ifNoneMatch {
                if etag != after.values?.etag || after.values?.fingerprint != request.fingerprint {
                    broken.append("#\(request.id) carries If-None-Match \(etag) for values it does not hold")
                }
                if case .streamFetch(let fetch) = input, fetch.unconditional {
                    broken.append("an activated stream fetch carries If-None-Match")
                }
            }
            if let notBefore = after.retryNotBefore, now < notBefore {
                broken.append("#\(request.id) sent before the Retry-After ends (\(notBefore))")
            }
            let backoff = before.session?.health.retries.map { now < $0.until } ?? false
            let overrides: Bool
            switch input {
            case .identify, .keyChanged, .start: overrides = true
            case .timer: overrides = before.pendingFetch || request.trigger == .retry
            default: overrides = false
            }
            if backoff, !overrides { broken.append("#\(request.id) (\(request.trigger)) sent during a backoff") }
            if before.session?.health.isKeyRefused == true, request.trigger == .stream {
                broken.append("a stream fetch sent while the key is refused")
            }
        }
    }

    /// The status agrees with the state it is derived from.
    private func checkStatus(now: Duration, after: RefreshMachine, into broken: inout [String]) {
        let status = after.status
        let health = after.session?.health ?? .ok
        let contextSwitch = after.session?.contextSwitch ?? .settled
        let invalid: Bool
        switch after.lifecycle {
        case .invalidContext, .closed(.invalidContext): invalid = true
        default: invalid = false
        }
        func rule(_ holds: Bool, _ what: String) {
            if !holds { broken.append("status \(status): \(what) (health \(health), switch \(contextSwitch))") }
        }
        rule(
            (status == .fatal) == (health.isKeyRefused && !after.hasValues),
            "fatal iff the key is refused with nothing served")
        rule(contextSwitch != .reconciling || status == .reconciling, "an identify under way is reconciling")
        if !after.hasValues, health != .ok, contextSwitch != .reconciling {
            rule(status == .error || status == .fatal, "a failure with nothing served is error or fatal")
        }
        switch status {
        case .notReady:
            rule(!after.hasValues && health == .ok && !invalid, "notReady with values, a failure or an invalid context")
        case .stale: rule(after.hasValues, "stale without values")
        case .ready:
            let fresh = after.values?.confirmedAt.map { now - $0 < after.configuration.staleAfter } ?? false
            rule(after.isConfirmedForCurrentContext, "ready without values confirmed for the current context")
            if case .rejected = health { rule(false, "ready while the control plane refuses") }
            rule(health == .ok || fresh, "ready although failing since longer than staleAfter")
        case .reconciling: rule(contextSwitch != .settled, "reconciling with no identify unresolved")
        case .error: rule(health != .ok || invalid, "error without a failure or an invalid context")
        case .fatal: break
        }
        if let retries = health.retries { rule(retries.count >= 1, "a backoff of \(retries.count) failures") }
        if after.pendingFetch { rule(after.retryNotBefore != nil, "a fetch owed with no Retry-After") }
        rule(!health.isKeyRefused || !after.canBecomeReady, "a refused key can still become ready")
    }

    /// No wake in the past after a timer (the engine would spin), backoffs and deferrals that
    /// start now or later, a refused key that wakes only for an owed fetch.
    private func checkSchedule(
        _ input: RefreshMachine.Input, now: Duration, before: RefreshMachine, after: RefreshMachine,
        into broken: inout [String]
    ) {
        if input == .timer, let due = before.nextWake, due <= now, let wake = after.nextWake, wake <= now {
            broken.append("after the timer at \(now) the next wake is \(wake): the engine would spin")
        }
        if after.failures > before.failures {
            if after.failures != before.failures + 1 {
                broken.append("failures jumped \(before.failures) → \(after.failures)")
            }
            if let until = after.session?.health.retries?.until, until < now {
                broken.append("a backoff that ended before the failure (\(until))")
            }
        }
        if !before.pendingFetch, after.pendingFetch, (after.retryNotBefore ?? .zero) <= now {
            broken.append("a fetch owed although no Retry-After is in force")
        }
        if after.session?.health.isKeyRefused == true, after.nextWake != nil, !after.pendingFetch {
            broken.append("a refused key wakes at \(after.nextWake!) with nothing owed")
        }
        if after.generation < before.generation { broken.append("the generation went back") }
    }

    /// Events follow the status: `ready`/`stale` exactly when it becomes so, `contextChanged`
    /// only with the new context's values served, `identifyResolved(true)` only with values.
    private func checkEvents(
        _ input: RefreshMachine.Input, before: RefreshMachine, step: RefreshMachine.Step, after: RefreshMachine,
        into broken: inout [String]
    ) {
        let events = step.effects.compactMap { if case .emit(let event) = $0 { event } else { nil } }
        let becameReady = after.status == .ready && before.status != .ready
        let becameStale = after.status == .stale && before.status != .stale
        let open = !after.isClosed
        if events.contains(.ready) != (becameReady && open && !events.contains(.contextChanged)) {
            broken.append(
                "ready emitted \(events.contains(.ready)) while the status went \(before.status) → \(after.status)")
        }
        if events.contains(.stale) != (becameStale && open) {
            broken.append(
                "stale emitted \(events.contains(.stale)) while the status went \(before.status) → \(after.status)")
        }
        if events.contains(.contextChanged), !after.isConfirmedForCurrentContext {
            broken.append("contextChanged without the new context's values")
        }
        var identify = false
        if case .identify = input { identify = true }
        if events.contains(.reconciling) != (identify && !before.isClosed) {
            broken.append("reconciling emitted \(events.contains(.reconciling)) for \(input)")
        }
        let served = step.effects.contains { if case .apply = $0 { true } else { $0 == .confirm } }
        if served, !after.isConfirmedForCurrentContext || after.status != .ready {
            broken.append("values served but the status is \(after.status)")
        }
        for case .identifyResolved(let generation, let ok) in step.effects {
            if ok, !served { broken.append("identify \(generation) resolved true without values") }
            if generation != after.generation {
                broken.append("identify \(generation) resolved in generation \(after.generation)")
            }
        }
    }
}

extension RefreshMachine.Input {
    /// Whether this input is the answer to request `id`.
    fileprivate func answers(_ id: UInt64?) -> Bool {
        if case .response(let requestID, _) = self { return requestID == id }
        return false
    }
}
