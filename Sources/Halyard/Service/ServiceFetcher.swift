import CHalyardAtomics
import Foundation

/// The control-plane discipline of a ``FlagService``, for all its contexts at once
/// (docs/service.md, "Talking to the control plane"):
///
/// - one `Retry-After`/backoff state: a 429 pauses every context's fetches until its
///   `Retry-After` (or the backoff delay); after ``FlagServiceOptions/backoffAfterFailures``
///   consecutive failures across contexts (5xx, timeouts, network errors, bad bodies) every
///   fetch pauses for the backoff delay (full jitter, doubling); one success ends it;
/// - one status: `notReady` until a fetch succeeds, then `ready`; `error` while the service-wide
///   backoff is in force; `fatal` after 401/403 (no request is sent any more);
/// - bounded concurrency: at most `maxConcurrentFetches` requests in flight, others queue
///   (FIFO) up to `maxQueuedFetches`, beyond which a fetch is shed;
/// - the client's request builder, status policy (`Outcome.classify`) and response limits.
final class ServiceFetcher: Sendable {
    /// What one fetch came to.
    enum Result: Sendable {
        /// 200 with a body that decoded.
        case updated(OFREPResponse, etag: String?)
        /// 304: the held values are confirmed.
        case notModified
        /// 400: the control plane rejected the context.
        case badRequest
        /// 401: the key was refused; the service is now fatal (until ``setKey(_:)``).
        case unauthorized
        /// 403: this context was refused; the others go on.
        case forbidden
        /// 429, 5xx, timeout, network error, bad body; `retryAfter` when the server gave one.
        case failed(retryAfter: Duration?)
        /// No request was sent: paused (`Retry-After`/backoff), fatal, closed or shed. No
        /// fetch before `until` (monotonic) when known.
        case skipped(until: Duration?)
    }

    /// What a fetch waiting for a slot is resumed with.
    private enum Grant: Sendable {
        case granted, refused, dropped
    }

    private struct State {
        /// Bumped by every ``ServiceFetcher/setKey(_:)``: a request carries the generation of
        /// the key it was built with, and a refusal of an older key changes nothing.
        var keyGeneration: UInt64 = 0
        var inFlight = 0
        var queue: FetchQueue
        var waiting: [UInt64: CheckedContinuation<Grant, Never>] = [:]
        var nextTicket: UInt64 = 0
        var pausedUntil: Duration = .zero
        var consecutiveFailures = 0
        var status: ClientStatus = .notReady
        var closed = false
        var stats = FetchStats()
        var tasks: [UInt64: Task<Void, Never>] = [:]
        var nextTaskID: UInt64 = 0
    }

    /// Fetch counters (part of ``FlagServiceStats``).
    struct FetchStats: Sendable {
        var requestsSent = 0
        var responsesByStatus: [Int: Int] = [:]
        var notModified = 0
        var timeouts = 0
        var networkErrors = 0
        var invalidBodies = 0
        var oversizedResponses = 0
        var rateLimited = 0
        var paused = 0
        var shed = 0
        var dropped = 0
        var forbidden = 0
        /// 401/403 answers to requests sent with a key `setKey` has replaced (ignored).
        var staleKeyRefusals = 0
    }

    /// What ``gate(now:)`` found: read from atomics, no lock.
    struct Gate: Sendable {
        /// Closed or fatal: nothing is fetched.
        var closed: Bool
        var fatal: Bool
        /// Paused by a `Retry-After` or the service-wide backoff until then (monotonic).
        var pausedUntil: Duration?
        /// Whether a cold fetch would find room in the slots and queue.
        var coldRoom: Bool

        /// Whether a fetch may be created now (a refresh may always queue: it displaces).
        func admits(_ priority: FetchPriority) -> Bool {
            !closed && !fatal && pausedUntil == nil && (priority == .refresh || coldRoom)
        }
    }

    let builder: OFREPRequestBuilder
    let transport: any FlagTransport
    let clock: any HalyardClock
    private let maxConcurrent: Int
    private let maxQueued: Int
    private let backoff: Backoff
    private let contextBackoff: Backoff
    private let backoffAfterFailures: Int
    private let logHandler: HalyardLogHandler?
    private let identity: ClientIdentity
    private let state: Locked<State>
    /// [flags (1 closed, 2 fatal), paused until (ns, monotonic), outstanding (fetches created
    /// and not finished: in flight, queued, or their task not started yet), paused refusals
    /// before a flight, sheds before a flight]: the gate a request
    /// checks before it creates anything, without the lock.
    private nonisolated(unsafe) let words = UnsafeMutablePointer<hal_atomic_word>.allocate(capacity: 5)

    init(options: FlagServiceOptions, identity: ClientIdentity, transport: any FlagTransport) {
        builder = OFREPRequestBuilder(
            identity: identity,
            timeout: options.requestTimeout > .zero ? options.requestTimeout : .seconds(10),
            maxResponseBytes: options.maxResponseBytes > 0 ? options.maxResponseBytes : 8 << 20)
        self.identity = identity
        // Halyard's deadline and redirect log around whatever transport fetches (docs/protocol.md).
        self.transport = GuardedTransport.wrapping(transport, logHandler: options.logHandler)
        clock = options.clock
        maxConcurrent = max(1, options.maxConcurrentFetches)
        maxQueued = max(0, options.maxQueuedFetches)
        backoff = Backoff(base: options.initialBackoff, maximum: options.maxBackoff)
        // A failing context waits at least half of `initialBackoff` (its own floor): full
        // jitter could draw ~0 and re-fetch it on the next request.
        contextBackoff = Backoff(
            initial: options.initialBackoff, maximum: options.maxBackoff, floor: options.initialBackoff / 2)
        backoffAfterFailures = max(1, options.backoffAfterFailures)
        logHandler = options.logHandler
        state = Locked(State(queue: FetchQueue(capacity: max(0, options.maxQueuedFetches))))
        words.initialize(repeating: hal_atomic_word(value: 0), count: 5)
    }

    deinit { words.deallocate() }

    var status: ClientStatus { state.withLock { $0.status } }
    /// Whether the key was refused (401), from the atomic copy (no lock).
    var isFatal: Bool { hal_load_acquire(words) & 2 != 0 }
    var stats: FetchStats {
        var stats = state.withLock { $0.stats }
        stats.paused += Int(hal_load_relaxed(words + 3))
        stats.shed += Int(hal_load_relaxed(words + 4))
        return stats
    }
    /// Fetches waiting for a slot now.
    var queuedCount: Int { state.withLock { $0.queue.count } }
    /// Fetches holding a slot now.
    var inFlightCount: Int { state.withLock { $0.inFlight } }

    /// Whether fetches may be created now: atomics only, for the request path.
    func gate(now: Duration) -> Gate {
        let flags = hal_load_acquire(words)
        let paused = Self.duration(hal_load_relaxed(words + 1))
        let outstanding = Int(hal_load_relaxed(words + 2))
        return Gate(
            closed: flags & 1 != 0, fatal: flags & 2 != 0, pausedUntil: now < paused ? paused : nil,
            coldRoom: outstanding < maxConcurrent + maxQueued)
    }

    /// Counts a fetch created (before its task starts, so a loop of misses sees it at once).
    func began() { _ = hal_fetch_add(words + 2, 1) }

    /// Counts a fetch finished (whatever its result).
    func ended() { _ = hal_fetch_add(words + 2, UInt(bitPattern: -1)) }

    /// Counts a fetch a request did not create because of `gate`.
    func countRefused(_ gate: Gate) {
        if gate.closed || gate.fatal { return }
        _ = hal_fetch_add(gate.pausedUntil != nil ? words + 3 : words + 4, 1)
    }

    /// The backoff delay for a context's own `failures`, with `unit` uniform in [0, 1) drawn by
    /// the caller (outside any lock); at least half of `initialBackoff`.
    func contextDelay(failures: Int, unit: Double) -> Duration {
        contextBackoff.delay(failures: max(1, failures), unit: unit)
    }

    /// Whether ``close()`` was called (tracked tasks are no longer started).
    var isClosedForTasks: Bool { state.withLock { $0.closed } }

    /// Replaces the key (``FlagService/setKey(_:)``): ends the fatal state of a refused key.
    func setKey(_ key: String) {
        identity.setKey(key)
        state.withLock { s in
            s.keyGeneration &+= 1
            if s.status == .fatal { s.status = .notReady }
            publish(s)
        }
    }

    /// Tasks ``track(_:)`` created so far (tests: a request that the gate refuses creates none).
    var tasksCreated: Int { state.withLock { Int($0.nextTaskID) } }

    /// Runs `body` as a tracked task (cancelled by ``close()``). Returns false, running nothing,
    /// after ``close()``.
    @discardableResult
    func track(_ body: @escaping @Sendable () async -> Void) -> Bool {
        state.withLock { s -> Bool in
            if s.closed { return false }
            s.nextTaskID += 1
            let id = s.nextTaskID
            s.tasks[id] = Task { [weak self] in
                await body()
                _ = self?.state.withLock { $0.tasks.removeValue(forKey: id) }
            }
            return true
        }
    }

    private static func nanoseconds(_ d: Duration) -> UInt {
        let c = d.components
        guard c.seconds >= 0 else { return 0 }
        return UInt(clamping: c.seconds &* 1_000_000_000 &+ c.attoseconds / 1_000_000_000)
    }

    private static func duration(_ ns: UInt) -> Duration { .nanoseconds(Int64(clamping: ns)) }

    /// Copies the gate into the atomics (under the lock, so copies never go backwards).
    private func publish(_ s: State) {
        hal_store_release(words, (s.closed ? 1 : 0) | (s.status == .fatal ? 2 : 0))
        hal_store_relaxed(words + 1, Self.nanoseconds(s.pausedUntil))
    }

    /// Fetches the values of `context`, with `If-None-Match: etag` when given. A cold fetch
    /// that waits for a slot is dropped (counted, not sent) when every request waiting on
    /// `flight` leaves first.
    func fetch(
        _ context: FittedContext, etag: String?, priority: FetchPriority = .cold, flight: ContextFlight? = nil,
        flagConfig: FlagConfigVersion? = nil
    ) async -> Result {
        switch await acquire(priority, flight: flight) {
        case .granted: break
        case .refused(let until): return .skipped(until: until)
        }
        defer { release() }
        let now = clock.monotonicNow
        let gate = gate(now: now)
        if gate.closed || gate.fatal || gate.pausedUntil != nil {
            // Paused, fatal or closed while it waited for its slot.
            if gate.pausedUntil != nil { state.withLock { $0.stats.paused += 1 } }
            return .skipped(until: gate.pausedUntil)
        }
        // The generation before the request reads the key: a `setKey` in between makes this
        // request's refusal count as an old key's at worst (ignored once; the next one counts).
        let generation = state.withLock { $0.keyGeneration }
        let request = builder.request(
            contextJSON: context.canonicalJSON, ifNoneMatch: etag, flagConfig: flagConfig)
        state.withLock { $0.stats.requestsSent += 1 }
        let outcome: RefreshMachine.Outcome
        var decoded: OFREPResponse?
        var status: Int?
        do {
            let response = try await transport.send(request)
            status = response.status
            (outcome, decoded) = RefreshMachine.Outcome.classify(
                response, maxResponseBytes: builder.maxResponseBytes, wallNow: clock.wallNow,
                controlPlane: builder.identity.baseURL)
        } catch let error as TransportError where error != .cancelled && !Task.isCancelled {
            switch error {
            case .timedOut: outcome = .transient(.timedOut, retryAfter: nil)
            case .responseTooLarge: outcome = .transient(.tooLarge, retryAfter: nil)
            case .network, .cancelled, .redirectRefused: outcome = .transient(.network, retryAfter: nil)
            }
        } catch {
            // Cancelled (close(), a service dropped): not a network error, nothing to record.
            if Task.isCancelled || error is CancellationError || (error as? TransportError) == .cancelled {
                return .skipped(until: nil)
            }
            outcome = .transient(.network, retryAfter: nil)
        }
        return record(outcome, status: status, decoded: decoded, generation: generation)
    }

    private func record(
        _ outcome: RefreshMachine.Outcome, status: Int?, decoded: OFREPResponse?, generation: UInt64
    ) -> Result {
        let now = clock.monotonicNow
        let unit = Double.random(in: 0..<1)
        var log: (HalyardLogLevel, String)?
        let result = state.withLock { s -> Result in
            defer { publish(s) }
            if let status { s.stats.responsesByStatus[status, default: 0] += 1 }
            if case .unauthorized = outcome, generation != s.keyGeneration {
                // Sent with a key `setKey` has replaced: says nothing about the new key (with 32
                // fetches in flight, a late 401 made the service fatal again after the rotation).
                s.stats.staleKeyRefusals += 1
                return .skipped(until: nil)
            }
            switch outcome {
            case .updated(let etag):
                s.consecutiveFailures = 0
                if s.status != .fatal { s.status = .ready }
                guard let decoded else { return .failed(retryAfter: nil) }
                return .updated(decoded, etag: etag)
            case .notModified:
                s.consecutiveFailures = 0
                s.stats.notModified += 1
                if s.status != .fatal { s.status = .ready }
                return .notModified
            case .badRequest:
                return .badRequest
            case .unauthorized(let code) where code == 403:
                // About this context (a WAF rule, a per-tenant refusal): the others go on.
                s.stats.forbidden += 1
                return .forbidden
            case .unauthorized(let code):
                if s.status != .fatal {
                    log = (
                        .error,
                        "the control plane refused the key (HTTP \(code)); the service sends no more fetches until setKey(_:)"
                    )
                }
                s.status = .fatal
                return .unauthorized
            case .rateLimited(let retryAfter):
                s.stats.rateLimited += 1
                s.consecutiveFailures += 1
                let delay = backoff.delay(failures: s.consecutiveFailures, retryAfter: retryAfter, unit: unit)
                s.pausedUntil = max(s.pausedUntil, now + delay)
                if s.status != .fatal { s.status = .error }
                log = (.warning, "429 from the control plane: every context's fetches pause for \(delay)")
                return .failed(retryAfter: delay)
            case .transient(let cause, let retryAfter):
                switch cause {
                case .timedOut: s.stats.timeouts += 1
                case .network: s.stats.networkErrors += 1
                case .invalidBody: s.stats.invalidBodies += 1
                case .tooLarge: s.stats.oversizedResponses += 1
                case .status: break
                }
                s.consecutiveFailures += 1
                if s.consecutiveFailures >= backoffAfterFailures {
                    let delay = backoff.delay(
                        failures: s.consecutiveFailures - backoffAfterFailures + 1, retryAfter: retryAfter, unit: unit)
                    s.pausedUntil = max(s.pausedUntil, now + delay)
                    if s.status != .fatal { s.status = .error }
                }
                return .failed(retryAfter: retryAfter)
            }
        }
        if let log { logHandler?(log.0, log.1) }
        return result
    }

    private enum Admission {
        case granted
        case refused(until: Duration?)
    }

    /// Takes a slot, waiting when all are taken (refreshes before cold fetches, FIFO within
    /// each); refused when closed, fatal, paused or the queue is full.
    private func acquire(_ priority: FetchPriority, flight: ContextFlight?) async -> Admission {
        let now = clock.monotonicNow
        enum Step {
            case granted, refused(Duration?), wait
        }
        let step = state.withLock { s -> Step in
            defer { publish(s) }
            if s.closed || s.status == .fatal { return .refused(nil) }
            if now < s.pausedUntil {
                s.stats.paused += 1
                return .refused(s.pausedUntil)
            }
            if s.inFlight < maxConcurrent {
                s.inFlight += 1
                return .granted
            }
            return .wait
        }
        switch step {
        case .granted: return .granted
        case .refused(let until): return .refused(until: until)
        case .wait: break
        }
        let grant = await withCheckedContinuation { (c: CheckedContinuation<Grant, Never>) in
            var displaced: CheckedContinuation<Grant, Never>?
            let outcome = state.withLock { s -> (Grant?, UInt64) in
                defer { publish(s) }
                if s.closed { return (.refused, 0) }
                if s.inFlight < maxConcurrent {
                    s.inFlight += 1
                    return (.granted, 0)
                }
                s.nextTicket += 1
                let ticket = s.nextTicket
                switch s.queue.enqueue(ticket, priority) {
                case .full:
                    s.stats.shed += 1
                    return (.refused, 0)
                case .queuedDisplacing(let other):
                    s.stats.shed += 1
                    displaced = s.waiting.removeValue(forKey: other)
                    fallthrough
                case .queued:
                    s.waiting[ticket] = c
                    return (nil, ticket)
                }
            }
            displaced?.resume(returning: .refused)
            if let grant = outcome.0 {
                c.resume(returning: grant)
            } else if priority == .cold, let flight {
                let ticket = outcome.1
                flight.whenAbandoned { [weak self] in self?.drop(ticket) }
            }
        }
        switch grant {
        case .granted: return .granted
        case .refused, .dropped: return .refused(until: nil)
        }
    }

    /// Drops a queued fetch whose waiters all left (counted in `droppedFetches`).
    private func drop(_ ticket: UInt64) {
        let waiter = state.withLock { s -> CheckedContinuation<Grant, Never>? in
            defer { publish(s) }
            guard s.queue.remove(ticket), let waiter = s.waiting.removeValue(forKey: ticket) else { return nil }
            s.stats.dropped += 1
            return waiter
        }
        waiter?.resume(returning: .dropped)
    }

    /// Frees a slot, handing it to the next waiter (refreshes first).
    private func release() {
        let next = state.withLock { s -> CheckedContinuation<Grant, Never>? in
            defer { publish(s) }
            while let ticket = s.queue.popNext() {
                if let c = s.waiting.removeValue(forKey: ticket) { return c }  // the slot passes to it
            }
            s.inFlight -= 1
            return nil
        }
        next?.resume(returning: .granted)
    }

    /// Refuses every queued and future fetch at once and cancels the running ones. Idempotent.
    func close() {
        let (waiters, tasks) = state.withLock { s -> ([CheckedContinuation<Grant, Never>], [Task<Void, Never>]) in
            s.closed = true
            defer {
                s.waiting.removeAll()
                _ = s.queue.removeAll()
                s.tasks.removeAll()
                publish(s)
            }
            return (Array(s.waiting.values), Array(s.tasks.values))
        }
        for waiter in waiters { waiter.resume(returning: .refused) }
        for task in tasks { task.cancel() }
    }
}
