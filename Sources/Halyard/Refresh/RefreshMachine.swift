/// The refresh, backoff and status policy (docs/protocol.md) as a pure value-type state machine.
///
/// No threads, no clock, no I/O: every input carries `now` (monotonic) and a random source, and
/// the output is a list of ``Effect``s for the engine to perform (outside its lock) plus the
/// state queried through ``status`` and ``nextWake``. Tests drive it directly.
struct RefreshMachine: Sendable {
    struct Configuration: Sendable, Hashable {
        var pollInterval: Duration = .seconds(30)
        var pollJitter: Double = 0.1
        var backoff = Backoff(base: .seconds(1), maximum: .seconds(300))
        var staleAfter: Duration = .seconds(90)
        var refreshIfStaleThreshold: Duration = .seconds(15)
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
        /// `flagConfigEtag` / `flagConfigLastModified` query parameters (event-triggered only).
        var flagConfigEtag: String? = nil
        var flagConfigLastModified: String? = nil
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
        /// The event stream asks for a fetch (see `RefreshMachine+Stream.swift`).
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
        /// Log a message at this level (the machine decides the level, the engine only writes).
        case log(HalyardLogLevel, String)
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

    struct Step: Sendable {
        var effects: [Effect] = []
        var wait: Wait = .none
    }

    struct InFlight: Sendable, Hashable {
        var request: Request
        var sentAt: Duration
    }

    let configuration: Configuration

    // Context.
    private(set) var generation: UInt64 = 0
    private(set) var currentFingerprint: String?
    private(set) var contextInvalid = false
    // Values.
    private(set) var hasValues = false
    private(set) var valuesFingerprint: String?
    private(set) var valuesConfirmed = false
    private(set) var lastConfirmation: Duration?
    private(set) var etag: String?
    private(set) var etagFingerprint: String?
    // Requests.
    private(set) var inFlight: InFlight?
    private var nextRequestID: UInt64 = 0
    private(set) var started = false
    private(set) var closed = false
    /// A fetch for the current context is owed: a start, identify, key change or refresh that
    /// a `Retry-After` deferred. Sent (ignoring backoff) as soon as the `Retry-After` ends.
    private(set) var pendingFetch = false
    /// Why the owed fetch is owed (the trigger it is sent with).
    private var owedTrigger: Trigger = .identify
    // Failures.
    private(set) var failures = 0
    private(set) var backoffUntil: Duration?
    private(set) var retryNotBefore: Duration?
    private(set) var nextPollAt: Duration?
    /// The polling interval in force (the configuration's, until the event stream changes it).
    private(set) var pollInterval: Duration
    /// When the last poll delay was drawn from (the last success or 400).
    private(set) var pollBase: Duration?
    /// The stream's fetch was joined to a request already in flight (the stream asks again).
    private(set) var streamJoinedInFlight = false
    private(set) var authBlocked = false
    /// A 400/401/403 for the current context and key that no success has cleared yet.
    private(set) var hardError = false
    /// An identify whose values are not served yet.
    private(set) var contextChangePending = false
    /// An identify is in flight (or owed): status `reconciling`.
    private(set) var reconciling = false
    /// A fetch failed since the last success (start failure included).
    private(set) var lastFetchFailed = false

    /// The current status, as of the last input.
    private(set) var status: ClientStatus = .notReady

    init(configuration: Configuration) {
        self.configuration = configuration
        pollInterval = configuration.pollInterval
    }

    /// Whether values confirmed by the control plane for the current context are served.
    var isConfirmedForCurrentContext: Bool {
        hasValues && valuesConfirmed && currentFingerprint != nil && valuesFingerprint == currentFingerprint
            && !contextChangePending
    }

    /// Whether waiting longer can still make ``isConfirmedForCurrentContext`` true.
    var canBecomeReady: Bool {
        !closed && !authBlocked && !contextInvalid
    }

    /// When the engine should feed ``Input/timer`` next; `nil` for never.
    var nextWake: Duration? {
        if closed || !started || inFlight != nil || contextInvalid || currentFingerprint == nil { return nil }
        var wake: Duration?
        if pendingFetch {
            wake = retryNotBefore ?? .zero
        } else if authBlocked {
            return nil
        } else if failures > 0 {
            wake = max(backoffUntil ?? .zero, retryNotBefore ?? .zero)
        } else if pollInterval > .zero, let poll = nextPollAt {
            wake = max(poll, retryNotBefore ?? .zero)
        }
        if status == .ready, lastFetchFailed, let confirmed = lastConfirmation {
            let staleAt = confirmed + configuration.staleAfter
            wake = wake.map { min($0, staleAt) } ?? staleAt
        }
        return wake
    }

    // MARK: - Inputs

    mutating func event(_ input: Input, now: Duration, random: inout SplitMix64) -> Step {
        var step = Step()
        let before = status
        switch input {
        case .start(let fingerprint):
            guard !started, !closed else { break }
            started = true
            if let fingerprint {
                currentFingerprint = fingerprint
                step.wait = send(.start, now: now, into: &step, ignoreBackoff: true)
            } else {
                contextInvalid = true
                let message = "the initial context is invalid"
                step.effects.append(.log(.warning, message))
                step.effects.append(.emit(.error(code: .invalidContext, message: message)))
            }
        case .refresh:
            guard started, !closed, !contextInvalid else { break }
            step.wait = send(.refresh, now: now, into: &step, ignoreBackoff: false)
        case .refreshIfStale:
            guard started, !closed, !contextInvalid else { break }
            if let confirmed = lastConfirmation, valuesFingerprint == currentFingerprint,
                now - confirmed < configuration.refreshIfStaleThreshold
            {
                if let inFlight, inFlight.request.generation == generation { step.wait = .request(inFlight.request.id) }
                break
            }
            step.wait = send(.refreshIfStale, now: now, into: &step, ignoreBackoff: false)
        case .identify(let fingerprint):
            guard !closed else { break }
            started = true
            generation &+= 1
            step.effects.append(.supersede(below: generation))
            cancelInFlight(into: &step)
            currentFingerprint = fingerprint
            contextInvalid = false
            authBlocked = false
            hardError = false
            failures = 0
            backoffUntil = nil
            lastFetchFailed = false
            contextChangePending = true
            reconciling = true
            step.effects.append(.emit(.reconciling))
            step.wait = send(.identify, now: now, into: &step, ignoreBackoff: true)
        case .keyChanged:
            guard started, !closed, !contextInvalid else { break }
            authBlocked = false
            hardError = false
            failures = 0
            backoffUntil = nil
            etag = nil
            etagFingerprint = nil
            cancelInFlight(into: &step)
            step.wait = send(.refresh, now: now, into: &step, ignoreBackoff: true)
        case .timer:
            guard let wake = nextWake, wake <= now else { break }
            let dueFetch = pendingFetch || failures > 0 || (nextPollAt.map { $0 <= now } ?? false)
            if dueFetch {
                let trigger: Trigger = pendingFetch ? owedTrigger : (failures > 0 ? .retry : .poll)
                _ = send(trigger, now: now, into: &step, ignoreBackoff: pendingFetch)
            }
        case .response(let requestID, let outcome):
            if let inFlight, inFlight.request.id == requestID {
                handle(outcome, for: inFlight.request, now: now, random: &random, into: &step)
            } else if case .rateLimited(let retryAfter?) = outcome {
                // A superseded request's 429 still binds us.
                retryNotBefore = max(retryNotBefore ?? .zero, now + retryAfter)
            }
        case .cachedValues(let fingerprint, let cachedETag):
            guard !closed, !hasValues, generation == 0, !contextChangePending else { break }
            hasValues = true
            valuesFingerprint = fingerprint
            valuesConfirmed = false
            if let cachedETag {
                etag = cachedETag
                etagFingerprint = fingerprint
            }
        case .streamFetch(let fetch):
            streamJoinedInFlight = false
            guard started, !closed, !contextInvalid else { break }
            step.wait = sendForStream(fetch, now: now, into: &step)
        case .setPollInterval(let interval):
            changePollInterval(to: interval, random: &random)
        case .close:
            guard !closed else { break }
            closed = true
            cancelInFlight(into: &step)
            step.effects.append(.supersede(below: generation &+ 1))
            pendingFetch = false
            reconciling = false
        }
        status = computeStatus(now: now)
        if status != before && !closed {
            switch status {
            case .ready where !step.effects.contains(.emit(.contextChanged)): step.effects.append(.emit(.ready))
            case .stale: step.effects.append(.emit(.stale))
            default: break
            }
        }
        return step
    }

    // MARK: - Internals

    /// Storage setters for `RefreshMachine+Stream.swift` (the properties stay `private(set)`).
    mutating func setPollIntervalStorage(_ interval: Duration) { pollInterval = interval }
    mutating func resetNextPoll(_ at: Duration?) { nextPollAt = at }

    /// Cancels the request in flight, if any, and releases its `refresh()` callers.
    private mutating func cancelInFlight(into step: inout Step) {
        guard let inFlight else { return }
        step.effects.append(.cancel(requestID: inFlight.request.id))
        step.effects.append(.finished(requestID: inFlight.request.id))
        self.inFlight = nil
    }

    mutating func send(
        _ trigger: Trigger, now: Duration, into step: inout Step, ignoreBackoff: Bool,
        stream: EventStreamMachine.Fetch? = nil
    ) -> Wait {
        guard let fingerprint = currentFingerprint else { return .none }
        streamJoinedInFlight = false
        if let inFlight, inFlight.request.generation == generation {
            streamJoinedInFlight = stream != nil
            return .request(inFlight.request.id)
        }
        cancelInFlight(into: &step)
        if let notBefore = retryNotBefore, now < notBefore {
            // Owed whatever caused it: a deferred key change or refresh must not be lost when
            // nothing else (no poll, no retry) would wake the engine later.
            if !pendingFetch || trigger == .identify || trigger == .start { owedTrigger = trigger }
            pendingFetch = true
            return .none
        }
        if !ignoreBackoff, trigger != .retry, let until = backoffUntil, now < until {
            return .none
        }
        pendingFetch = false
        nextRequestID &+= 1
        let request = Request(
            id: nextRequestID,
            generation: generation,
            fingerprint: fingerprint,
            ifNoneMatch: (etagFingerprint == fingerprint && valuesFingerprint == fingerprint && hasValues
                && stream?.unconditional != true) ? etag : nil,
            trigger: trigger,
            flagConfigEtag: stream?.flagConfigEtag,
            flagConfigLastModified: stream?.flagConfigLastModified
        )
        inFlight = InFlight(request: request, sentAt: now)
        step.effects.append(.send(request))
        return .request(request.id)
    }

    mutating func jitteredPoll(random: inout SplitMix64) -> Duration? {
        let interval = pollInterval
        guard interval > .zero else { return nil }
        let jitter = min(max(configuration.pollJitter, 0), 1)
        let factor = 1 + jitter * (2 * random.unit() - 1)
        return interval * factor
    }

    private mutating func handle(
        _ outcome: Outcome, for request: Request, now: Duration, random: inout SplitMix64, into step: inout Step
    ) {
        inFlight = nil
        switch outcome {
        case .updated(let newETag):
            step.effects.append(.apply(requestID: request.id))
            etag = newETag
            etagFingerprint = newETag == nil ? nil : request.fingerprint
            succeed(request: request, now: now, random: &random, into: &step)
        case .notModified:
            guard request.ifNoneMatch != nil, valuesFingerprint == request.fingerprint else {
                // A 304 we did not ask for confirms nothing: treat as a bad answer.
                fail(
                    .transient(.invalidBody, retryAfter: nil), request: request, now: now, random: &random, into: &step)
                return
            }
            step.effects.append(.confirm)
            succeed(request: request, now: now, random: &random, into: &step)
        default:
            fail(outcome, request: request, now: now, random: &random, into: &step)
        }
        step.effects.append(.finished(requestID: request.id))
    }

    private mutating func succeed(request: Request, now: Duration, random: inout SplitMix64, into step: inout Step) {
        hasValues = true
        valuesFingerprint = request.fingerprint
        valuesConfirmed = true
        lastConfirmation = now
        failures = 0
        backoffUntil = nil
        hardError = false
        authBlocked = false
        lastFetchFailed = false
        nextPollAt = jitteredPoll(random: &random).map { now + $0 }
        pollBase = now
        reconciling = false
        if contextChangePending {
            contextChangePending = false
            step.effects.append(.emit(.contextChanged))
        }
        step.effects.append(.identifyResolved(generation: request.generation, true))
    }

    private mutating func fail(
        _ outcome: Outcome, request: Request, now: Duration, random: inout SplitMix64, into step: inout Step
    ) {
        lastFetchFailed = true
        reconciling = false
        let code: FlagErrorCode
        let message: String
        var level = HalyardLogLevel.warning
        switch outcome {
        case .badRequest:
            hardError = true
            failures = 0
            backoffUntil = nil
            nextPollAt = jitteredPoll(random: &random).map { now + $0 }
            pollBase = now
            code = .invalidContext
            message = "the control plane rejected the context (400)"
        case .unauthorized(let statusCode):
            hardError = true
            authBlocked = true
            failures = 0
            backoffUntil = nil
            nextPollAt = nil
            code = hasValues ? .general : .providerFatal
            level = .error
            message = "the control plane refused the key (\(statusCode)); background refresh stopped"
        case .rateLimited(let retryAfter):
            failures += 1
            backoffUntil = now + configuration.backoff.delay(failures: failures, unit: random.unit())
            if let retryAfter { retryNotBefore = max(retryNotBefore ?? .zero, now + retryAfter) }
            code = .general
            message = "rate limited (429)" + (retryAfter.map { "; retry after \($0)" } ?? "")
        case .transient(let cause, let retryAfter):
            failures += 1
            backoffUntil = now + configuration.backoff.delay(failures: failures, unit: random.unit())
            if let retryAfter { retryNotBefore = max(retryNotBefore ?? .zero, now + retryAfter) }
            code = .general
            message =
                switch cause {
                case .status(let s): "the control plane answered \(s)"
                case .timedOut: "the request timed out"
                case .network: "network error"
                case .invalidBody: "the response body could not be parsed"
                case .tooLarge: "the response body exceeded the size limit"
                }
        case .updated, .notModified:
            return
        }
        step.effects.append(.log(level, message))
        step.effects.append(.emit(.error(code: code, message: message)))
        step.effects.append(.identifyResolved(generation: request.generation, false))
    }

    private func computeStatus(now: Duration) -> ClientStatus {
        guard hasValues else {
            if authBlocked { return .fatal }
            if reconciling { return .reconciling }
            return (lastFetchFailed || hardError || contextInvalid) ? .error : .notReady
        }
        if reconciling { return .reconciling }
        if hardError || authBlocked || contextInvalid { return .error }
        if contextChangePending { return lastFetchFailed ? .error : .reconciling }
        if !valuesConfirmed { return .stale }
        if lastFetchFailed, let confirmed = lastConfirmation, now - confirmed >= configuration.staleAfter {
            return .stale
        }
        return .ready
    }
}
