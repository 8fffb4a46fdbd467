import CHalyardAtomics
import Foundation

/// The control-plane discipline of a ``FlagService``, for all its contexts at once
/// (docs/service.md, "Talking to the control plane"):
///
/// - one pause for every context (``PauseState``): a 429 pauses every context's fetches
///   until the later of its `Retry-After` and the pause delay; after
///   ``FlagServiceOptions/backoffAfterFailures`` consecutive failures across contexts (5xx,
///   timeouts, network errors, bad bodies) every fetch pauses for the pause delay. The delay
///   has a floor (`initialBackoff`) and grows with each pause while failures continue, up to
///   ``FlagServiceOptions/recoveryInterval``; only a success after a quiet time resets it;
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
        /// No request was sent: the fleet's shared cache held values (SPEC §15) another fetch
        /// wrote, confirmed at the entry's time.
        case shared(SharedEntry)
        /// 400: the control plane rejected the context.
        case badRequest
        /// 401: the key was refused; the service is now fatal (until ``setKey(_:)``).
        case unauthorized
        /// 403: this context was refused; the others go on.
        case forbidden
        /// 429, 5xx, timeout, network error, bad body; `retryAfter` when the server gave one.
        case failed(retryAfter: Duration?)
        /// No request was sent: paused (`Retry-After`/backoff), fatal, closed, dropped or
        /// cancelled. No fetch before `until` (monotonic) when known.
        case skipped(until: Duration?)
        /// No request was sent: the queue had no room for it (a refresh behind a queue full
        /// of refreshes). The caller gives the context a retry time.
        case shed
    }

    /// What a fetch waiting for a slot is resumed with.
    enum Grant: Sendable {
        case granted, refused, dropped, shed
    }

    /// What a fetch came to, and what its request was sent with and when (nil: nothing was
    /// sent). An answer is judged by its request: its values are confirmed as of ``Sent/at``
    /// (SPEC §12: an answer that crossed a change event is stale to it), and an answer to a
    /// key `setKey` has replaced is never applied (``Result/skipped(until:)``).
    struct Answer: Sendable {
        var result: Result
        var sent: Sent? = nil
    }

    /// A request as it left: the key generation it was built with and when it was sent.
    struct Sent: Sendable {
        /// The ``State/keyGeneration`` of the key the request carried.
        var keyGeneration: UInt64
        /// When it was sent (monotonic): the confirmation time of what it brings back.
        var at: Duration
        /// The same moment on the wall clock (the shared cache's entries carry wall times).
        var wallAt: Date
    }

    struct State {
        /// Bumped by every ``ServiceFetcher/setKey(_:)``: a request carries the generation of
        /// the key it was built with (read with ``key`` under this lock), and an answer to an
        /// older key, whatever its status, changes nothing (SPEC §12).
        var keyGeneration: UInt64 = 0
        /// The key requests are built with now (the identity's, read together with
        /// ``keyGeneration``).
        var key: String
        var inFlight = 0
        var queue: FetchQueue
        var waiting: [UInt64: CheckedContinuation<Grant, Never>] = [:]
        var nextTicket: UInt64 = 0
        var pausedUntil: Duration = .zero
        /// A 429's `Retry-After` (monotonic): not even a probe goes before it.
        var retryAfterUntil: Duration = .zero
        /// Pauses in a row (the pause delay's step), and when a success may reset it.
        var pause = PauseState()
        var consecutiveFailures = 0
        var status: ClientStatus = .notReady
        var closed = false
        var stats = FetchStats()
        var tasks: [UInt64: Task<Void, Never>] = [:]
        var nextTaskID: UInt64 = 0
        /// The requests on the wire, by id, each registered in the critical section that read
        /// the key it carries: all carry ``keyGeneration``. ``ServiceFetcher/setKey(_:tier:)``
        /// cancels them all (SPEC §12), so their fetches end at once and send again with the
        /// new key. A cancellation handle, not a task: the request runs in its fetch's task.
        var exchanges: [UInt64: RequestCancellation] = [:]
        var nextExchangeID: UInt64 = 0
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
        /// Answers of any status to requests sent with a key `setKey` has replaced (ignored).
        var staleKeyAnswers = 0
        /// Requests on the wire that `setKey` cancelled (their key was replaced).
        var staleKeyCancels = 0
    }

    /// What ``gate(now:)`` found: read from atomics, no lock.
    struct Gate: Sendable {
        /// Closed or fatal: nothing is fetched.
        var closed: Bool
        var fatal: Bool
        /// Paused by a `Retry-After` or the service-wide pause until then (monotonic).
        var pausedUntil: Duration?
        /// Whether a 429's `Retry-After` is in force (a probe waits for it too).
        var retryAfterInForce: Bool
        /// Whether a cold fetch would find room in the slots and queue.
        var coldRoom: Bool
        /// Whether a refresh would find room: fewer refreshes outstanding than slots and queue
        /// (a refresh displaces a queued cold fetch, so cold fetches do not take its room).
        var refreshRoom: Bool

        /// Whether a fetch may be created now.
        func admits(_ priority: FetchPriority) -> Bool {
            !closed && !fatal && pausedUntil == nil && (priority == .refresh ? refreshRoom : coldRoom)
        }

        /// Whether a probe (the one request let through before a held entry expires) may be
        /// created now: whatever the service-wide pause, never before a 429's `Retry-After`.
        var admitsProbe: Bool { !closed && !fatal && !retryAfterInForce && refreshRoom }

        /// Whether a refresh is refused only for want of room (it is then shed: its context
        /// gets a retry time).
        var shedsRefresh: Bool { !closed && !fatal && pausedUntil == nil && !refreshRoom }
    }

    let builder: OFREPRequestBuilder
    let transport: GuardedTransport
    let clock: any HalyardClock
    let maxConcurrent: Int
    private let maxQueued: Int
    let initialBackoff: Duration
    /// The longest pause of the service's own (a 429's `Retry-After` may be longer), and the
    /// longest backoff of a context whose values are held.
    let recoveryInterval: Duration
    private let contextBackoff: Backoff
    let backoffAfterFailures: Int
    let logHandler: HalyardLogRecordHandler?
    /// The control plane's origin, for log records (``HalyardLogRecord/Key/origin``).
    let logOrigin: String
    private let identity: ClientIdentity
    let state: Locked<State>
    /// The gate's atomic words: what a request checks before it creates anything, without the
    /// lock. Named offsets into one allocation (``word(_:)``).
    enum Word: Int, CaseIterable {
        /// 1: closed, 2: fatal.
        case flags
        /// The pause's end (ns, monotonic).
        case pausedUntil
        /// Fetches created and not finished: in flight, queued, or their task not started yet.
        case outstanding
        /// Requests refused by a pause before they created a flight.
        case pausedRefusals
        /// Refreshes shed before they created a flight.
        case shedRefusals
        /// Refreshes outstanding.
        case refreshes
        /// A 429's `Retry-After` end (ns, monotonic).
        case retryAfterUntil
    }

    private nonisolated(unsafe) let words = UnsafeMutablePointer<hal_atomic_word>.allocate(
        capacity: Word.allCases.count)

    /// The atomic word `w`.
    @inline(__always) private func word(_ w: Word) -> UnsafeMutablePointer<hal_atomic_word> { words + w.rawValue }

    init(options: FlagServiceOptions, identity: ClientIdentity, transport: any FlagTransport) {
        builder = OFREPRequestBuilder(
            identity: identity,
            timeout: options.requestTimeout > .zero ? options.requestTimeout : .seconds(10),
            maxResponseBytes: options.maxResponseBytes > 0 ? options.maxResponseBytes : 8 << 20)
        self.identity = identity
        // Halyard's deadline and redirect log around whatever transport fetches (docs/protocol.md).
        self.transport = GuardedTransport.guarding(transport, logHandler: options.logSink)
        clock = options.clock
        maxConcurrent = max(1, options.maxConcurrentFetches)
        maxQueued = max(0, options.maxQueuedFetches)
        initialBackoff = max(options.initialBackoff, .milliseconds(1))
        recoveryInterval = options.recoveryInterval
        // A failing context waits at least half of `initialBackoff` (its own floor): full
        // jitter could draw ~0 and re-fetch it on the next request.
        contextBackoff = Backoff(
            initial: options.initialBackoff, maximum: options.maxBackoff, floor: options.initialBackoff / 2)
        backoffAfterFailures = max(1, options.backoffAfterFailures)
        logHandler = options.logSink
        logOrigin = HalyardLogRecord.origin(options.baseURL)
        state = Locked(State(key: identity.key, queue: FetchQueue(capacity: max(0, options.maxQueuedFetches))))
        words.initialize(repeating: hal_atomic_word(value: 0), count: Word.allCases.count)
    }

    deinit { words.deallocate() }

    var status: ClientStatus { state.withLock { $0.status } }
    /// Whether the key was refused (401), from the atomic copy (no lock).
    var isFatal: Bool { hal_load_acquire(word(.flags)) & 2 != 0 }
    var stats: FetchStats {
        var stats = state.withLock { $0.stats }
        stats.paused += Int(hal_load_relaxed(word(.pausedRefusals)))
        stats.shed += Int(hal_load_relaxed(word(.shedRefusals)))
        return stats
    }
    /// Fetches waiting for a slot now.
    var queuedCount: Int { state.withLock { $0.queue.count } }
    /// Fetches holding a slot now.
    var inFlightCount: Int { state.withLock { $0.inFlight } }

    /// Whether fetches may be created now: atomics only, for the request path.
    func gate(now: Duration) -> Gate {
        let flags = hal_load_acquire(word(.flags))
        let paused = Self.duration(hal_load_relaxed(word(.pausedUntil)))
        let outstanding = Int(hal_load_relaxed(word(.outstanding)))
        let refreshes = Int(hal_load_relaxed(word(.refreshes)))
        let retryAfter = Self.duration(hal_load_relaxed(word(.retryAfterUntil)))
        return Gate(
            closed: flags & 1 != 0, fatal: flags & 2 != 0, pausedUntil: now < paused ? paused : nil,
            retryAfterInForce: now < retryAfter, coldRoom: outstanding < maxConcurrent + maxQueued,
            refreshRoom: refreshes < maxConcurrent + maxQueued)
    }

    /// Counts a fetch created (before its task starts, so a loop of misses sees it at once).
    func began(_ priority: FetchPriority) {
        _ = hal_fetch_add(word(.outstanding), 1)
        if priority == .refresh { _ = hal_fetch_add(word(.refreshes), 1) }
    }

    /// Counts a fetch finished (whatever its result).
    func ended(_ priority: FetchPriority) {
        _ = hal_fetch_add(word(.outstanding), UInt(bitPattern: -1))
        if priority == .refresh { _ = hal_fetch_add(word(.refreshes), UInt(bitPattern: -1)) }
    }

    /// Counts a fetch a request did not create because of `gate`.
    func countRefused(_ gate: Gate) {
        if gate.closed || gate.fatal { return }
        _ = hal_fetch_add(word(gate.pausedUntil != nil ? .pausedRefusals : .shedRefusals), 1)
    }

    /// The backoff delay for a context's own `failures`, with `unit` uniform in [0, 1) drawn by
    /// the caller (outside any lock); at least half of `initialBackoff`. A context whose
    /// values are held (`held`) waits at most ``recoveryInterval`` (docs/service.md, "Recovery").
    ///
    /// The cap lowers the ceiling the delay is drawn under, so the draw keeps its spread: a
    /// delay drawn under the uncapped ceiling and then cut to the cap would be the cap itself
    /// after a few failures, for every context at once.
    func contextDelay(failures: Int, unit: Double, held: Bool = false) -> Duration {
        backoffs.contextDelay(failures: failures, unit: unit, held: held)
    }

    /// The per-context backoffs, as the policy draws them (``ContextPolicy/Backoffs``).
    var backoffs: ContextPolicy.Backoffs {
        ContextPolicy.Backoffs(context: contextBackoff, recoveryInterval: recoveryInterval)
    }

    /// The retry step of a held context whose refresh was shed for want of room, after `sheds`
    /// sheds in a row: drawn like ``contextDelay(failures:unit:held:)``, its ceiling doubling
    /// from `initialBackoff` up to half of ``recoveryInterval`` (not below `initialBackoff`).
    ///
    /// A shed says this service's own queue was full, not that the plane failed: its step is
    /// the shorter one, so a context shed by the burst of requests that follows a pause is
    /// sent again within half a recovery interval of that burst (docs/service.md, "Recovery").
    func shedDelay(sheds: Int, unit: Double) -> Duration {
        backoffs.shedDelay(sheds: sheds, unit: unit)
    }

    /// Whether ``close()`` was called (tracked tasks are no longer started).
    var isClosedForTasks: Bool { state.withLock { $0.closed } }

    /// Replaces the key (``FlagService/setKey(_:)``): ends the fatal state of a refused key.
    /// From the moment it returns, every answer to a request sent with an earlier key is
    /// ignored. `tier`: the shared cache, whose names and MAC key change in the same critical
    /// section, tagged with the new generation (an entry is written only under the names of
    /// the key its request was sent with, and only while that key is current: SPEC §15).
    ///
    /// The requests still on the wire with an earlier key are cancelled (SPEC §12) once the new
    /// key is in place: each ends at once (the guarded transport gives up on a cancelled
    /// request whatever the transport does), and its fetch sends again with the new key, so
    /// the requests waiting on it are answered by the new key rather than waiting out
    /// `requestTimeout`. An answer that lands first is ignored all the same.
    func setKey(_ key: String, tier: (tier: SharedTier, keys: SharedTier.Keys)? = nil) {
        let replaced = state.withLock { s -> [RequestCancellation] in
            identity.setKey(key)
            s.key = identity.key
            s.keyGeneration &+= 1
            if let tier { tier.tier.setKeys(tier.keys, generation: s.keyGeneration) }
            if s.status == .fatal { s.status = .notReady }
            publish(s)
            // Every request registered so far carries a replaced key.
            let replaced = Array(s.exchanges.values)
            s.exchanges.removeAll(keepingCapacity: true)
            s.stats.staleKeyCancels += replaced.count
            return replaced
        }
        for request in replaced { request.cancel() }
    }

    /// Whether `generation` is the key generation in use now.
    func isCurrentKey(_ generation: UInt64) -> Bool { state.withLock { $0.keyGeneration == generation } }

    /// Values were served from the fleet's shared cache: a service still `notReady` is `ready`
    /// (its fleet reached the control plane); `error` and `fatal` stay until a fetch of its own.
    func servedFromSharedCache() {
        state.withLock { s in
            guard s.status == .notReady, !s.closed else { return }
            s.status = .ready
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

    /// `d` in whole nanoseconds for an atomic word: saturating, a negative one 0.
    private static func nanoseconds(_ d: Duration) -> UInt {
        UInt(clamping: d.saturatingNanoseconds)
    }

    private static func duration(_ ns: UInt) -> Duration { .nanoseconds(Int64(clamping: ns)) }

    /// Copies the gate into the atomics (under the lock, so copies never go backwards).
    func publish(_ s: State) {
        hal_store_release(word(.flags), (s.closed ? 1 : 0) | (s.status == .fatal ? 2 : 0))
        hal_store_relaxed(word(.pausedUntil), Self.nanoseconds(s.pausedUntil))
        hal_store_relaxed(word(.retryAfterUntil), Self.nanoseconds(s.retryAfterUntil))
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

extension ServiceFetcher.Result {
    /// Whether no request was sent and nothing was learnt: skipped (paused, closed, fatal,
    /// dropped, cancelled) or shed. A fleet's shared entry was not sent either, but it answers.
    var wasNotSent: Bool {
        switch self {
        case .skipped, .shed: true
        default: false
        }
    }
}
