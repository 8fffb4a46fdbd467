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
        /// 401/403: the service is now fatal.
        case unauthorized
        /// 429, 5xx, timeout, network error, bad body; `retryAfter` when the server gave one.
        case failed(retryAfter: Duration?)
        /// No request was sent: paused (`Retry-After`/backoff), fatal, closed or shed. No
        /// fetch before `until` (monotonic) when known.
        case skipped(until: Duration?)
    }

    private struct State {
        var inFlight = 0
        var queue: [UInt64: CheckedContinuation<Bool, Never>] = [:]
        var queueOrder: [UInt64] = []
        var queueHead = 0
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
    }

    let builder: OFREPRequestBuilder
    let transport: any FlagTransport
    let clock: any HalyardClock
    private let maxConcurrent: Int
    private let maxQueued: Int
    private let backoff: Backoff
    private let backoffAfterFailures: Int
    private let logHandler: HalyardLogHandler?
    private let state = Locked(State())

    init(options: FlagServiceOptions, identity: ClientIdentity, transport: any FlagTransport) {
        builder = OFREPRequestBuilder(
            identity: identity,
            timeout: options.requestTimeout > .zero ? options.requestTimeout : .seconds(10),
            maxResponseBytes: options.maxResponseBytes > 0 ? options.maxResponseBytes : 8 << 20)
        self.transport = transport
        clock = options.clock
        maxConcurrent = max(1, options.maxConcurrentFetches)
        maxQueued = max(0, options.maxQueuedFetches)
        backoff = Backoff(base: options.initialBackoff, maximum: options.maxBackoff)
        backoffAfterFailures = max(1, options.backoffAfterFailures)
        logHandler = options.logHandler
    }

    var status: ClientStatus { state.withLock { $0.status } }
    var isFatal: Bool { state.withLock { $0.status == .fatal } }
    var stats: FetchStats { state.withLock { $0.stats } }
    /// Fetches waiting for a slot now.
    var queuedCount: Int { state.withLock { $0.queue.count } }
    /// Fetches holding a slot now.
    var inFlightCount: Int { state.withLock { $0.inFlight } }
    /// Whether fetches may start now (not paused, fatal or closed), and if not, until when.
    func gate(now: Duration) -> (open: Bool, until: Duration?) {
        state.withLock { s in
            if s.closed || s.status == .fatal { return (false, nil) }
            if now < s.pausedUntil { return (false, s.pausedUntil) }
            return (true, nil)
        }
    }

    /// The backoff delay for a context's own `failures` (full jitter).
    func contextDelay(failures: Int) -> Duration {
        backoff.delay(failures: max(1, failures), unit: Double.random(in: 0..<1))
    }

    /// Whether ``close()`` was called (tracked tasks are no longer started).
    var isClosedForTasks: Bool { state.withLock { $0.closed } }

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

    /// Fetches the values of `context`, with `If-None-Match: etag` when given.
    func fetch(_ context: FittedContext, etag: String?) async -> Result {
        switch await acquire() {
        case .granted: break
        case .refused(let until): return .skipped(until: until)
        }
        defer { release() }
        let now = clock.monotonicNow
        if case (false, let until) = gate(now: now) {
            state.withLock { $0.stats.paused += 1 }
            return .skipped(until: until)
        }
        let request = builder.request(contextJSON: context.canonicalJSON, ifNoneMatch: etag)
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
        } catch let error as TransportError {
            switch error {
            case .timedOut: outcome = .transient(.timedOut, retryAfter: nil)
            case .responseTooLarge: outcome = .transient(.tooLarge, retryAfter: nil)
            case .network, .cancelled: outcome = .transient(.network, retryAfter: nil)
            }
        } catch {
            outcome = .transient(.network, retryAfter: nil)
        }
        return record(outcome, status: status, decoded: decoded)
    }

    private func record(_ outcome: RefreshMachine.Outcome, status: Int?, decoded: OFREPResponse?) -> Result {
        let now = clock.monotonicNow
        var log: (HalyardLogLevel, String)?
        let result = state.withLock { s -> Result in
            if let status { s.stats.responsesByStatus[status, default: 0] += 1 }
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
            case .unauthorized(let code):
                if s.status != .fatal {
                    log = (
                        .error, "the control plane refused the key (HTTP \(code)); the service sends no more fetches"
                    )
                }
                s.status = .fatal
                return .unauthorized
            case .rateLimited(let retryAfter):
                s.stats.rateLimited += 1
                s.consecutiveFailures += 1
                let delay = backoff.delay(
                    failures: s.consecutiveFailures, retryAfter: retryAfter, unit: Double.random(in: 0..<1))
                s.pausedUntil = max(s.pausedUntil, now + delay)
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
                        failures: s.consecutiveFailures - backoffAfterFailures + 1, retryAfter: retryAfter,
                        unit: Double.random(in: 0..<1))
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

    /// Takes a slot, waiting in FIFO order when all are taken; refused when closed, fatal,
    /// paused or the queue is full.
    private func acquire() async -> Admission {
        let now = clock.monotonicNow
        enum Step {
            case granted, refused(Duration?), wait(UInt64)
        }
        let step = state.withLock { s -> Step in
            if s.closed || s.status == .fatal { return .refused(nil) }
            if now < s.pausedUntil {
                s.stats.paused += 1
                return .refused(s.pausedUntil)
            }
            if s.inFlight < maxConcurrent {
                s.inFlight += 1
                return .granted
            }
            if s.queue.count >= maxQueued {
                s.stats.shed += 1
                return .refused(nil)
            }
            s.nextTicket += 1
            return .wait(s.nextTicket)
        }
        switch step {
        case .granted: return .granted
        case .refused(let until): return .refused(until: until)
        case .wait(let ticket):
            let granted = await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
                let resumeNow = state.withLock { s -> Bool? in
                    if s.closed { return false }
                    if s.inFlight < maxConcurrent {
                        s.inFlight += 1
                        return true
                    }
                    s.queue[ticket] = c
                    s.queueOrder.append(ticket)
                    return nil
                }
                if let resumeNow { c.resume(returning: resumeNow) }
            }
            return granted ? .granted : .refused(until: nil)
        }
    }

    /// Frees a slot, handing it to the oldest waiter.
    private func release() {
        let next = state.withLock { s -> CheckedContinuation<Bool, Never>? in
            while s.queueHead < s.queueOrder.count {
                let ticket = s.queueOrder[s.queueHead]
                s.queueHead += 1
                if let c = s.queue.removeValue(forKey: ticket) {
                    Self.compact(&s)
                    return c  // the slot passes to it: inFlight unchanged
                }
            }
            Self.compact(&s)
            s.inFlight -= 1
            return nil
        }
        next?.resume(returning: true)
    }

    private static func compact(_ s: inout State) {
        if s.queueHead > 1024 && s.queueHead * 2 > s.queueOrder.count {
            s.queueOrder.removeFirst(s.queueHead)
            s.queueHead = 0
        }
        if s.queue.isEmpty {
            s.queueOrder.removeAll(keepingCapacity: true)
            s.queueHead = 0
        }
    }

    /// Refuses every queued and future fetch and cancels the running ones. Idempotent.
    func close() {
        let (waiters, tasks) = state.withLock { s -> ([CheckedContinuation<Bool, Never>], [Task<Void, Never>]) in
            s.closed = true
            defer {
                s.queue.removeAll()
                s.queueOrder.removeAll()
                s.queueHead = 0
                s.tasks.removeAll()
            }
            return (Array(s.queue.values), Array(s.tasks.values))
        }
        for waiter in waiters { waiter.resume(returning: false) }
        for task in tasks { task.cancel() }
    }
}
