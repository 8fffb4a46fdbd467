import Foundation

/// Runs ``RefreshMachine`` against a real transport and clock: sends requests, sleeps until the
/// next poll or retry, classifies responses, hands new values to its ``SyncObserver`` and reports
/// events, status and waiter resumptions in order, never while its lock is held.
final class RefreshEngine: Sendable {
    struct Configuration: Sendable {
        var machine: RefreshMachine.Configuration
        var builder: OFREPRequestBuilder
    }

    private enum Delivery {
        case publish(SyncedValues)
        case confirmed(SyncedConfirmation)
        case event(ClientEvent)
        case resume([CheckedContinuation<Void, Never>])
        case resumeBool([CheckedContinuation<Bool, Never>], Bool)
        case log(HalyardLogRecord)
        case status(ClientStatus)
        case eventStreams([OFREPEventStream])
        /// What `ready()` may report from now on; resolves waiting `ready()` callers.
        case readiness(Readiness)
        case closed
    }

    /// Whether values confirmed for the current context are served, and whether they still can be.
    private struct Readiness: Equatable {
        var confirmed: Bool
        var canBecomeReady: Bool
    }

    private struct ReadyWaiter {
        var continuation: CheckedContinuation<Bool, Never>
        var timeout: Task<Void, Never>?
    }

    private struct State: OutboxState {
        var machine: RefreshMachine
        var random: SplitMix64
        var context: FittedContext?
        var tasks: [UInt64: Task<Void, Never>] = [:]
        var refreshWaiters: [UInt64: [CheckedContinuation<Void, Never>]] = [:]
        /// ``streamFetch(_:)`` callers by request, resumed with whether they joined it.
        var streamWaiters: [UInt64: [(CheckedContinuation<Bool, Never>, joined: Bool)]] = [:]
        /// `identify` callers by generation, then by waiter id (so a cancelled caller can leave).
        var identifyWaiters: [UInt64: [UInt64: CheckedContinuation<Bool, Never>]] = [:]
        var readyWaiters: [UInt64: ReadyWaiter] = [:]
        var nextID: UInt64 = 0
        var timer = WakeTimer()
        var stats = SyncStats()
        /// Readiness as delivered (after the values it describes were published)...
        var reported = Readiness(confirmed: false, canBecomeReady: true)
        /// ...and as last put in the outbox.
        var announced: Readiness?
        var outbox: [Delivery] = []
        var draining = false
    }

    private let configuration: Configuration
    private let transport: any FlagTransport
    private let clock: any HalyardClock
    private let logHandler: HalyardLogRecordHandler?
    /// The control plane's origin, for log records.
    private let logOrigin: String
    private let observer: SyncObserver
    private let state: Locked<State>

    init(
        configuration: Configuration,
        transport: any FlagTransport,
        clock: any HalyardClock,
        logHandler: HalyardLogRecordHandler?,
        seed: UInt64 = UInt64.random(in: .min ... .max),
        observer: SyncObserver
    ) {
        self.configuration = configuration
        self.transport = GuardedTransport.wrapping(transport, logHandler: logHandler)
        self.clock = clock
        self.logHandler = logHandler
        logOrigin = HalyardLogRecord.origin(configuration.builder.identity.baseURL)
        self.observer = observer
        state = Locked(
            State(
                machine: RefreshMachine(configuration: configuration.machine), random: SplitMix64(seed: seed)))
    }

    // MARK: - Public operations

    /// Starts syncing with the initial context (`nil` when it is invalid).
    func start(context: FittedContext?) {
        process(.start(fingerprint: context?.fingerprint)) { s in
            s.context = context
            if let context { Self.noteTrim(context, in: &s) }
        }
    }

    /// The owner now serves values loaded from the on-device cache for the initial context
    /// (see ``RefreshMachine/Input/cachedValues(fingerprint:etag:)``).
    func servedCachedValues(fingerprint: String, etag: String?) {
        process(.cachedValues(fingerprint: fingerprint, etag: etag))
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
    ///
    /// The wait is bounded: when a `Retry-After` defers the fetch past `maxWait` from now, it
    /// returns `false` at once (the fetch stays owed and is sent when the `Retry-After` ends;
    /// ``ClientEvent/contextChanged`` follows). Cancelling the calling task returns `false` at
    /// once too; the context switch itself goes on.
    func identify(_ context: FittedContext, maxWait: Duration) async -> Bool {
        let id = state.withLock { s -> UInt64 in
            s.nextID &+= 1
            return s.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
                var resumeNow = false
                let now = clock.monotonicNow
                process(.identify(fingerprint: context.fingerprint)) { s in
                    guard !s.machine.isClosed else { return }
                    s.context = context
                    Self.noteTrim(context, in: &s)
                } after: { s, step in
                    let deferredTooLong =
                        step.wait == .none && s.machine.pendingFetch
                        && (s.machine.retryNotBefore ?? .zero) - now > maxWait
                    if s.machine.isClosed || deferredTooLong || Task.isCancelled {
                        resumeNow = true
                    } else {
                        s.identifyWaiters[s.machine.generation, default: [:]][id] = c
                    }
                }
                if resumeNow { c.resume(returning: false) }
            }
        } onCancel: {
            let waiter = state.withLock { s -> CheckedContinuation<Bool, Never>? in
                for generation in s.identifyWaiters.keys {
                    if let c = s.identifyWaiters[generation]?.removeValue(forKey: id) { return c }
                }
                return nil
            }
            waiter?.resume(returning: false)
        }
    }

    /// The key changed (the shared ``ClientIdentity`` already holds the new one): cancels the
    /// fetch in flight, lifts a 401/403 stop, and fetches at once (subject to `Retry-After`);
    /// returns when that fetch is over.
    func keyChanged() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            var resumeNow = false
            process(.keyChanged) { _ in
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

    // MARK: - Event stream (docs/protocol.md, "Event streams"; see EventStreamDriver.swift)

    /// The event stream's fetch: sent now (with its `flagConfig*` parameters, or without
    /// `If-None-Match` for `activated`) and returns when it is over. When a fetch for the
    /// current context is already in flight it waits for that one and then sends its own (the
    /// change the event announces may postdate it), at most three rounds. Returns at once when
    /// nothing may be sent (closed, key refused, `Retry-After` or backoff in force).
    /// False when nothing was sent or joined the first time (held back).
    @discardableResult
    func streamFetch(_ fetch: EventStreamMachine.Fetch) async -> Bool {
        var sent = true
        for round in 0..<3 {
            let joined = await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
                var joined: Bool?
                process(.streamFetch(fetch)) { _ in
                } after: { s, step in
                    if case .request(let id) = step.wait {
                        let wasJoined = step.streamJoined
                        joined = wasJoined
                        if !wasJoined { s.stats.streamFetches += 1 }
                        s.streamWaiters[id, default: []].append((c, wasJoined))
                    }
                }
                if joined == nil {
                    if round == 0 { sent = false }
                    c.resume(returning: false)
                }
            }
            if !joined { return sent }
        }
        return sent
    }

    /// Polls at `interval` from now on (the stream's safety net while healthy).
    func setPollInterval(_ interval: Duration) {
        process(.setPollInterval(interval))
    }

    /// The polling interval in force.
    var pollInterval: Duration { state.withLock { $0.machine.pollInterval } }

    /// Waits until values confirmed for the current context are served, or `timeout` passes.
    func ready(timeout: Duration) async -> Bool {
        await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            let immediate: Bool? = state.withLock { s in
                // True only once the confirmed values were published (the readiness delivery
                // follows the publish), and only while the machine still agrees (an identify may
                // have started since).
                if s.machine.isConfirmedForCurrentContext && s.reported.confirmed { return true }
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
    var context: FittedContext? { state.withLock { $0.context } }

    /// Stops polling and fetching; reads keep the last values. Idempotent.
    func close() {
        process(.close) { _ in
        } after: { s, _ in
            s.outbox.append(.closed)
        }
    }

    // MARK: - The loop

    private static func noteTrim(_ context: FittedContext, in s: inout State) {
        s.stats.droppedAttributes = context.droppedAttributes
        if !context.droppedAttributes.isEmpty {
            s.stats.contextTrims += 1
            if s.stats.contextTrims == 1 {
                // Attribute names only: never their values.
                s.outbox.append(
                    .log(
                        HalyardLogRecord(
                            .info,
                            "context trimmed to fit the size cap; dropped: \(context.droppedAttributes.joined(separator: ", "))",
                            .refresh,
                            [
                                HalyardLogRecord.Key.count: "\(context.droppedAttributes.count)",
                                HalyardLogRecord.Key.context: HalyardLogRecord.contextPrefix(context.fingerprint),
                            ])))
            }
        }
    }

    @discardableResult
    private func process(
        _ input: RefreshMachine.Input,
        decoded: OFREPResponse? = nil,
        key: String? = nil,
        prepare: (inout State) -> Void = { _ in },
        after: (inout State, RefreshMachine.Step) -> Void = { _, _ in },
        staleKey: () -> Bool = { false }
    ) -> RefreshMachine.Wait {
        let now = clock.monotonicNow
        let wall = clock.wallNow
        var cancels: [Task<Void, Never>] = []
        let wait = state.withLock { s -> RefreshMachine.Wait in
            // Decided under the lock the machine's inputs take (see `execute`).
            if staleKey() {
                s.stats.staleKeyAnswers += 1
                return .none
            }
            prepare(&s)
            let statusBefore = s.machine.status
            let step = s.machine.event(input, now: now, random: &s.random)
            let mark = s.outbox.count
            for effect in step.effects {
                perform(effect, wall: wall, decoded: decoded, key: key, state: &s, cancels: &cancels)
            }
            if s.machine.status != statusBefore {
                // Right after the values it describes are published, before this step's events.
                var at = mark
                for index in mark..<s.outbox.count {
                    switch s.outbox[index] {
                    case .publish, .confirmed: at = index + 1
                    default: break
                    }
                }
                s.outbox.insert(
                    contentsOf: [
                        .status(s.machine.status),
                        .log(
                            record(
                                .info, "status \(statusBefore) -> \(s.machine.status)",
                                [HalyardLogRecord.Key.previousStatus: "\(statusBefore)"], in: s)),
                    ], at: at)
            }
            after(&s, step)
            let readiness = Readiness(
                confirmed: s.machine.isConfirmedForCurrentContext, canBecomeReady: s.machine.canBecomeReady)
            if readiness != s.announced {
                s.announced = readiness
                s.outbox.append(.readiness(readiness))
            }
            reschedule(&s, cancels: &cancels)
            return step.wait
        }
        for task in cancels { task.cancel() }
        drain()
        return wait
    }

    /// A refresh log record: `facts` with the status now, the context's fingerprint prefix and
    /// the control plane's origin.
    private func record(
        _ level: HalyardLogLevel, _ message: String, _ facts: [String: String], in s: State
    ) -> HalyardLogRecord {
        var facts = facts
        facts[HalyardLogRecord.Key.status] = "\(s.machine.status)"
        facts[HalyardLogRecord.Key.origin] = logOrigin
        if let fingerprint = s.context?.fingerprint {
            facts[HalyardLogRecord.Key.context] = HalyardLogRecord.contextPrefix(fingerprint)
        }
        return HalyardLogRecord(level, message, .refresh, facts)
    }

    private func perform(
        _ effect: RefreshMachine.Effect, wall: Date, decoded: OFREPResponse?, key: String?, state s: inout State,
        cancels: inout [Task<Void, Never>]
    ) {
        switch effect {
        case .send(let request):
            guard let context = s.context, context.fingerprint == request.fingerprint else { return }
            let contextJSON = context.canonicalJSON
            s.stats.requestsSent += 1
            s.outbox.append(
                .log(
                    record(
                        .debug,
                        "fetch #\(request.id) (\(request.trigger.rawValue))\(request.ifNoneMatch == nil ? "" : " with If-None-Match")",
                        [
                            HalyardLogRecord.Key.fetchID: "\(request.id)",
                            HalyardLogRecord.Key.trigger: request.trigger.rawValue,
                        ], in: s)))
            // The request (and its identity headers: the install id is resolved on first use,
            // possibly from disk) is built in the task, never on the caller's thread.
            s.tasks[request.id] = Task { [weak self] in
                await self?.execute(request, contextJSON: contextJSON)
            }
        case .cancel(let id):
            if let task = s.tasks.removeValue(forKey: id) { cancels.append(task) }
        case .apply:
            // Only ever the effect of the response being processed, which carries the flags.
            guard let decoded, let fingerprint = s.machine.valuesFingerprint else { return }
            s.stats.snapshotsApplied += 1
            s.stats.lastConfirmation = wall
            s.outbox.append(
                .publish(
                    SyncedValues(
                        flags: decoded.flags, fingerprint: fingerprint, etag: s.machine.etag, confirmedAt: wall,
                        key: key)))
            s.outbox.append(.eventStreams(decoded.eventStreams))
        case .confirm:
            s.stats.lastConfirmation = wall
            if let fingerprint = s.machine.valuesFingerprint {
                s.outbox.append(
                    .confirmed(
                        SyncedConfirmation(
                            fingerprint: fingerprint, etag: s.machine.etag, confirmedAt: wall, key: key)))
            }
        case .emit(let event):
            s.outbox.append(.event(event))
        case .log(let level, let message, let facts):
            s.outbox.append(.log(record(level, message, facts, in: s)))
        case .finished(let id):
            s.tasks.removeValue(forKey: id)
            if let waiters = s.refreshWaiters.removeValue(forKey: id) { s.outbox.append(.resume(waiters)) }
            if let waiters = s.streamWaiters.removeValue(forKey: id) {
                // Joined callers ask again (true); the others are done (false).
                let joined = waiters.filter(\.joined).map(\.0)
                let own = waiters.filter { !$0.joined }.map(\.0)
                if !joined.isEmpty { s.outbox.append(.resumeBool(joined, true)) }
                if !own.isEmpty { s.outbox.append(.resumeBool(own, false)) }
            }
        case .identifyResolved(let generation, let ok):
            if let waiters = s.identifyWaiters.removeValue(forKey: generation) {
                s.outbox.append(.resumeBool(Array(waiters.values), ok))
            }
        case .supersede(let below):
            for generation in s.identifyWaiters.keys where generation < below {
                if let waiters = s.identifyWaiters.removeValue(forKey: generation) {
                    s.outbox.append(.resumeBool(Array(waiters.values), false))
                }
            }
        }
    }

    private func reschedule(_ s: inout State, cancels: inout [Task<Void, Never>]) {
        s.timer.schedule(s.machine.nextWake, clock: clock, cancels: &cancels) { [weak self] wake in
            self?.timerFired(wake)
        }
    }

    private func timerFired(_ wake: Duration) {
        if state.withLock({ $0.timer.take(wake) }) { process(.timer) }
    }

    private func execute(_ request: RefreshMachine.Request, contextJSON: String) async {
        // Read once: the answer is saved under the key this request carried (docs/cache.md).
        let key = configuration.builder.identity.key
        let transportRequest = configuration.builder.request(
            contextJSON: contextJSON, ifNoneMatch: request.ifNoneMatch, flagConfig: request.flagConfig, key: key)
        let outcome: RefreshMachine.Outcome
        var decoded: OFREPResponse?
        var status: Int?
        do {
            let response = try await transport.send(transportRequest)
            if Task.isCancelled { return }
            status = response.status
            (outcome, decoded) = RefreshMachine.Outcome.classify(
                response, maxResponseBytes: configuration.builder.maxResponseBytes, wallNow: clock.wallNow,
                controlPlane: configuration.builder.identity.baseURL)
        } catch let error as TransportError {
            if Task.isCancelled { return }
            switch error {
            case .timedOut: outcome = .transient(.timedOut, retryAfter: nil)
            case .responseTooLarge: outcome = .transient(.tooLarge, retryAfter: nil)
            case .network, .cancelled, .redirectRefused: outcome = .transient(.network, retryAfter: nil)
            }
        } catch {
            if Task.isCancelled { return }
            outcome = .transient(.network, retryAfter: nil)
        }
        // An answer to a request sent with a key `setKey` has replaced is ignored whatever its
        // status (SPEC §12): not applied, not cached, no pause, no failure. Checked under the
        // engine's lock: `setKey` replaces the key before its `keyChanged` takes that lock, so
        // an answer processed after the key changed never reaches the machine, even before
        // `keyChanged` has cancelled its request.
        let identity = configuration.builder.identity
        process(
            .response(requestID: request.id, outcome), decoded: decoded, key: key,
            prepare: { s in
                guard s.machine.inFlight?.request.id == request.id else { return }
                if let status { s.stats.responsesByStatus[status, default: 0] += 1 }
                s.stats.skippedItems += decoded?.skippedItems ?? 0
                switch outcome {
                case .notModified: s.stats.notModified += 1
                case .transient(.timedOut, _): s.stats.timeouts += 1
                case .transient(.network, _): s.stats.networkErrors += 1
                case .transient(.tooLarge, _): s.stats.oversizedResponses += 1
                case .transient(.invalidBody, _): s.stats.invalidBodies += 1
                default: break
                }
            },
            staleKey: { identity.key != key })
    }

    /// Delivers the outbox in order, from one thread at a time, with no lock held.
    private func drain() { state.drain(deliver) }

    private func deliver(_ delivery: Delivery) {
        switch delivery {
        case .publish(let values):
            let changed = observer.publish(values)
            if !changed.isEmpty { observer.event(.configurationChanged(changed)) }
        case .confirmed(let confirmation):
            let changed = observer.confirmed(confirmation)
            if !changed.isEmpty { observer.event(.configurationChanged(changed)) }
        case .event(let event):
            observer.event(event)
        case .resume(let continuations):
            for c in continuations { c.resume() }
        case .resumeBool(let continuations, let value):
            for c in continuations { c.resume(returning: value) }
        case .log(let record):
            logHandler?(record)
        case .status(let status):
            observer.status(status)
        case .eventStreams(let streams):
            observer.eventStreams(streams)
        case .readiness(let readiness):
            let waiters = state.withLock { s -> [ReadyWaiter] in
                s.reported = readiness
                guard readiness.confirmed || !readiness.canBecomeReady else { return [] }
                defer { s.readyWaiters.removeAll() }
                return Array(s.readyWaiters.values)
            }
            for waiter in waiters {
                waiter.timeout?.cancel()
                waiter.continuation.resume(returning: readiness.confirmed)
            }
        case .closed:
            observer.closed()
        }
    }
}
