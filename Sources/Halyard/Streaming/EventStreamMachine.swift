/// The event-stream policy of SPEC §14 (docs/protocol.md, "Event streams") as a pure value-type
/// state machine: connect, reconnect with jittered backoff, re-fetch after every (re)connect,
/// refetch coalescing (one fetch in flight, one pending), routing on `data`'s JSON `type`,
/// safety polling while healthy, the read-inactivity timeout, and `setActive`.
///
/// No threads, no clock, no I/O: every input carries `now` (monotonic) and a random source; the
/// output is a list of ``Action``s for the driver to perform outside its lock, plus ``nextWake``.
/// The machine never sees the stream's URL (the driver holds it), so nothing it logs can leak it.
struct EventStreamMachine: Sendable {
    struct Configuration: Sendable, Hashable {
        /// The client's normal polling interval (`.zero`: no polling at all).
        var pollInterval: Duration = .seconds(30)
        /// While the stream is healthy, polling runs at `max(pollInterval, safetyPollInterval)`.
        var safetyPollInterval: Duration = .seconds(300)
        /// Reconnect backoff: the first ceiling, doubling up to `maxReconnectDelay`.
        var initialReconnectDelay: Duration = .seconds(1)
        /// The largest reconnect delay.
        var maxReconnectDelay: Duration = .seconds(30)
        /// A stream connected this long resets the backoff (and the failed state).
        var resetAfter: Duration = .seconds(60)
        /// A stream with no byte (data or comment) for this long is closed and reopened.
        var readInactivityTimeout: Duration = .seconds(300)
        /// A connect whose response head has not arrived after this long counts as failed.
        var connectTimeout: Duration = .seconds(10)
        /// The client's `streamInactivityDelay` option (`nil`: the server's, else 120 s).
        var inactivityDelayOverride: Duration? = nil
        /// Consecutive short-lived closes after which the stream counts as failed.
        var closesBeforeFailed: Int = 2
        /// The least time between two event-triggered fetches (SPEC §14: at most 5 per second,
        /// the first at once); events within it are coalesced into the one held fetch.
        var minEventFetchSpacing: Duration = .milliseconds(200)
    }

    /// Why the stream ended.
    enum CloseReason: Sendable, Hashable {
        /// The server closed the body (cleanly) after a 2xx head.
        case ended
        /// A transport error (refused, reset, timed out) before or after the head.
        case transportError
        /// The body could not be parsed (a line or event over the size limit).
        case garbage
    }

    /// A bulk re-fetch the stream asks for.
    struct Fetch: Sendable, Hashable {
        enum Reason: String, Sendable, Hashable {
            /// After a (re)connect: without `flagConfig*` parameters, with `If-None-Match`.
            case connected
            /// A `refetchEvaluation` event: with its `flagConfig*` parameters.
            case event
            /// `setActive(true)`: without `If-None-Match` and without `flagConfig*` parameters.
            case activated
            /// The stream URL answered 401, 403, 404 or 410: without `If-None-Match`, so that the
            /// answer is a 200 carrying the current advertisement (SPEC §14, "Through a process's
            /// life").
            case relearn
        }
        var reason: Reason
        /// The flag configuration an event names (its `etag` and `lastModified` as received);
        /// `nil` for a (re)connect's or an activation's fetch, and for an event that names neither.
        var flagConfig: FlagConfigVersion? = nil

        /// Whether the fetch must go without `If-None-Match`.
        var unconditional: Bool { reason == .activated || reason == .relearn }
    }

    enum Input: Sendable, Hashable {
        /// The control plane advertises a stream (its `inactivityDelaySec`, when given). A new
        /// advertisement (another URL) reconnects at once.
        case advertised(inactivityDelay: Duration?)
        /// No stream is advertised any more: close it; polling returns to `pollInterval`.
        case withdrawn
        /// The response head of connection `connection` arrived; `retryAfter`: its `Retry-After`
        /// (a 429 or 503 head's; the driver parses and caps it).
        case opened(connection: UInt64, status: Int, isEventStream: Bool, retryAfter: Duration? = nil)
        /// Bytes arrived on `connection` (a comment counts), with the last valid `retry:`.
        case bytes(connection: UInt64, retry: Duration?)
        /// One dispatched event's `data` on `connection`.
        case message(connection: UInt64, data: String)
        /// `connection` ended.
        case closed(connection: UInt64, CloseReason)
        /// The fetch the machine asked for is over (whatever its result).
        case fetchFinished
        case setActive(Bool)
        case timer
        /// The owner closed: disconnect, no more actions.
        case stop
    }

    enum Action: Sendable, Hashable {
        /// Open connection `connection` (the driver knows the URL and headers).
        case connect(connection: UInt64)
        /// Close `connection` at once.
        case disconnect(connection: UInt64)
        /// Send this bulk re-fetch; feed ``Input/fetchFinished`` when it is over.
        case fetch(Fetch)
        /// Poll at this interval from now on (`.zero`: no polling).
        case pollInterval(Duration)
        /// A log line (never carries the URL: the machine does not know it).
        case log(HalyardLogLevel, String)
    }

    enum Phase: Sendable, Hashable {
        /// No stream advertised (or withdrawn).
        case idle
        /// Waiting to reconnect at this time.
        case waiting(until: Duration)
        /// Connect sent, no head yet.
        case connecting(since: Duration)
        /// 2xx head arrived.
        case connected(since: Duration)
        /// Closed by `setActive(false)` after the inactivity delay.
        case suspended
        /// Stopped for good.
        case stopped
    }

    /// The one bulk re-fetch the stream may have in flight, and the one it may owe after it.
    enum FetchSlot: Sendable, Hashable {
        /// No fetch in flight.
        case idle
        /// No fetch in flight; this event fetch waits for the rate limit until `until` (later
        /// events replace it: the latest parameters; an unconditional fetch stays so).
        case held(Fetch, until: Duration)
        /// A fetch is in flight; `pending` is sent when it is over (the latest event's
        /// parameters; an unconditional fetch stays unconditional).
        case inFlight(pending: Fetch?)
    }

    let configuration: Configuration
    private(set) var phase: Phase = .idle
    private(set) var connection: UInt64 = 0
    /// Consecutive failures since the stream last stayed connected for `resetAfter`.
    private(set) var failures = 0
    /// The stream failed (refused, non-2xx, garbage, closed repeatedly) and has not stayed
    /// connected for `resetAfter` since: polling runs at `pollInterval`.
    private(set) var degraded = false
    private(set) var serverRetry: Duration?
    private(set) var serverInactivityDelay: Duration?
    /// When `setActive(false)` made the client inactive; nil while it is active.
    private(set) var inactiveSince: Duration?
    private(set) var lastByteAt: Duration = .zero
    /// The bulk re-fetch in flight and the one pending after it.
    private(set) var fetch: FetchSlot = .idle
    /// When the last event-triggered fetch was sent (the rate limit's origin).
    private(set) var lastEventFetchAt: Duration?
    /// The polling interval last asked for (nil: none asked yet).
    private(set) var announcedPoll: Duration?
    /// The counters, and whether the stream is connected and healthy as of the last input
    /// (``EventStreamStats/advertised`` is the driver's: it knows which stream is followed).
    private(set) var stats = EventStreamStats()

    init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// The inactivity delay in force: the option, else the server's, else 120 s.
    var inactivityDelay: Duration {
        max(configuration.inactivityDelayOverride ?? serverInactivityDelay ?? .seconds(120), .zero)
    }

    /// Whether the stream is healthy (connected, or reconnecting after one drop, and not failed).
    var isHealthy: Bool {
        guard !degraded else { return false }
        switch phase {
        case .connected: return true
        case .waiting, .connecting: return failures > 0 && failures < max(configuration.closesBeforeFailed, 1)
        case .idle, .suspended, .stopped: return false
        }
    }

    /// The polling interval the client should use now.
    var desiredPollInterval: Duration {
        let normal = max(configuration.pollInterval, .zero)
        guard normal > .zero else { return .zero }
        // Suspended (inactive, stream closed on purpose): no faster than while streaming.
        if case .suspended = phase { return max(normal, configuration.safetyPollInterval) }
        return isHealthy ? max(normal, configuration.safetyPollInterval) : normal
    }

    /// When the driver should feed ``Input/timer`` next; nil for never.
    var nextWake: Duration? {
        var wake: Duration?
        func consider(_ t: Duration) { wake = wake.map { min($0, t) } ?? t }
        switch phase {
        case .waiting(let until): consider(until)
        case .connecting(let since): consider(since + configuration.connectTimeout)
        case .connected(let since):
            consider(lastByteAt + configuration.readInactivityTimeout)
            if failures > 0 || degraded { consider(since + configuration.resetAfter) }
        case .idle, .suspended, .stopped: break
        }
        if let inactiveSince {
            switch phase {
            case .waiting, .connecting, .connected: consider(inactiveSince + inactivityDelay)
            default: break
            }
        }
        if case .held(_, let until) = fetch { consider(until) }
        return wake
    }

    // MARK: - Inputs

    /// Feeds one input at `now` (monotonic); `random` draws the reconnect jitter. A stopped
    /// machine ignores everything. ``stats`` are current when it returns.
    mutating func event(_ input: Input, now: Duration, random: inout SplitMix64) -> [Action] {
        if case .stopped = phase { return [] }
        let actions = apply(input, now: now, random: &random)
        if case .connected = phase { stats.connected = true } else { stats.connected = false }
        stats.healthy = isHealthy
        return actions
    }

    /// One input's transitions and actions.
    private mutating func apply(_ input: Input, now: Duration, random: inout SplitMix64) -> [Action] {
        var actions: [Action] = []
        noteResetIfDue(now: now)
        switch input {
        case .advertised(let delay):
            serverInactivityDelay = delay
            switch phase {
            case .idle:
                if inactiveSince == nil { connect(now: now, into: &actions) } else { phase = .suspended }
            case .waiting, .connecting, .connected:
                // Another stream (or the same, re-advertised): reconnect only when the driver
                // says it changed; it sends `.withdrawn` first in that case.
                break
            case .suspended, .stopped:
                break
            }
        case .withdrawn:
            disconnect(into: &actions)
            phase = .idle
            failures = 0
            degraded = false
        case .opened(let id, let status, let isEventStream, let retryAfter):
            guard id == connection, case .connecting = phase else { break }
            if (200..<300).contains(status) && isEventStream {
                phase = .connected(since: now)
                lastByteAt = now
                stats.connections += 1
                actions.append(.log(.debug, "event stream connected"))
                requestFetch(Fetch(reason: .connected), now: now, into: &actions)
            } else {
                let why = (200..<300).contains(status) ? "a \(status) that is not text/event-stream" : "\(status)"
                actions.append(.disconnect(connection: id))
                fail(
                    hard: true, message: "the event stream answered \(why)", now: now, random: &random,
                    notBefore: Self.honoursRetryAfter(status) ? retryAfter.map { min($0, Self.maxRetryAfter) } : nil,
                    into: &actions)
                // The URL may have been rotated or its credential refused: one unconditional
                // bulk fetch per failing step learns the current advertisement (a new URL
                // arrives as `.withdrawn` + `.advertised`; the same one keeps this backoff).
                if Self.relearnStatuses.contains(status) {
                    requestFetch(Fetch(reason: .relearn), now: now, into: &actions)
                }
            }
        case .bytes(let id, let retry):
            guard id == connection else { break }
            lastByteAt = now
            if let retry { serverRetry = retry }
        case .message(let id, let data):
            guard id == connection, case .connected = phase else { break }
            lastByteAt = now
            guard let event = Self.route(data) else {
                stats.ignoredEvents += 1
                break
            }
            stats.refetchEvents += 1
            requestFetch(event, now: now, into: &actions)
        case .closed(let id, let reason):
            guard id == connection else { break }
            switch phase {
            case .connecting, .connected: break
            default: return finish(actions)
            }
            let wasConnected: Bool
            if case .connected = phase { wasConnected = true } else { wasConnected = false }
            switch reason {
            case .ended:
                fail(hard: !wasConnected, message: "the event stream closed", now: now, random: &random, into: &actions)
            case .transportError:
                fail(
                    hard: !wasConnected, message: "the event stream failed (network error or timeout)", now: now,
                    random: &random, into: &actions)
            case .garbage:
                actions.append(.disconnect(connection: id))
                fail(
                    hard: true, message: "the event stream sent an unparseable body", now: now, random: &random,
                    into: &actions)
            }
        case .fetchFinished:
            guard case .inFlight(let pending) = fetch else {
                preconditionFailure("a fetch finished that the machine did not ask for")
            }
            fetch = .idle
            if let pending { requestFetch(pending, now: now, into: &actions) }
        case .setActive(let isActive):
            guard isActive != (inactiveSince == nil) else { break }
            if isActive {
                inactiveSince = nil
                // Only a client that follows a stream re-fetches on activation (polling-only
                // and `.none` clients keep their own triggers).
                if phase != .idle { requestFetch(Fetch(reason: .activated), now: now, into: &actions) }
                if case .suspended = phase {
                    failures = 0
                    connect(now: now, into: &actions)
                }
            } else {
                inactiveSince = now
            }
        case .timer:
            if case .held(let held, let until) = fetch, now >= until { send(held, now: now, into: &actions) }
            if let since = inactiveSince, now >= since + inactivityDelay {
                switch phase {
                case .waiting, .connecting, .connected:
                    disconnect(into: &actions)
                    phase = .suspended
                    actions.append(.log(.debug, "event stream closed while inactive"))
                    return finish(actions)
                default: break
                }
            }
            switch phase {
            case .waiting(let until) where now >= until:
                connect(now: now, into: &actions)
            case .connecting(let since) where now >= since + configuration.connectTimeout:
                stats.inactivityCloses += 1
                actions.append(.disconnect(connection: connection))
                fail(
                    hard: true, message: "the event stream sent no response head in time", now: now, random: &random,
                    into: &actions)
            case .connected where now >= lastByteAt + configuration.readInactivityTimeout:
                stats.inactivityCloses += 1
                actions.append(.disconnect(connection: connection))
                fail(
                    hard: false, message: "the event stream was silent too long; reconnecting", now: now,
                    random: &random, into: &actions)
            default: break
            }
        case .stop:
            disconnect(into: &actions)
            phase = .stopped
            // A fetch in flight stays so (its `fetchFinished` is ignored); none follows it.
            if case .inFlight = fetch { fetch = .inFlight(pending: nil) }
            return actions
        }
        return finish(actions)
    }

    // MARK: - Internals

    private mutating func finish(_ actions: [Action]) -> [Action] {
        var actions = actions
        if case .stopped = phase { return actions }
        let poll = desiredPollInterval
        if poll != announcedPoll {
            announcedPoll = poll
            actions.append(.pollInterval(poll))
        }
        return actions
    }

    private mutating func noteResetIfDue(now: Duration) {
        if case .connected(let since) = phase, now >= since + configuration.resetAfter {
            failures = 0
            degraded = false
        }
    }

    private mutating func connect(now: Duration, into actions: inout [Action]) {
        connection &+= 1
        stats.connects += 1
        phase = .connecting(since: now)
        lastByteAt = now
        actions.append(.connect(connection: connection))
    }

    private mutating func disconnect(into actions: inout [Action]) {
        switch phase {
        case .connecting, .connected, .waiting: actions.append(.disconnect(connection: connection))
        default: break
        }
    }

    /// The delay before reconnect attempt after `failures` consecutive failures: the step
    /// doubles from the server's `retry:` (clamped to the bounds) or the initial delay, and the
    /// delay is drawn uniformly from the upper half of it, `[step/2, step]`, the first attempt
    /// included (SPEC §14: a fleet whose streams a server restart ended together must not come
    /// back at the same instant).
    func reconnectDelay(failures: Int, unit: Double) -> Duration {
        let lower = max(configuration.initialReconnectDelay, .milliseconds(1))
        let upper = max(configuration.maxReconnectDelay, lower)
        let base = min(max(serverRetry ?? lower, lower), upper)
        var ceiling = base
        var n = 1
        while n < failures && ceiling < upper {
            ceiling = ceiling * 2
            n += 1
        }
        ceiling = min(ceiling, upper)
        let u = unit.isNaN ? 0 : min(max(unit, 0), 1)
        return ceiling / 2 + (ceiling / 2) * u
    }

    /// Statuses of a stream URL after which the advertisement is learned again.
    static let relearnStatuses: Set<Int> = [401, 403, 404, 410]
    /// The longest `Retry-After` a stream URL's answer is honoured for (SPEC §14: 1 h).
    static let maxRetryAfter: Duration = .seconds(3_600)

    /// Whether a stream URL's `status` carries a `Retry-After` to honour (429, 503).
    static func honoursRetryAfter(_ status: Int) -> Bool { status == 429 || status == 503 }

    /// Counts a failure and waits the jittered backoff before reconnecting, or until
    /// `notBefore` from now when that is later (a `Retry-After`).
    private mutating func fail(
        hard: Bool, message: String, now: Duration, random: inout SplitMix64, notBefore: Duration? = nil,
        into actions: inout [Action]
    ) {
        stats.failures += 1
        failures += 1
        if hard || failures >= max(configuration.closesBeforeFailed, 1) { degraded = true }
        let delay = max(reconnectDelay(failures: failures, unit: random.unit()), notBefore ?? .zero)
        phase = .waiting(until: now + delay)
        actions.append(.log(degraded ? .warning : .info, message + "; reconnecting in \(delay)"))
    }

    private mutating func requestFetch(_ next: Fetch, now: Duration, into actions: inout [Action]) {
        switch fetch {
        case .inFlight(let pending):
            if pending != nil { stats.coalescedEvents += 1 }
            // The pending one carries the latest parameters; an unconditional fetch stays so.
            if pending?.unconditional == true && !next.unconditional { return }
            fetch = .inFlight(pending: next)
        case .held(let held, let until):
            stats.coalescedEvents += 1
            let merged = held.unconditional && !next.unconditional ? held : next
            // Only events wait for the rate limit; a connect's or an activation's fetch goes now
            // (and covers the held event's change).
            if next.reason == .event {
                fetch = .held(merged, until: until)
            } else {
                send(merged, now: now, into: &actions)
            }
        case .idle:
            if next.reason == .event, let last = lastEventFetchAt, now < last + configuration.minEventFetchSpacing {
                fetch = .held(next, until: last + configuration.minEventFetchSpacing)
            } else {
                send(next, now: now, into: &actions)
            }
        }
    }

    /// Sends `fetch` now (the slot must not be in flight).
    private mutating func send(_ next: Fetch, now: Duration, into actions: inout [Action]) {
        if next.reason == .event { lastEventFetchAt = now }
        fetch = .inFlight(pending: nil)
        actions.append(.fetch(next))
    }
}
