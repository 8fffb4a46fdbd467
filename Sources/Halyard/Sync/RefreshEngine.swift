import Foundation

/// A fitted context as the sync engine sends it.
struct SyncContext: Sendable, Hashable {
    /// The canonical JSON of the fitted wire form (the `context` member of the request body).
    var canonicalJSON: String
    /// SHA-1 of ``canonicalJSON`` (40 lowercase hex digits).
    var fingerprint: String
    /// Attribute names fitting dropped.
    var droppedAttributes: [String] = []
    /// The context and its fitted form, when the engine runs inside a client.
    var source: EvaluationContext?
    var fitted: FittedContext?
}

/// What the engine hands to the snapshot store.
enum SyncPublication: Sendable {
    /// New served flags for the context with this fingerprint, confirmed now.
    case values([ServedFlag], fingerprint: String, confirmedAt: Date)
    /// The held values were confirmed (304).
    case confirmed(Date)
}

/// Runs ``RefreshMachine`` against a real transport and clock: sends requests, sleeps until the
/// next poll or retry, parses responses, publishes snapshots, and delivers events, listener
/// calls and waiter resumptions in order, never while its lock is held.
final class RefreshEngine: Sendable {
    struct Configuration: Sendable {
        var machine: RefreshMachine.Configuration
        var builder: OFREPRequestBuilder
    }

    private enum Delivery {
        case publish(SyncPublication)
        case event(ClientEvent)
        case changed(Set<String>)
        case resume([CheckedContinuation<Void, Never>])
        case resumeBool([CheckedContinuation<Bool, Never>], Bool)
        case log(HalyardLogLevel, String)
        case status(ClientStatus)
        case finishStreams
    }

    private struct Listener {
        var queue: DispatchQueue
        var active: Locked<Bool>
        var handler: @Sendable (Set<String>) throws -> Void
    }

    private struct ReadyWaiter {
        var continuation: CheckedContinuation<Bool, Never>
        var timeout: Task<Void, Never>?
    }

    private struct State {
        var machine: RefreshMachine
        var random: SplitMix64
        var builder: OFREPRequestBuilder
        var context: SyncContext?
        var parsed: [UInt64: [ServedFlag]] = [:]
        var tasks: [UInt64: Task<Void, Never>] = [:]
        var refreshWaiters: [UInt64: [CheckedContinuation<Void, Never>]] = [:]
        var identifyWaiters: [UInt64: [CheckedContinuation<Bool, Never>]] = [:]
        var readyWaiters: [UInt64: ReadyWaiter] = [:]
        var nextID: UInt64 = 0
        var timer: (wake: Duration, task: Task<Void, Never>)?
        var served: [String: ServedFlag] = [:]
        var stats = SyncStats()
        var outbox: [Delivery] = []
        var draining = false
        var listeners: [UInt64: Listener] = [:]
        var streams: [UInt64: AsyncStream<ClientEvent>.Continuation] = [:]
        var streamsFinished = false
    }

    private let configuration: Configuration
    private let transport: any FlagTransport
    private let clock: any HalyardClock
    private let logHandler: HalyardLogHandler?
    private let publish: @Sendable (SyncPublication) -> Void
    private let statusChanged: @Sendable (ClientStatus) -> Void
    private let state: Locked<State>

    init(
        configuration: Configuration,
        transport: any FlagTransport,
        clock: any HalyardClock,
        logHandler: HalyardLogHandler?,
        seed: UInt64 = UInt64.random(in: .min ... .max),
        statusChanged: @escaping @Sendable (ClientStatus) -> Void = { _ in },
        publish: @escaping @Sendable (SyncPublication) -> Void
    ) {
        self.statusChanged = statusChanged
        self.configuration = configuration
        self.transport = transport
        self.clock = clock
        self.logHandler = logHandler
        self.publish = publish
        state = Locked(
            State(
                machine: RefreshMachine(configuration: configuration.machine), random: SplitMix64(seed: seed),
                builder: configuration.builder))
    }

    // MARK: - Public operations

    /// Starts syncing with the initial context (`nil` when it is invalid).
    func start(context: SyncContext?) {
        process(.start(fingerprint: context?.fingerprint)) { s in
            s.context = context
            if let context { Self.noteTrim(context, in: &s) }
        }
    }

    /// Fetches now (or joins the fetch in flight) and returns when it is over. Sends nothing
    /// while `Retry-After` or backoff is in force.
    func refresh() async { await refresh(.refresh) }

    /// Like ``refresh()`` but only when the last confirmation is older than the threshold.
    func refreshIfStale() async { await refresh(.refreshIfStale) }

    private func refresh(_ input: RefreshMachine.Input) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            var resumeNow = false
            var inFlightBefore: UInt64?
            process(input) { s in
                inFlightBefore = s.machine.inFlight?.request.id
            } after: { s, step in
                if case .request(let id) = step.wait {
                    s.refreshWaiters[id, default: []].append(c)
                    if id == inFlightBefore { s.stats.coalescedRefreshes += 1 }
                } else {
                    if input == .refresh { s.stats.deferredRefreshes += 1 }
                    resumeNow = true
                }
            }
            if resumeNow { c.resume() }
        }
    }

    /// Switches to a new (valid, fitted) context and returns whether its values are now served.
    func identify(_ context: SyncContext) async -> Bool {
        await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            var resumeNow = false
            process(.identify(fingerprint: context.fingerprint)) { s in
                guard !s.machine.closed else { return }
                s.context = context
                Self.noteTrim(context, in: &s)
            } after: { s, _ in
                if s.machine.closed {
                    resumeNow = true
                } else {
                    s.identifyWaiters[s.machine.generation, default: []].append(c)
                }
            }
            if resumeNow { c.resume(returning: false) }
        }
    }

    /// Uses `key` from now on: cancels the fetch in flight, lifts a 401/403 stop, and fetches at
    /// once (subject to `Retry-After`); returns when that fetch is over.
    func setKey(_ key: String) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            var resumeNow = false
            process(.keyChanged) { s in
                s.builder.key = key
            } after: { s, step in
                if case .request(let id) = step.wait {
                    s.refreshWaiters[id, default: []].append(c)
                } else {
                    resumeNow = true
                }
            }
            if resumeNow { c.resume() }
        }
    }

    /// Waits until values confirmed for the current context are served, or `timeout` passes.
    func ready(timeout: Duration) async -> Bool {
        await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            let immediate: Bool? = state.withLock { s in
                if s.machine.isConfirmedForCurrentContext { return true }
                if !s.machine.canBecomeReady || timeout <= .zero { return false }
                s.nextID &+= 1
                let id = s.nextID
                let clock = self.clock
                let task = Task { [weak self] in
                    do { try await clock.sleep(for: timeout) } catch { return }
                    self?.expireReadyWaiter(id)
                }
                s.readyWaiters[id] = ReadyWaiter(continuation: c, timeout: task)
                return nil
            }
            if let immediate { c.resume(returning: immediate) }
        }
    }

    private func expireReadyWaiter(_ id: UInt64) {
        let waiter = state.withLock { $0.readyWaiters.removeValue(forKey: id) }
        waiter?.continuation.resume(returning: false)
    }

    /// The current status.
    var status: ClientStatus { state.withLock { $0.machine.status } }

    /// Sync counters.
    var stats: SyncStats {
        state.withLock { s in
            var stats = s.stats
            stats.consecutiveFailures = s.machine.failures
            return stats
        }
    }

    /// When the engine next wakes (poll, retry, `Retry-After` end, stale check); nil for never.
    var nextWake: Duration? { state.withLock { $0.machine.nextWake } }

    /// The current context as last accepted (`start` or `identify`), nil when none is valid.
    var context: SyncContext? { state.withLock { $0.context } }

    /// The fingerprint of the current context, when it is valid.
    var currentFingerprint: String? { state.withLock { $0.machine.currentFingerprint } }

    /// Calls `handler` with the changed keys after every `configurationChanged`, on a serial queue
    /// of its own (so a slow handler only delays itself).
    func onChange(_ handler: @escaping @Sendable (Set<String>) throws -> Void) -> ChangeSubscription {
        let active = Locked(true)
        let listener = Listener(queue: DispatchQueue(label: "halyard.onChange"), active: active, handler: handler)
        let id = state.withLock { s -> UInt64 in
            s.nextID &+= 1
            s.listeners[s.nextID] = listener
            return s.nextID
        }
        return ChangeSubscription { [weak self] in
            active.withLock { $0 = false }
            self?.state.withLock { _ = $0.listeners.removeValue(forKey: id) }
        }
    }

    /// A new stream of the events emitted from now on; it ends when the client is closed.
    var events: AsyncStream<ClientEvent> {
        let (stream, continuation) = AsyncStream<ClientEvent>.makeStream(bufferingPolicy: .unbounded)
        let finished = state.withLock { s -> Bool in
            if s.streamsFinished { return true }
            s.nextID &+= 1
            let id = s.nextID
            s.streams[id] = continuation
            continuation.onTermination = { [weak self] _ in
                self?.state.withLock { _ = $0.streams.removeValue(forKey: id) }
            }
            return false
        }
        if finished { continuation.finish() }
        return stream
    }

    /// Stops polling and fetching; reads keep the last values. Idempotent.
    func close() {
        process(.close) { _ in
        } after: { s, _ in
            s.outbox.append(.finishStreams)
        }
    }

    // MARK: - The loop

    private static func noteTrim(_ context: SyncContext, in s: inout State) {
        s.stats.droppedAttributes = context.droppedAttributes
        if !context.droppedAttributes.isEmpty {
            s.stats.contextTrims += 1
            if s.stats.contextTrims == 1 {
                s.outbox.append(
                    .log(
                        .info,
                        "context trimmed to fit the size cap; dropped: \(context.droppedAttributes.joined(separator: ", "))"
                    ))
            }
        }
    }

    @discardableResult
    private func process(
        _ input: RefreshMachine.Input,
        prepare: (inout State) -> Void = { _ in },
        after: (inout State, RefreshMachine.Step) -> Void = { _, _ in }
    ) -> RefreshMachine.Wait {
        let now = clock.monotonicNow
        let wall = clock.wallNow
        var cancels: [Task<Void, Never>] = []
        let wait = state.withLock { s -> RefreshMachine.Wait in
            prepare(&s)
            let statusBefore = s.machine.status
            let step = s.machine.event(input, now: now, random: &s.random)
            if s.machine.status != statusBefore {
                s.outbox.append(.status(s.machine.status))
                s.outbox.append(.log(.info, "status \(statusBefore) -> \(s.machine.status)"))
            }
            for effect in step.effects { perform(effect, wall: wall, state: &s, cancels: &cancels) }
            after(&s, step)
            settleReadyWaiters(&s, cancels: &cancels)
            reschedule(&s, now: now, cancels: &cancels)
            return step.wait
        }
        for task in cancels { task.cancel() }
        drain()
        return wait
    }

    private func perform(
        _ effect: RefreshMachine.Effect, wall: Date, state s: inout State, cancels: inout [Task<Void, Never>]
    ) {
        switch effect {
        case .send(let request):
            guard let context = s.context, context.fingerprint == request.fingerprint else { return }
            let transportRequest = s.builder.request(
                contextJSON: context.canonicalJSON, ifNoneMatch: request.ifNoneMatch)
            s.stats.requestsSent += 1
            s.outbox.append(
                .log(
                    .debug,
                    "fetch #\(request.id) (\(request.trigger.rawValue))\(request.ifNoneMatch == nil ? "" : " with If-None-Match")"
                ))
            s.tasks[request.id] = Task { [weak self] in
                await self?.execute(request, transportRequest)
            }
        case .cancel(let id):
            if let task = s.tasks.removeValue(forKey: id) { cancels.append(task) }
            s.parsed.removeValue(forKey: id)
        case .apply(let id):
            guard let flags = s.parsed.removeValue(forKey: id), let fingerprint = s.machine.valuesFingerprint else {
                return
            }
            var next: [String: ServedFlag] = [:]
            next.reserveCapacity(flags.count)
            for flag in flags { next[flag.key] = flag }
            var changed = Set<String>()
            for (key, flag) in next {
                guard let old = s.served[key] else {
                    changed.insert(key)
                    continue
                }
                if old.value != flag.value || old.variant != flag.variant || old.reason != flag.reason
                    || old.errorCode != flag.errorCode
                {
                    changed.insert(key)
                }
            }
            for key in s.served.keys where next[key] == nil { changed.insert(key) }
            s.served = next
            s.stats.snapshotsApplied += 1
            s.stats.lastConfirmation = wall
            s.outbox.append(.publish(.values(flags, fingerprint: fingerprint, confirmedAt: wall)))
            if !changed.isEmpty {
                s.outbox.append(.changed(changed))
                s.outbox.append(.event(.configurationChanged(changed)))
            }
        case .confirm:
            s.stats.lastConfirmation = wall
            s.outbox.append(.publish(.confirmed(wall)))
        case .emit(let event):
            if case .error(let code, let message) = event {
                s.outbox.append(
                    .log(code == .providerFatal || message.contains("refused") ? .error : .warning, message))
            }
            s.outbox.append(.event(event))
        case .finished(let id):
            s.tasks.removeValue(forKey: id)
            s.parsed.removeValue(forKey: id)
            if let waiters = s.refreshWaiters.removeValue(forKey: id) { s.outbox.append(.resume(waiters)) }
        case .identifyResolved(let generation, let ok):
            if let waiters = s.identifyWaiters.removeValue(forKey: generation) {
                s.outbox.append(.resumeBool(waiters, ok))
            }
        case .supersede(let below):
            for generation in s.identifyWaiters.keys where generation < below {
                if let waiters = s.identifyWaiters.removeValue(forKey: generation) {
                    s.outbox.append(.resumeBool(waiters, false))
                }
            }
        }
    }

    private func settleReadyWaiters(_ s: inout State, cancels: inout [Task<Void, Never>]) {
        guard !s.readyWaiters.isEmpty else { return }
        let result: Bool
        if s.machine.isConfirmedForCurrentContext {
            result = true
        } else if !s.machine.canBecomeReady {
            result = false
        } else {
            return
        }
        let waiters = s.readyWaiters.values
        s.readyWaiters.removeAll()
        cancels.append(contentsOf: waiters.compactMap(\.timeout))
        s.outbox.append(.resumeBool(waiters.map(\.continuation), result))
    }

    private func reschedule(_ s: inout State, now: Duration, cancels: inout [Task<Void, Never>]) {
        let wake = s.machine.nextWake
        if let timer = s.timer {
            if timer.wake == wake { return }
            cancels.append(timer.task)
            s.timer = nil
        }
        guard let wake else { return }
        let clock = self.clock
        let task = Task { [weak self] in
            // Measured here, not when scheduled, so a clock that moved meanwhile is honoured.
            while case let delay = wake - clock.monotonicNow, delay > .zero {
                do { try await clock.sleep(for: delay) } catch { return }
            }
            self?.timerFired(wake)
        }
        s.timer = (wake, task)
    }

    private func timerFired(_ wake: Duration) {
        let current = state.withLock { s -> Bool in
            guard let timer = s.timer, timer.wake == wake else { return false }
            s.timer = nil
            return true
        }
        if current { process(.timer) }
    }

    private func execute(_ request: RefreshMachine.Request, _ transportRequest: TransportRequest) async {
        let outcome: RefreshMachine.Outcome
        var flags: [ServedFlag]?
        var skipped = 0
        var status: Int?
        do {
            let response = try await transport.send(transportRequest)
            if Task.isCancelled { return }
            status = response.status
            (outcome, flags, skipped) = classify(response)
        } catch let error as TransportError {
            if Task.isCancelled { return }
            switch error {
            case .timedOut: outcome = .transient(.timedOut, retryAfter: nil)
            case .responseTooLarge: outcome = .transient(.tooLarge, retryAfter: nil)
            case .network, .cancelled: outcome = .transient(.network, retryAfter: nil)
            }
        } catch {
            if Task.isCancelled { return }
            outcome = .transient(.network, retryAfter: nil)
        }
        process(.response(requestID: request.id, outcome)) { s in
            guard s.machine.inFlight?.request.id == request.id else { return }
            if let status { s.stats.responsesByStatus[status, default: 0] += 1 }
            s.stats.skippedItems += skipped
            switch outcome {
            case .notModified: s.stats.notModified += 1
            case .transient(.timedOut, _): s.stats.timeouts += 1
            case .transient(.network, _): s.stats.networkErrors += 1
            case .transient(.tooLarge, _): s.stats.oversizedResponses += 1
            case .transient(.invalidBody, _): s.stats.invalidBodies += 1
            default: break
            }
            if let flags { s.parsed[request.id] = flags }
        }
    }

    private func classify(_ response: TransportResponse) -> (RefreshMachine.Outcome, [ServedFlag]?, Int) {
        let retryAfter = response.header("Retry-After").flatMap { RetryAfter.parse($0, now: clock.wallNow) }
        switch response.status {
        case 200:
            do {
                let decoded = try OFREPResponse.decode(response.body, limit: configuration.builder.maxResponseBytes)
                return (.updated(etag: response.header("ETag")), decoded.flags, decoded.skippedItems)
            } catch .tooLarge {
                return (.transient(.tooLarge, retryAfter: nil), nil, 0)
            } catch {
                return (.transient(.invalidBody, retryAfter: nil), nil, 0)
            }
        case 304: return (.notModified, nil, 0)
        case 400: return (.badRequest, nil, 0)
        case 401, 403: return (.unauthorized(status: response.status), nil, 0)
        case 429: return (.rateLimited(retryAfter: retryAfter), nil, 0)
        case 200..<300: return (.transient(.invalidBody, retryAfter: nil), nil, 0)
        default: return (.transient(.status(response.status), retryAfter: retryAfter), nil, 0)
        }
    }

    /// Delivers the outbox in order, from one thread at a time, with no lock held.
    private func drain() {
        while true {
            let batch: [Delivery]? = state.withLock { s in
                if s.draining || s.outbox.isEmpty { return nil }
                s.draining = true
                defer { s.outbox.removeAll() }
                return s.outbox
            }
            guard let batch else { return }
            for delivery in batch { deliver(delivery) }
            state.withLock { $0.draining = false }
        }
    }

    private func deliver(_ delivery: Delivery) {
        switch delivery {
        case .publish(let publication):
            publish(publication)
        case .event(let event):
            let streams = state.withLock { Array($0.streams.values) }
            for stream in streams { stream.yield(event) }
        case .changed(let keys):
            let listeners = state.withLock { Array($0.listeners.values) }
            for listener in listeners {
                let active = listener.active
                let handler = listener.handler
                listener.queue.async {
                    guard active.withLock({ $0 }) else { return }
                    try? handler(keys)
                }
            }
        case .resume(let continuations):
            for c in continuations { c.resume() }
        case .resumeBool(let continuations, let value):
            for c in continuations { c.resume(returning: value) }
        case .log(let level, let message):
            logHandler?(level, message)
        case .status(let status):
            statusChanged(status)
        case .finishStreams:
            let streams = state.withLock { s -> [AsyncStream<ClientEvent>.Continuation] in
                s.streamsFinished = true
                defer { s.streams.removeAll() }
                return Array(s.streams.values)
            }
            for stream in streams { stream.finish() }
        }
    }
}
