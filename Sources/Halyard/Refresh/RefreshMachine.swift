/// The refresh, backoff and status policy (docs/protocol.md) as a pure value-type state machine.
///
/// No threads, no clock, no I/O: every input carries `now` (monotonic) and a random source, and
/// the output is a list of ``Effect``s for the engine to perform (outside its lock) plus the
/// state queried through ``status`` and ``nextWake``. Tests drive it directly.
///
/// The state is a ``Lifecycle`` whose cases carry their data (a running ``Session`` holds the
/// one fetch slot, the ``Health`` and the ``ContextSwitch``), the ``HeldValues`` as one
/// optional, and the few numbers every state shares; the status is derived from them after each
/// input (`RefreshMachine+State.swift`). Transitions that cannot happen stop the process.
struct RefreshMachine: Sendable {
    struct Configuration: Sendable, Hashable {
        var pollInterval: Duration = .seconds(30)
        var pollJitter: Double = 0.1
        var backoff = Backoff(base: .seconds(1), maximum: .seconds(300))
        var staleAfter: Duration = .seconds(90)
        var refreshIfStaleThreshold: Duration = .seconds(15)
        /// Whether the owner follows an advertised event stream (`.automatic` over a streaming
        /// transport): until a 200 has shown the advertisement, a 304 is followed by one
        /// unconditional fetch, since a 304 carries none (SPEC §14: a warm start, whose first
        /// fetch carries the disk cache's ETag, must still learn the stream).
        var learnsAdvertisement = false
    }

    /// Whether a 200 has shown the control plane's stream advertisement (or its absence).
    enum Advertisement: Sendable, Hashable {
        /// No 200 yet: a 304 says nothing about the stream.
        case unknown
        /// A 200 arrived; the advertisement it carried (possibly none) went to the owner.
        case learned
    }

    /// Why a request is sent.
    enum Trigger: String, Sendable, Hashable {
        case start, identify, refresh, refreshIfStale, poll, retry
        /// Asked for by the event stream (docs/protocol.md, "Event streams").
        case stream
    }

    /// A fetch the engine must send: for the context of `generation`, with `If-None-Match`
    /// when `ifNoneMatch` is set.
    struct Request: Sendable, Hashable {
        var id: UInt64
        var generation: UInt64
        var fingerprint: String
        var ifNoneMatch: String?
        var trigger: Trigger
        /// The `flagConfigEtag` / `flagConfigLastModified` query parameters (event-triggered only).
        var flagConfig: FlagConfigVersion? = nil
    }

    /// Why a fetch failed without a usable HTTP answer, or with one that is treated like a 5xx.
    enum TransientCause: Sendable, Hashable {
        case status(Int)
        case timedOut
        case network
        case invalidBody
        case tooLarge
    }

    /// The classified result of one fetch.
    enum Outcome: Sendable, Hashable {
        /// 200 with a body that parsed; the engine holds the flags.
        case updated(etag: String?)
        /// 304.
        case notModified
        /// 400: the control plane rejected the context.
        case badRequest
        /// 401 or 403: the key was refused.
        case unauthorized(status: Int)
        /// 429, with the parsed `Retry-After` delay when there was one.
        case rateLimited(retryAfter: Duration?)
        /// 5xx, other statuses, timeouts, network errors, bad or oversized bodies.
        case transient(TransientCause, retryAfter: Duration?)
    }

    enum Input: Sendable, Hashable {
        /// Start with the initial context's fingerprint (`nil` when the context is invalid).
        case start(fingerprint: String?)
        case refresh
        case refreshIfStale
        /// A new, valid context (its fingerprint).
        case identify(fingerprint: String)
        case timer
        /// The key changed: lifts a 401/403 stop, forgets the ETag, fetches at once.
        case keyChanged
        case response(requestID: UInt64, Outcome)
        case close
        /// The owner serves values loaded from the on-device cache for the initial context
        /// (their entry's fingerprint and ETag): status `stale` until the control plane confirms
        /// them; `If-None-Match` carries the ETag only while the fingerprint is the current one.
        /// Ignored once other values are held, after an `identify`, or when closed.
        case cachedValues(fingerprint: String, etag: String?)
        /// The event stream asks for a fetch (see ``Step/streamJoined``).
        case streamFetch(EventStreamMachine.Fetch)
        /// The event stream changes the polling interval (safety net while it is healthy).
        case setPollInterval(Duration)
    }

    enum Effect: Sendable, Hashable {
        /// Send this request.
        case send(Request)
        /// Cancel this in-flight request (superseded or closed).
        case cancel(requestID: UInt64)
        /// Serve the flags the engine parsed from this request's response (a new snapshot).
        case apply(requestID: UInt64)
        /// The held values are confirmed (304): update the confirmation time only.
        case confirm
        /// Emit an event.
        case emit(ClientEvent)
        /// Log a message at this level with this metadata (``HalyardLogRecord/Key``; the machine
        /// decides the level, the engine adds the status, context and origin and writes).
        case log(HalyardLogLevel, String, [String: String] = [:])
        /// The request is over: resume the `refresh()` callers waiting on it.
        case finished(requestID: UInt64)
        /// Resume `identify` callers of this generation with this result.
        case identifyResolved(generation: UInt64, Bool)
        /// Resume every `identify` caller of a generation below this one with `false`.
        case supersede(below: UInt64)
    }

    /// What `refresh()`/`identify` callers should wait for.
    enum Wait: Sendable, Hashable {
        /// Nothing: no request was sent or joined (closed, rate limited, backing off, fresh).
        case none
        /// This request (new or already in flight).
        case request(UInt64)
    }

    /// What one input produced.
    struct Step: Sendable {
        /// What the engine must do, in order.
        var effects: [Effect] = []
        /// What the caller of the input waits for.
        var wait: Wait = .none
        /// The event stream's fetch joined the request already in flight: the stream asks again
        /// once it is over (the change it announces may postdate that request).
        var streamJoined = false
    }

    /// A request in flight.
    struct InFlight: Sendable, Hashable {
        /// The request.
        var request: Request
        /// When it was sent.
        var sentAt: Duration
        /// An unconditional stream fetch (a re-learn or an activation) joined this conditional
        /// request: a 304 to it carries no advertisement, so an unconditional one follows.
        var relearnAfter = false
    }

    let configuration: Configuration

    /// Where the machine is; the session it follows carries the fetch slot, the health and the
    /// context switch (see `RefreshMachine+State.swift`).
    private(set) var lifecycle: Lifecycle = .idle
    /// The values the owner serves (nil: none yet), with their ETag and confirmation.
    private(set) var values: HeldValues?
    /// Bumped by every `identify`; requests and `identify` callers carry it.
    private(set) var generation: UInt64 = 0
    /// The end of the latest `Retry-After` received (its jittered floor: somewhere in
    /// `[RA, RA + max(1 s, RA / 10)]`): no request goes before it, whatever its trigger or
    /// context (a superseded request's 429 binds too).
    private(set) var retryNotBefore: Duration?
    /// The polling interval in force (the configuration's, until the event stream changes it).
    private(set) var pollInterval: Duration
    /// Whether the stream advertisement is known (``Configuration/learnsAdvertisement``).
    private(set) var advertisement: Advertisement = .unknown
    /// A re-learn or activation fetch the stream asked for could not go (a backoff or a
    /// `Retry-After` was in force): the next request goes without `If-None-Match`, so its answer
    /// carries the advertisement a refused stream URL needs (SPEC §14).
    private(set) var unconditionalOwed = false
    /// The `flagConfig*` values of a stream fetch that could not go (a backoff or a
    /// `Retry-After` was in force, or a fetch was owed already): the next request carries them
    /// (SPEC §14: an event's values survive being merged). Merged as the stream merges its
    /// fetches (``EventStreamMachine/Fetch/flagConfig(_:then:)``: a later event's replace them,
    /// a connect's, an activation's or a re-learn's keep them), as a service's refetch mark
    /// keeps an event's values (``ContextFlight/markRefetch(_:event:)``). Forgotten when the key
    /// changes: they name a version of the replaced key's environment.
    private(set) var owedFlagConfig: FlagConfigVersion?
    /// The id of the last request sent.
    private var lastRequestID: UInt64 = 0
    /// The id of the last request sent with a key `setKey` has replaced: an answer to it is
    /// ignored whatever its status (a 429 included: the old key's limits bind nothing now).
    private var lastOldKeyRequestID: UInt64 = 0
    /// The current status, as of the last input (derived from the state at that `now`).
    private(set) var status: ClientStatus = .notReady

    init(configuration: Configuration) {
        self.configuration = configuration
        pollInterval = configuration.pollInterval
    }

    // MARK: - Derived state

    /// The session followed, open or closed (nil before a valid context).
    var session: Session? {
        switch lifecycle {
        case .running(let session), .closed(.running(let session)): session
        case .idle, .invalidContext, .closed: nil
        }
    }

    /// Whether ``Input/close`` was fed.
    var isClosed: Bool {
        if case .closed = lifecycle { return true }
        return false
    }

    /// The request in flight, if any.
    var inFlight: InFlight? {
        guard case .running(let session) = lifecycle, case .inFlight(let inFlight) = session.fetch else { return nil }
        return inFlight
    }

    /// Whether a fetch a `Retry-After` deferred is owed (sent as soon as it ends).
    var pendingFetch: Bool {
        guard case .running(let session) = lifecycle, case .owed = session.fetch else { return false }
        return true
    }

    /// Transient failures in a row (the backoff's count).
    var failures: Int { session?.health.retries?.count ?? 0 }

    /// Whether values are served.
    var hasValues: Bool { values != nil }

    /// The fingerprint of the context the served values are for.
    var valuesFingerprint: String? { values?.fingerprint }

    /// The ETag of the served values.
    var etag: String? { values?.etag }

    /// Whether values confirmed by the control plane for the current context are served.
    var isConfirmedForCurrentContext: Bool {
        guard let session, let values, values.confirmedAt != nil else { return false }
        return values.fingerprint == session.fingerprint && session.contextSwitch == .settled
    }

    /// Whether waiting longer can still make ``isConfirmedForCurrentContext`` true.
    var canBecomeReady: Bool {
        switch lifecycle {
        case .idle: true
        case .running(let session): !session.health.isKeyRefused
        case .invalidContext, .closed: false
        }
    }

    /// When the engine should feed ``Input/timer`` next; `nil` for never.
    var nextWake: Duration? {
        guard case .running(let session) = lifecycle else { return nil }
        let notBefore = retryNotBefore ?? .zero
        var wake: Duration?
        switch session.fetch {
        case .inFlight:
            return nil
        case .owed:
            wake = notBefore
        case .idle:
            if session.health.isKeyRefused { return nil }
            if let retries = session.health.retries {
                wake = max(retries.until, notBefore)
            } else if pollInterval > .zero, let poll = session.poll?.next {
                wake = max(poll, notBefore)
            }
        }
        if status == .ready, session.health != .ok, let confirmed = values?.confirmedAt {
            let staleAt = confirmed + configuration.staleAfter
            wake = wake.map { min($0, staleAt) } ?? staleAt
        }
        return wake
    }

    /// The status the state describes at `now`.
    private func derivedStatus(of lifecycle: Lifecycle, now: Duration) -> ClientStatus {
        switch lifecycle {
        case .idle:
            // Values held before the start came from the cache: never confirmed yet.
            return values == nil ? .notReady : .stale
        case .invalidContext:
            return .error
        case .running(let session):
            return session.status(values: values, now: now, staleAfter: configuration.staleAfter)
        case .closed(let last):
            return derivedStatus(of: last, now: now)
        }
    }

    /// The session of a running machine, read and updated in place (only while running).
    private var running: Session {
        get {
            guard case .running(let session) = lifecycle else { preconditionFailure("the machine is not running") }
            return session
        }
        set {
            guard case .running = lifecycle else { preconditionFailure("the machine is not running") }
            lifecycle = .running(newValue)
        }
    }

    // MARK: - Inputs

    /// Feeds one input at `now` (monotonic); `random` draws the poll jitter and backoff delays.
    mutating func event(_ input: Input, now: Duration, random: inout SplitMix64) -> Step {
        var step = Step()
        let before = status
        switch input {
        case .start(let fingerprint):
            guard case .idle = lifecycle else { break }
            if let fingerprint {
                lifecycle = .running(Session(fingerprint: fingerprint, contextSwitch: .settled))
                step.wait = send(.start, now: now, into: &step, ignoreBackoff: true)
            } else {
                lifecycle = .invalidContext
                let message = "the initial context is invalid"
                step.effects.append(.log(.warning, message))
                step.effects.append(.emit(.error(code: .invalidContext, message: message)))
            }
        case .refresh:
            guard case .running = lifecycle else { break }
            step.wait = send(.refresh, now: now, into: &step, ignoreBackoff: false)
        case .refreshIfStale:
            guard case .running(let session) = lifecycle else { break }
            if let values, let confirmed = values.confirmedAt, values.fingerprint == session.fingerprint,
                now - confirmed < configuration.refreshIfStaleThreshold
            {
                if case .inFlight(let inFlight) = session.fetch { step.wait = .request(inFlight.request.id) }
                break
            }
            step.wait = send(.refreshIfStale, now: now, into: &step, ignoreBackoff: false)
        case .identify(let fingerprint):
            guard !isClosed else { break }
            generation &+= 1
            step.effects.append(.supersede(below: generation))
            cancelInFlight(into: &step)
            // A new context starts healthy, with nothing in flight or owed (the identify's own
            // fetch is sent or owed below); the poll schedule carries over.
            lifecycle = .running(Session(fingerprint: fingerprint, contextSwitch: .reconciling, poll: session?.poll))
            step.effects.append(.emit(.reconciling))
            step.wait = send(.identify, now: now, into: &step, ignoreBackoff: true)
        case .keyChanged:
            guard case .running = lifecycle else { break }
            // Lifts a refusal and resets the backoff; a failure stays the last outcome until the
            // new key's fetch is answered.
            running.health = running.health == .ok ? .ok : .failing(nil)
            values?.etag = nil
            owedFlagConfig = nil
            cancelInFlight(into: &step)
            lastOldKeyRequestID = lastRequestID
            step.wait = send(.refresh, now: now, into: &step, ignoreBackoff: true)
        case .timer:
            guard let wake = nextWake, wake <= now, case .running(let session) = lifecycle else { break }
            switch session.fetch {
            case .inFlight:
                preconditionFailure("a wake while a request is in flight")
            case .owed(let trigger):
                _ = send(trigger, now: now, into: &step, ignoreBackoff: true)
            case .idle:
                if session.health.retries != nil {
                    _ = send(.retry, now: now, into: &step, ignoreBackoff: false)
                } else if let poll = session.poll?.next, poll <= now {
                    _ = send(.poll, now: now, into: &step, ignoreBackoff: false)
                }
            // Otherwise the wake was the stale check: only the status changes.
            }
        case .response(let requestID, let outcome):
            if let inFlight, inFlight.request.id == requestID {
                handle(
                    outcome, for: inFlight.request, relearnAfter: inFlight.relearnAfter, now: now, random: &random,
                    into: &step)
            } else if case .rateLimited(let retryAfter?) = outcome, requestID > lastOldKeyRequestID {
                // A superseded request's 429 still binds us (not one sent with a replaced key).
                honour(retryAfter, now: now, random: &random)
            }
        case .cachedValues(let fingerprint, let cachedETag):
            guard !isClosed, values == nil, generation == 0 else { break }
            values = HeldValues(fingerprint: fingerprint, etag: cachedETag, confirmedAt: nil)
        case .streamFetch(let fetch):
            // Never while the key is refused; never past a `Retry-After` or backoff either (the
            // stream never makes a failing control plane retry faster); `activated` fetches go
            // without `If-None-Match`.
            guard case .running(let session) = lifecycle, !session.health.isKeyRefused else { break }
            step.wait = send(.stream, now: now, into: &step, ignoreBackoff: false, stream: fetch)
        case .setPollInterval(let interval):
            changePollInterval(to: interval, random: &random)
        case .close:
            guard !isClosed else { break }
            cancelInFlight(into: &step)
            step.effects.append(.supersede(below: generation &+ 1))
            if case .running(var session) = lifecycle {
                session.fetch = .idle
                if session.contextSwitch == .reconciling { session.contextSwitch = .unresolved }
                lifecycle = .closed(.running(session))
            } else {
                lifecycle = .closed(lifecycle)
            }
        }
        status = derivedStatus(of: lifecycle, now: now)
        if status != before && !isClosed {
            switch status {
            case .ready where !step.effects.contains(.emit(.contextChanged)): step.effects.append(.emit(.ready))
            case .stale: step.effects.append(.emit(.stale))
            default: break
            }
        }
        return step
    }

    // MARK: - Internals

    /// Polls at `interval` from now on (`.zero`: no polling). The next poll is re-drawn from the
    /// last success so that lengthening it (a healthy stream) or shortening it (a failed one)
    /// takes effect at once rather than after the poll already scheduled.
    private mutating func changePollInterval(to interval: Duration, random: inout SplitMix64) {
        let interval = max(interval, .zero)
        guard interval != pollInterval else { return }
        pollInterval = interval
        guard case .running(let session) = lifecycle, let base = session.poll?.base, session.health.retries == nil,
            !session.health.isKeyRefused
        else { return }
        let next = jitteredPoll(random: &random).map { base + $0 }
        running.poll?.next = next
    }

    /// Cancels the request in flight, if any, and releases its `refresh()` callers (an owed
    /// fetch stays owed).
    private mutating func cancelInFlight(into step: inout Step) {
        guard case .running(let session) = lifecycle, case .inFlight(let inFlight) = session.fetch else { return }
        step.effects.append(.cancel(requestID: inFlight.request.id))
        step.effects.append(.finished(requestID: inFlight.request.id))
        running.fetch = .idle
    }

    /// Sends a request for the current context (running only), joins the one in flight, owes
    /// it while a `Retry-After` is in force, or drops it during a backoff `ignoreBackoff` does
    /// not override (a retry never waits for its own backoff).
    private mutating func send(
        _ trigger: Trigger, now: Duration, into step: inout Step, ignoreBackoff: Bool,
        stream: EventStreamMachine.Fetch? = nil
    ) -> Wait {
        let session = running
        switch session.fetch {
        case .inFlight(let inFlight):
            guard inFlight.request.generation == generation else {
                preconditionFailure("a request of a superseded context is still in flight")
            }
            step.streamJoined = stream != nil
            if stream?.unconditional == true, inFlight.request.ifNoneMatch != nil {
                // Its 304 would not show the advertisement the stream needs (a refused URL's
                // re-learn): an unconditional fetch follows it.
                var joined = inFlight
                joined.relearnAfter = true
                running.fetch = .inFlight(joined)
            }
            return .request(inFlight.request.id)
        case .owed:
            if let notBefore = retryNotBefore, now < notBefore {
                // Still owed; an identify or start takes over its reason.
                if trigger == .identify || trigger == .start { running.fetch = .owed(trigger) }
                holdBack(stream)
                return .none
            }
        case .idle:
            if let notBefore = retryNotBefore, now < notBefore {
                running.fetch = .owed(trigger)
                holdBack(stream)
                return .none
            }
        }
        if !ignoreBackoff, trigger != .retry, let until = session.health.retries?.until, now < until {
            holdBack(stream)
            return .none
        }
        lastRequestID &+= 1
        let conditional =
            stream?.unconditional != true && !unconditionalOwed && values?.fingerprint == session.fingerprint
        unconditionalOwed = false
        let flagConfig = stream.map { EventStreamMachine.Fetch.flagConfig(owedFlagConfig, then: $0) } ?? owedFlagConfig
        owedFlagConfig = nil
        let request = Request(
            id: lastRequestID,
            generation: generation,
            fingerprint: session.fingerprint,
            ifNoneMatch: conditional ? values?.etag : nil,
            trigger: trigger,
            flagConfig: flagConfig
        )
        running.fetch = .inFlight(InFlight(request: request, sentAt: now))
        step.effects.append(.send(request))
        return .request(request.id)
    }

    /// A stream fetch that cannot go now: what it asks of the next request is kept (an
    /// unconditional fetch, its `flagConfig*` values).
    private mutating func holdBack(_ stream: EventStreamMachine.Fetch?) {
        guard let stream else { return }
        if stream.unconditional { unconditionalOwed = true }
        owedFlagConfig = EventStreamMachine.Fetch.flagConfig(owedFlagConfig, then: stream)
    }

    /// The next poll delay: the interval in force with ±`pollJitter` (nil when polling is off).
    private func jitteredPoll(random: inout SplitMix64) -> Duration? {
        let interval = pollInterval
        guard interval > .zero else { return nil }
        let jitter = min(max(configuration.pollJitter, 0), 1)
        let factor = 1 + jitter * (2 * random.unit() - 1)
        return interval * factor
    }

    /// The answer to the request in flight.
    private mutating func handle(
        _ outcome: Outcome, for request: Request, relearnAfter: Bool = false, now: Duration, random: inout SplitMix64,
        into step: inout Step
    ) {
        running.fetch = .idle
        switch outcome {
        case .updated(let newETag):
            step.effects.append(.apply(requestID: request.id))
            advertisement = .learned
            succeed(request: request, etag: newETag, now: now, random: &random, into: &step)
        case .notModified:
            if request.ifNoneMatch != nil, let values, values.fingerprint == request.fingerprint {
                step.effects.append(.confirm)
                succeed(request: request, etag: values.etag, now: now, random: &random, into: &step)
                if configuration.learnsAdvertisement, advertisement == .unknown || relearnAfter {
                    // The values are confirmed; the stream is not known yet: ask once more,
                    // without If-None-Match, for the 200 that carries the advertisement (after
                    // this request is over, so its callers go with the 304's confirmation).
                    step.effects.append(.finished(requestID: request.id))
                    _ = send(
                        .stream, now: now, into: &step, ignoreBackoff: true,
                        stream: EventStreamMachine.Fetch(reason: .relearn))
                    return
                }
            } else {
                // A 304 we did not ask for confirms nothing: treat as a bad answer (the request
                // is over all the same: its callers are released below).
                fail(
                    .transient(.invalidBody, retryAfter: nil), request: request, now: now, random: &random, into: &step)
            }
        default:
            fail(outcome, request: request, now: now, random: &random, into: &step)
        }
        step.effects.append(.finished(requestID: request.id))
    }

    /// A 200 or a solicited 304: the values are confirmed for the request's context.
    private mutating func succeed(
        request: Request, etag: String?, now: Duration, random: inout SplitMix64, into step: inout Step
    ) {
        values = HeldValues(fingerprint: request.fingerprint, etag: etag, confirmedAt: now)
        var session = running
        session.health = .ok
        session.poll = PollSchedule(base: now, next: jitteredPoll(random: &random).map { now + $0 })
        let switched = session.contextSwitch != .settled
        session.contextSwitch = .settled
        running = session
        if switched { step.effects.append(.emit(.contextChanged)) }
        step.effects.append(.identifyResolved(generation: request.generation, true))
    }

    /// A failed fetch: a refusal (400, 401/403) or a transient failure (backoff, `Retry-After`).
    private mutating func fail(
        _ outcome: Outcome, request: Request, now: Duration, random: inout SplitMix64, into step: inout Step
    ) {
        var session = running
        if session.contextSwitch == .reconciling { session.contextSwitch = .unresolved }
        let code: FlagErrorCode
        let message: String
        var level = HalyardLogLevel.warning
        var facts: [String: String] = [:]
        switch outcome {
        case .badRequest:
            // A refused key stays refused: only a success, a key change or an identify lifts it.
            session.health = .rejected(session.health.isKeyRefused ? .key : .context, nil)
            session.poll = PollSchedule(base: now, next: jitteredPoll(random: &random).map { now + $0 })
            code = .invalidContext
            message = "the control plane rejected the context (400)"
            facts[HalyardLogRecord.Key.httpStatus] = "400"
        case .unauthorized(let statusCode):
            session.health = .rejected(.key, nil)
            session.poll?.next = nil
            code = values == nil ? .providerFatal : .general
            level = .error
            message = "the control plane refused the key (\(statusCode)); background refresh stopped"
            facts[HalyardLogRecord.Key.httpStatus] = "\(statusCode)"
        case .rateLimited(let retryAfter):
            session.health = session.health.failedAgain(nextRetries(after: session.health, now: now, random: &random))
            honour(retryAfter, now: now, random: &random)
            code = .general
            message = "rate limited (429)" + (retryAfter.map { "; retry after \($0)" } ?? "")
            facts[HalyardLogRecord.Key.httpStatus] = "429"
        case .transient(let cause, let retryAfter):
            session.health = session.health.failedAgain(nextRetries(after: session.health, now: now, random: &random))
            honour(retryAfter, now: now, random: &random)
            code = .general
            message =
                switch cause {
                case .status(let s): "the control plane answered \(s)"
                case .timedOut: "the request timed out"
                case .network: "network error"
                case .invalidBody: "the response body could not be parsed"
                case .tooLarge: "the response body exceeded the size limit"
                }
            switch cause {
            case .status(let s): facts[HalyardLogRecord.Key.httpStatus] = "\(s)"
            case .timedOut: facts[HalyardLogRecord.Key.reason] = "timeout"
            case .network: facts[HalyardLogRecord.Key.reason] = "network"
            case .invalidBody: facts[HalyardLogRecord.Key.reason] = "invalid_body"
            case .tooLarge: facts[HalyardLogRecord.Key.reason] = "too_large"
            }
        case .updated, .notModified:
            preconditionFailure("a success handled as a failure")
        }
        running = session
        step.effects.append(.log(level, message, facts))
        step.effects.append(.emit(.error(code: code, message: message)))
        step.effects.append(.identifyResolved(generation: request.generation, false))
    }

    /// Holds every request until the server's `Retry-After` has passed: capped at 1 h and
    /// spread over its window (``RetryAfter/jitteredFloor(_:unit:)``), so clients given one
    /// HTTP-date do not all come back at that instant. Zero or a past date holds nothing (the
    /// backoff alone applies); a later floor already in force stays.
    private mutating func honour(_ retryAfter: Duration?, now: Duration, random: inout SplitMix64) {
        guard let retryAfter, retryAfter > .zero,
            let floor = RetryAfter.jitteredFloor(retryAfter, unit: random.unit())
        else { return }
        retryNotBefore = max(retryNotBefore ?? .zero, now + floor)
    }

    /// One more transient failure: its count and the end of its jittered backoff.
    private func nextRetries(after health: Health, now: Duration, random: inout SplitMix64) -> Retries {
        let count = (health.retries?.count ?? 0) + 1
        return Retries(count: count, until: now + configuration.backoff.delay(failures: count, unit: random.unit()))
    }
}
