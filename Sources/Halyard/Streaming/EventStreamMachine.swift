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

        /// Whether a fetch merged into this one announced a change (an event's or a connect's).
        private var absorbedChange = false

        init(reason: Reason, flagConfig: FlagConfigVersion? = nil) {
            self.reason = reason
            self.flagConfig = flagConfig
        }

        /// Whether the fetch must go without `If-None-Match`.
        var unconditional: Bool { reason == .activated || reason == .relearn }

        /// Whether this fetch stands for a change the plane may have made (an event, a
        /// (re)connect, or an activation or re-learn that absorbed one): a service refreshes its
        /// held contexts for it, while a bare re-learn only learns the advertisement again.
        var announcesChange: Bool { reason == .event || reason == .connected || absorbedChange }

        /// The one fetch that stands for this one (held, or pending after the one in flight)
        /// and `next`, asked for after it (SPEC §14, "Through a process's life"): an
        /// unconditional fetch stays unconditional; the `flagConfig*` values are the latest
        /// event's (an event that names none clears them: an older version would be stale),
        /// and a connect's, an activation's or a re-learn's fetch keeps them, since the change
        /// the event announced is not seen until a fetch carrying them is answered.
        func merged(with next: Fetch) -> Fetch {
            var merged = unconditional && !next.unconditional ? self : next
            merged.flagConfig = Self.flagConfig(flagConfig, then: next)
            // Kept only where the reason does not say it already (a fetch equals a fresh one of
            // its reason and values when nothing more was merged into it).
            let ownChange = merged.reason == .event || merged.reason == .connected
            merged.absorbedChange = !ownChange && (announcesChange || next.announcesChange)
            return merged
        }

        /// The `flagConfig*` values owed after `held` (those of an earlier fetch not yet
        /// answered) once `next` is asked for: `next`'s own when it is an event's (the latest
        /// event describes the configuration to fetch), else `held` unless `next` names some.
        /// A service's waves follow the same rule (``ServiceStreaming``).
        static func flagConfig(_ held: FlagConfigVersion?, then next: Fetch) -> FlagConfigVersion? {
            next.reason == .event ? next.flagConfig : next.flagConfig ?? held
        }
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
        /// The fetch the machine asked for could not go (a `Retry-After` or a backoff held it):
        /// nothing was sent. A held re-learn keeps the refused URL closed (SPEC §14).
        case fetchHeld
        case setActive(Bool)
        case timer
        /// The credential the stream is opened with changed (`setKey`, a stream on the control
        /// plane's origin): a connection opened or opening with the old one is replaced at once
        /// (the backoff state is kept); a stream waiting to reconnect keeps its time.
        case reauthenticate
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
        /// A log line and its metadata (``HalyardLogRecord/Key``; never carries the URL: the
        /// machine does not know it).
        case log(HalyardLogLevel, String, [String: String] = [:])
    }

    /// What following an advertised stream carries from one connection to the next (the
    /// phases that follow one: waiting, connecting, connected).
    struct Following: Sendable, Hashable {
        /// Consecutive failures since the stream last stayed connected for `resetAfter`.
        var failures = 0
        /// The last failure was a 429 or 503 carrying `Retry-After`: the reconnect it waits
        /// for is owed to the server, kept across suspension (``RetryAfterWait``).
        var refusedWithRetryAfter = false
        /// The stream failed (refused, non-2xx, garbage, closed repeatedly) and has not stayed
        /// connected for `resetAfter` since: polling runs at `pollInterval`.
        var degraded = false
        /// A `Retry-After` floor (its jittered instant) that the head of a connection abandoned
        /// for another URL carried after the switch: the next reconnect waits for it too.
        var retryFloor: Duration? = nil
        /// When `setActive(false)` made the client inactive; nil while it is active. The stream
        /// closes (``Phase/suspended(inactiveSince:degraded:)``) at this + the inactivity delay.
        var inactiveSince: Duration? = nil
        /// The re-learn fetch a refusal asked for was held back (nothing sent): the refused URL
        /// is not opened again until a re-learn goes or an answer advertises a stream; the
        /// reconnect time asks for the re-learn again instead.
        var relearnHeld = false
    }

    /// Where the machine is, with the state that exists only there: a suspended machine is
    /// inactive, only a connected one has a last byte, an idle one has no failures.
    enum Phase: Sendable, Hashable {
        /// No stream advertised (or withdrawn); `inactiveSince` as in ``Following``.
        /// `retryAfter`: a stream withdrawn while it waited out a `Retry-After` (another URL
        /// advertised): the plane's floor holds for the next stream too, so a stale or rotated
        /// advertisement never turns a 503's wait into an immediate reconnect.
        case idle(inactiveSince: Duration?, retryAfter: RetryAfterWait? = nil)
        /// Waiting to reconnect at `until`.
        case waiting(until: Duration, Following)
        /// Connect sent at `since`, no head yet.
        case connecting(since: Duration, Following)
        /// 2xx head arrived at `since`; `lastByteAt`: the last byte (data or comment) on the
        /// stream, from which the read-inactivity timeout runs.
        case connected(since: Duration, lastByteAt: Duration, Following)
        /// Closed by `setActive(false)` (at `inactiveSince`) after the inactivity delay;
        /// `degraded` as in ``Following``, kept for the reconnect that activation makes (its
        /// failures start again from 0). `retryAfter`: the stream was waiting out a
        /// `Retry-After` when it was suspended; activation keeps that wait and its failures.
        case suspended(inactiveSince: Duration, degraded: Bool, retryAfter: RetryAfterWait? = nil)
        /// Stopped for good.
        case stopped
    }

    /// A reconnect a `Retry-After` deferred, kept while the stream is suspended (SPEC §14: a
    /// stream answered 429 or 503 with `Retry-After` is not reconnected before it, also across
    /// `setActive(false)`/`setActive(true)`; docs/protocol.md, "Event streams").
    struct RetryAfterWait: Sendable, Hashable {
        /// The reconnect drawn when the refusal arrived (its jittered floor, or the backoff
        /// when that was later): activation before it waits until it.
        var until: Duration
        /// The failures counted then: activation does not reset them (the next refusal backs
        /// off from there).
        var failures: Int
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

    // What belongs to one phase lives in ``Phase``. The rest holds in every phase: the
    // configuration; the connection ids (they only grow, across phases); what the server said
    // (`retry:`, the inactivity delay: learned settings, kept across withdrawal and suspension);
    // the fetch slot and its rate limit (a fetch outlives reconnects and withdrawal); the
    // polling last asked for (what the driver was told); the counters.

    let configuration: Configuration
    private(set) var phase: Phase = .idle(inactiveSince: nil)
    /// The last connection id asked for (ids only grow: a late event of an earlier one is told apart).
    private(set) var connection: UInt64 = 0
    /// The last valid `retry:` the server sent (the reconnect backoff's base).
    private(set) var serverRetry: Duration?
    /// The advertisement's `inactivityDelaySec`.
    private(set) var serverInactivityDelay: Duration?
    /// The bulk re-fetch in flight and the one pending after it.
    private(set) var fetch: FetchSlot = .idle
    /// When the last event-triggered fetch was sent (the rate limit's origin).
    private(set) var lastEventFetchAt: Duration?
    /// Whether the fetch in flight is a re-learn (``Fetch/Reason/relearn``).
    private var relearnInFlight = false
    /// A re-learn a refusal asked for was held back (nothing sent) when the stream was
    /// suspended, or while it was: activation does not open the refused URL before a re-learn
    /// goes or an answer advertises a stream (SPEC §14; ``Following/relearnHeld``).
    private var relearnHeldWhileSuspended = false
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

    /// The followed stream's state across reconnects, in the phases that follow one.
    var following: Following? {
        switch phase {
        case .waiting(_, let following), .connecting(_, let following), .connected(_, _, let following): following
        case .idle, .suspended, .stopped: nil
        }
    }

    /// Consecutive failures (0 where no stream is followed).
    var failures: Int { following?.failures ?? 0 }

    /// Whether the stream failed and has not recovered (see ``Following/degraded``).
    var degraded: Bool {
        if case .suspended(_, let degraded, _) = phase { return degraded }
        return following?.degraded ?? false
    }

    /// When `setActive(false)` made the client inactive; nil while it is active (and stopped).
    var inactiveSince: Duration? {
        switch phase {
        case .idle(let since, _): since
        case .suspended(let since, _, _): since
        case .waiting, .connecting, .connected: following?.inactiveSince
        case .stopped: nil
        }
    }

    /// Whether the stream is healthy (connected, or reconnecting after one drop, and not failed).
    var isHealthy: Bool {
        switch phase {
        case .connected(_, _, let following): return !following.degraded
        case .waiting(_, let following), .connecting(_, let following):
            return !following.degraded && following.failures > 0
                && following.failures < max(configuration.closesBeforeFailed, 1)
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
        case .waiting(let until, _): consider(until)
        case .connecting(let since, _): consider(since + configuration.connectTimeout)
        case .connected(let since, let lastByteAt, let following):
            consider(lastByteAt + configuration.readInactivityTimeout)
            if following.failures > 0 || following.degraded { consider(since + configuration.resetAfter) }
        case .idle, .suspended, .stopped: break
        }
        if let inactiveSince = following?.inactiveSince { consider(inactiveSince + inactivityDelay) }
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
            relearnHeldWhileSuspended = false
            switch phase {
            case .idle(let inactiveSince, let retryAfter):
                if let inactiveSince {
                    phase = .suspended(inactiveSince: inactiveSince, degraded: false, retryAfter: retryAfter)
                } else if let retryAfter, now < retryAfter.until {
                    // A `Retry-After` the previous stream was given still holds.
                    let following = Following(
                        failures: retryAfter.failures, refusedWithRetryAfter: true, degraded: true)
                    phase = .waiting(until: retryAfter.until, following)
                } else {
                    connect(now: now, following: Following(), into: &actions)
                }
            case .waiting, .connecting, .connected:
                // Another stream (or the same, re-advertised): reconnect only when the driver
                // says it changed; it sends `.withdrawn` first in that case. Re-advertised, a
                // refused URL is learned again.
                updateFollowing { $0.relearnHeld = false }
            case .suspended, .stopped:
                break
            }
        case .withdrawn:
            var owed: RetryAfterWait?
            switch phase {
            case .waiting(let until, let following) where following.refusedWithRetryAfter && now < until:
                owed = RetryAfterWait(until: until, failures: following.failures)
            case .idle(_, let kept?) where now < kept.until, .suspended(_, _, let kept?) where now < kept.until:
                owed = kept
            case .connecting(_, let following), .connected(_, _, let following):
                if let floor = following.retryFloor, now < floor {
                    owed = RetryAfterWait(until: floor, failures: following.failures)
                }
            default: break
            }
            disconnect(into: &actions)
            relearnHeldWhileSuspended = false
            phase = .idle(inactiveSince: inactiveSince, retryAfter: owed)
        case .opened(let id, let status, let isEventStream, let retryAfter):
            if id != connection, Self.honoursRetryAfter(status), let retryAfter,
                let floor = RetryAfter.jitteredFloor(retryAfter, unit: random.unit())
            {
                // The head of a connection abandoned for another URL (a switch that raced its
                // answer): the plane's floor still binds the next reconnect.
                let until = now + floor
                switch phase {
                case .waiting(let wake, var following):
                    following.refusedWithRetryAfter = following.refusedWithRetryAfter || until > wake
                    phase = .waiting(until: max(wake, until), following)
                case .idle(let inactiveSince, let kept):
                    let failures = kept?.failures ?? 0
                    let latest = max(kept?.until ?? .zero, until)
                    let wait = RetryAfterWait(until: latest, failures: failures)
                    phase = .idle(inactiveSince: inactiveSince, retryAfter: wait)
                default:
                    updateFollowing { $0.retryFloor = max($0.retryFloor ?? .zero, until) }
                }
            }
            guard id == connection, case .connecting(_, let following) = phase else { break }
            if (200..<300).contains(status) && isEventStream {
                phase = .connected(since: now, lastByteAt: now, following)
                stats.connections += 1
                actions.append(.log(.debug, "event stream connected"))
                requestFetch(Fetch(reason: .connected), now: now, into: &actions)
            } else {
                let why = (200..<300).contains(status) ? "a \(status) that is not text/event-stream" : "\(status)"
                actions.append(.disconnect(connection: id))
                fail(
                    following, hard: true, message: "the event stream answered \(why)", now: now, random: &random,
                    retryAfter: Self.honoursRetryAfter(status) ? retryAfter : nil,
                    facts: [HalyardLogRecord.Key.httpStatus: "\(status)"], into: &actions)
                // The URL may have been rotated or its credential refused: one unconditional
                // bulk fetch per failing step learns the current advertisement (a new URL
                // arrives as `.withdrawn` + `.advertised`; the same one keeps this backoff).
                if Self.relearnStatuses.contains(status) {
                    requestFetch(Fetch(reason: .relearn), now: now, into: &actions)
                }
            }
        case .bytes(let id, let retry):
            guard id == connection else { break }
            if case .connected(let since, _, let following) = phase {
                phase = .connected(since: since, lastByteAt: now, following)
            }
            if let retry { serverRetry = retry }
        case .message(let id, let data):
            guard id == connection, case .connected(let since, _, let following) = phase else { break }
            phase = .connected(since: since, lastByteAt: now, following)
            guard let event = Self.route(data) else {
                stats.ignoredEvents += 1
                break
            }
            stats.refetchEvents += 1
            requestFetch(event, now: now, into: &actions)
        case .closed(let id, let reason):
            guard id == connection else { break }
            let following: Following
            let wasConnected: Bool
            switch phase {
            case .connecting(_, let current): (following, wasConnected) = (current, false)
            case .connected(_, _, let current): (following, wasConnected) = (current, true)
            default: return finish(actions)
            }
            switch reason {
            case .ended:
                fail(
                    following, hard: !wasConnected, message: "the event stream closed", now: now, random: &random,
                    into: &actions)
            case .transportError:
                fail(
                    following, hard: !wasConnected, message: "the event stream failed (network error or timeout)",
                    now: now, random: &random, into: &actions)
            case .garbage:
                actions.append(.disconnect(connection: id))
                fail(
                    following, hard: true, message: "the event stream sent an unparseable body", now: now,
                    random: &random, into: &actions)
            }
        case .fetchFinished:
            guard case .inFlight(let pending) = fetch else {
                preconditionFailure("a fetch finished that the machine did not ask for")
            }
            fetch = .idle
            relearnInFlight = false
            if let pending { requestFetch(pending, now: now, into: &actions) }
        case .fetchHeld:
            guard case .inFlight(let pending) = fetch else {
                preconditionFailure("a fetch was held that the machine did not ask for")
            }
            fetch = .idle
            if relearnInFlight {
                updateFollowing { $0.relearnHeld = true }
                if case .suspended = phase { relearnHeldWhileSuspended = true }
            }
            relearnInFlight = false
            if let pending { requestFetch(pending, now: now, into: &actions) }
        case .setActive(let isActive):
            guard isActive != (inactiveSince == nil) else { break }
            let since = isActive ? nil : now
            switch phase {
            case .idle(_, let retryAfter): phase = .idle(inactiveSince: since, retryAfter: retryAfter)
            case .suspended(_, let degraded, let retryAfter):
                // Only a client that follows a stream re-fetches on activation (polling-only
                // and `.none` clients keep their own triggers).
                requestFetch(Fetch(reason: .activated), now: now, into: &actions)
                if relearnHeldWhileSuspended {
                    // The refused URL's re-learn never went: the activation's fetch (unconditional)
                    // learns the advertisement first; the reconnect waits a step for it, and asks
                    // for a re-learn then if that fetch was held back too.
                    relearnHeldWhileSuspended = false
                    var following = Following(
                        failures: retryAfter?.failures ?? 0, refusedWithRetryAfter: retryAfter != nil,
                        degraded: degraded)
                    following.relearnHeld = true
                    let step = now + reconnectDelay(failures: following.failures, unit: random.unit())
                    phase = .waiting(until: max(step, retryAfter?.until ?? .zero), following)
                } else if let retryAfter {
                    // The server's `Retry-After` outlives the suspension: wait for it, and
                    // keep counting from the failures it came with.
                    let following = Following(
                        failures: retryAfter.failures, refusedWithRetryAfter: true, degraded: degraded)
                    if now < retryAfter.until {
                        phase = .waiting(until: retryAfter.until, following)
                    } else {
                        connect(now: now, following: following, into: &actions)
                    }
                } else {
                    connect(now: now, following: Following(degraded: degraded), into: &actions)
                }
            case .waiting, .connecting, .connected:
                updateFollowing { $0.inactiveSince = since }
                if isActive { requestFetch(Fetch(reason: .activated), now: now, into: &actions) }
            case .stopped: break
            }
        case .timer:
            if case .held(let held, let until) = fetch, now >= until { send(held, now: now, into: &actions) }
            if let following, let since = following.inactiveSince, now >= since + inactivityDelay {
                disconnect(into: &actions)
                var owed: RetryAfterWait?
                if case .waiting(let until, _) = phase, following.refusedWithRetryAfter {
                    owed = RetryAfterWait(until: until, failures: following.failures)
                }
                relearnHeldWhileSuspended = following.relearnHeld
                phase = .suspended(inactiveSince: since, degraded: following.degraded, retryAfter: owed)
                actions.append(.log(.debug, "event stream closed while inactive"))
                return finish(actions)
            }
            switch phase {
            case .waiting(let until, var following) where now >= until:
                if following.relearnHeld {
                    // The refused URL's re-learn has not gone yet: ask again, wait once more.
                    following.relearnHeld = false
                    phase = .waiting(
                        until: now + reconnectDelay(failures: following.failures, unit: random.unit()), following)
                    requestFetch(Fetch(reason: .relearn), now: now, into: &actions)
                } else {
                    connect(now: now, following: following, into: &actions)
                }
            case .connecting(let since, let following) where now >= since + configuration.connectTimeout:
                stats.inactivityCloses += 1
                actions.append(.disconnect(connection: connection))
                fail(
                    following, hard: true, message: "the event stream sent no response head in time", now: now,
                    random: &random, into: &actions)
            case .connected(_, let lastByteAt, let following)
            where now >= lastByteAt + configuration.readInactivityTimeout:
                stats.inactivityCloses += 1
                actions.append(.disconnect(connection: connection))
                fail(
                    following, hard: false, message: "the event stream was silent too long; reconnecting", now: now,
                    random: &random, into: &actions)
            default: break
            }
        case .reauthenticate:
            switch phase {
            case .connecting(_, let following), .connected(_, _, let following):
                actions.append(.disconnect(connection: connection))
                actions.append(.log(.debug, "event stream reconnecting with the new key"))
                connect(now: now, following: following, into: &actions)
            case .idle, .waiting, .suspended, .stopped:
                break
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
        if case .connected(let since, _, _) = phase, now >= since + configuration.resetAfter {
            updateFollowing {
                $0.failures = 0
                $0.degraded = false
            }
        }
    }

    /// Changes the followed stream's state in place (nothing in the phases that follow none).
    private mutating func updateFollowing(_ change: (inout Following) -> Void) {
        switch phase {
        case .waiting(let until, var following):
            change(&following)
            phase = .waiting(until: until, following)
        case .connecting(let since, var following):
            change(&following)
            phase = .connecting(since: since, following)
        case .connected(let since, let lastByteAt, var following):
            change(&following)
            phase = .connected(since: since, lastByteAt: lastByteAt, following)
        case .idle, .suspended, .stopped: break
        }
    }

    private mutating func connect(now: Duration, following: Following, into actions: inout [Action]) {
        connection &+= 1
        stats.connects += 1
        phase = .connecting(since: now, following)
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
        let ceiling = Backoff.doubling(from: base, steps: failures, cap: upper)
        let u = unit.isNaN ? 0 : min(max(unit, 0), 1)
        return ceiling / 2 + (ceiling / 2) * u
    }

    /// Statuses of a stream URL after which the advertisement is learned again.
    static let relearnStatuses: Set<Int> = [401, 403, 404, 410]
    /// The longest `Retry-After` a stream URL's answer is honoured for (SPEC §14: 1 h, the one
    /// constant ``RetryAfter/maxDelay``).
    static var maxRetryAfter: Duration { RetryAfter.maxDelay }

    /// Whether a stream URL's `status` carries a `Retry-After` to honour (429, 503).
    static func honoursRetryAfter(_ status: Int) -> Bool { status == 429 || status == 503 }

    /// Counts a failure and waits the jittered backoff before reconnecting, or the server's
    /// `retryAfter` when that is later: capped at 1 h and spread over its window
    /// (``RetryAfter/jitteredFloor(_:unit:)``), so a fleet given one date does not reconnect at
    /// one instant.
    private mutating func fail(
        _ following: Following, hard: Bool, message: String, now: Duration, random: inout SplitMix64,
        retryAfter: Duration? = nil, facts: [String: String] = [:], into actions: inout [Action]
    ) {
        var following = following
        stats.failures += 1
        following.failures += 1
        if hard || following.failures >= max(configuration.closesBeforeFailed, 1) { following.degraded = true }
        let backoff = reconnectDelay(failures: following.failures, unit: random.unit())
        let floor = retryAfter.flatMap { RetryAfter.jitteredFloor($0, unit: random.unit()) }
        following.refusedWithRetryAfter = floor != nil
        var delay = max(backoff, floor ?? .zero)
        if let kept = following.retryFloor, kept > now + delay {
            delay = kept - now
            following.refusedWithRetryAfter = true
        }
        following.retryFloor = nil
        phase = .waiting(until: now + delay, following)
        var facts = facts
        facts[HalyardLogRecord.Key.retryIn] = HalyardLogRecord.seconds(delay)
        actions.append(.log(following.degraded ? .warning : .info, message + "; reconnecting in \(delay)", facts))
    }

    private mutating func requestFetch(_ next: Fetch, now: Duration, into actions: inout [Action]) {
        switch fetch {
        case .inFlight(let pending):
            if pending != nil { stats.coalescedEvents += 1 }
            // The pending one carries the latest event's parameters; an unconditional fetch
            // stays so (``Fetch/merged(with:)``).
            fetch = .inFlight(pending: pending.map { $0.merged(with: next) } ?? next)
        case .held(let held, let until):
            stats.coalescedEvents += 1
            let merged = held.merged(with: next)
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
        relearnInFlight = next.reason == .relearn
        fetch = .inFlight(pending: nil)
        actions.append(.fetch(next))
    }
}
