import Foundation

/// Keeps the current ``FlagDefinitions`` of one ``DefinitionsSource`` published
/// (docs/definitions.md, "Sources"): the I/O shell of ``DefinitionsPollMachine``.
///
/// - ``current`` is an immutable, compiled snapshot: a reader gets one consistent document, and
///   a new one replaces it whole. Nothing is published before the first document loads.
/// - A document that is malformed or schema-invalid is refused: a typed error in
///   ``stats``' `lastError`, one log line at `.error`, the definitions in use kept.
/// - Every publication is sent to ``updates()`` streams and to the `onPublish` callback (called
///   off any lock, on the checking task), for the service that evaluates them.
/// - ``start()`` checks at once and then at the machine's intervals on the injected clock;
///   ``check()`` checks now (or joins the check running); ``close()`` stops both and ends the
///   streams.
package final class DefinitionsFeed: Sendable {
    /// The source followed.
    package let source: DefinitionsSource
    private let transport: any FlagTransport
    private let clock: any HalyardClock
    private let logHandler: HalyardLogRecordHandler?
    private let requestTimeout: Duration
    private let onPublish: (@Sendable (FlagDefinitions) -> Void)?
    private let published = Locked<FlagDefinitions?>(nil)
    private let state: Locked<State>

    private struct State: Sendable {
        var machine: DefinitionsPollMachine
        var stats = DefinitionsSourceStats()
        var file: DefinitionsFileCheck?
        var random: SplitMix64
        var running: Task<Void, Never>?
        var loop: Task<Void, Never>?
        var subscribers: [UInt64: AsyncStream<FlagDefinitions>.Continuation] = [:]
        var nextSubscriber: UInt64 = 0
    }

    /// A feed for `source`, not started. `transport` is guarded (its request timeout enforced);
    /// an HTTP source's failures back off (1 s doubling to 5 min, jittered) with `Retry-After`
    /// as a floor; a file source retries a failure at the poll interval.
    /// - Throws: ``DefinitionsSourceError/unusable(reason:)`` for a source that cannot be used.
    package init(
        source: DefinitionsSource,
        transport: (any FlagTransport)? = nil,
        clock: any HalyardClock = SystemClock(),
        pollInterval: Duration = .seconds(30),
        pollJitter: Double = 0.1,
        requestTimeout: Duration = .seconds(10),
        logHandler: HalyardLogRecordHandler? = nil,
        seed: UInt64 = UInt64.random(in: .min ... .max),
        onPublish: (@Sendable (FlagDefinitions) -> Void)? = nil
    ) throws(DefinitionsSourceError) {
        var configuration = DefinitionsPollMachine.Configuration(
            pollInterval: max(pollInterval, .milliseconds(1)), pollJitter: pollJitter)
        var file: DefinitionsFileCheck?
        switch source {
        case .file(let url):
            guard url.isFileURL else { throw .unusable(reason: "\(url) is not a file URL") }
            configuration.backoff = nil
            file = DefinitionsFileCheck(url: url)
        case .http(let url, let headers):
            try DefinitionsHTTPCheck.validate(url: url, headers: headers)
        }
        self.source = source
        self.transport = GuardedTransport.wrapping(
            transport ?? makeDefaultTransport(logHandler: logHandler), logHandler: logHandler)
        self.clock = clock
        self.logHandler = logHandler
        self.requestTimeout = requestTimeout
        self.onPublish = onPublish
        state = Locked(
            State(
                machine: DefinitionsPollMachine(configuration: configuration), file: file,
                random: SplitMix64(seed: seed)))
    }

    deinit {
        let (loop, running) = state.withLock { ($0.loop, $0.running) }
        loop?.cancel()
        running?.cancel()
    }

    /// The definitions in use (nil before the first load).
    package var current: FlagDefinitions? { published.value }

    /// What the feed has done so far.
    package var stats: DefinitionsSourceStats { state.withLock { $0.stats } }

    /// When the next scheduled check is due (monotonic; nil when closed or not yet checked).
    package var nextCheck: Duration? { state.withLock { $0.machine.nextCheck } }

    /// No check goes before this (the end of a `Retry-After`); nil when none applies.
    package var retryNotBefore: Duration? { state.withLock { $0.machine.retryNotBefore } }

    /// A stream of the definitions published from now on, starting with the current ones (if
    /// any); it keeps the newest only when its reader is behind, and ends at ``close()``.
    package func updates() -> AsyncStream<FlagDefinitions> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: FlagDefinitions.self, bufferingPolicy: .bufferingNewest(1))
        let added = state.withLock { s -> Bool in
            guard !s.machine.isClosed else { return false }
            s.nextSubscriber += 1
            let id = s.nextSubscriber
            s.subscribers[id] = continuation
            continuation.onTermination = { [weak self] _ in
                self?.state.withLock { _ = $0.subscribers.removeValue(forKey: id) }
            }
            if let current = published.value { continuation.yield(current) }
            return true
        }
        if !added { continuation.finish() }
        return stream
    }

    /// Starts checking: at once, then at the poll interval (or after the backoff). Idempotent.
    /// The loop holds the feed only while it checks: a feed dropped without ``close()`` stops
    /// at its next wake.
    package func start() {
        let clock = self.clock
        state.withLock { s in
            guard s.loop == nil, !s.machine.isClosed else { return }
            s.loop = Task { [weak self] in
                while !Task.isCancelled {
                    guard let wait = self?.waitBeforeNextCheck() else { return }
                    if wait > .zero {
                        do { try await clock.sleep(for: wait) } catch { return }
                    } else {
                        await self?.check()
                    }
                }
            }
        }
    }

    /// Checks the source now, or waits for the check already running; returns without checking
    /// when closed or while a `Retry-After` forbids it.
    package func check() async {
        let task = state.withLock { s -> Task<Void, Never>? in
            switch s.machine.begin(now: clock.monotonicNow) {
            case .check(let validator):
                let task = Task { await self.perform(validator: validator) }
                s.running = task
                return task
            case .busy: return s.running
            case .deferred, .closed: return nil
            }
        }
        await task?.value
    }

    /// Stops checking and ends the ``updates()`` streams; the current definitions stay readable.
    package func close() {
        let (loop, running, subscribers) = state.withLock { s in
            s.machine.close()
            defer {
                s.subscribers = [:]
                s.loop = nil
            }
            return (s.loop, s.running, Array(s.subscribers.values))
        }
        loop?.cancel()
        running?.cancel()
        for subscriber in subscribers { subscriber.finish() }
    }

    // MARK: - The loop

    /// How long until the next check is due (zero: now); nil when closed.
    private func waitBeforeNextCheck() -> Duration? {
        state.withLock { s -> Duration? in
            if s.machine.isClosed { return nil }
            let now = clock.monotonicNow
            let due = max(s.machine.nextCheck ?? now, s.machine.retryNotBefore ?? now)
            return due - now
        }
    }

    // MARK: - One check

    private func perform(validator: String?) async {
        let result: Result<(Data, String?)?, DefinitionsSourceError>
        var retryAfter: Duration?
        switch source {
        case .file(let url):
            // The check runs alone (the machine's one slot), so the file state is ours to take
            // out: the file is read and hashed off the lock (`stats` readers do not wait).
            var file = state.withLock { $0.file } ?? DefinitionsFileCheck(url: url)
            let finding = file.check(validator: validator)
            state.withLock { $0.file = file }
            switch finding {
            case .unchanged: result = .success(nil)
            case .document(let data, let hash): result = .success((data, hash))
            case .failed(let error): result = .failure(error)
            }
        case .http(let url, let headers):
            let request = DefinitionsHTTPCheck.request(
                url: url, headers: headers, validator: validator, timeout: requestTimeout)
            let answer: Result<TransportResponse, TransportError>
            do {
                answer = .success(try await transport.send(request))
            } catch {
                answer = .failure(error as? TransportError ?? .network("\(error)"))
            }
            switch DefinitionsHTTPCheck.classify(answer, now: clock.wallNow) {
            case .notModified: result = .success(nil)
            case .document(let data, let etag): result = .success((data, etag))
            case .failed(let error, let delay):
                result = .failure(error)
                retryAfter = delay
            }
        }
        switch result {
        case .success(nil):
            finish(.notModified) { $0.notModified += 1 }
        case .success(let (data, validator)?):
            do {
                let definitions = try FlagDefinitions(parsing: data)
                publish(definitions, validator: validator)
            } catch {
                let delay = finish(.refused(validator: validator)) { stats in
                    stats.refusals += 1
                    stats.lastError = .invalidDefinitions(error)
                }
                if delay != nil {
                    logHandler?(
                        HalyardLogRecord(
                            .error, "flag definitions from \(source) refused, the previous ones kept: \(error)",
                            .definitions, logFacts([HalyardLogRecord.Key.reason: "invalid_definitions"])))
                }
            }
        case .failure(let error):
            let delay = finish(.failed(retryAfter: retryAfter)) { stats in
                stats.failures += 1
                stats.lastError = error
            }
            if let delay {
                logHandler?(
                    HalyardLogRecord(
                        .warning, "flag definitions from \(source) not checked: \(error); next check in \(delay)",
                        .definitions, logFacts([HalyardLogRecord.Key.retryIn: HalyardLogRecord.seconds(delay)])))
            }
        }
    }

    /// Feeds `outcome` to the machine and updates the stats; the delay to the next check (nil
    /// when closed).
    @discardableResult
    private func finish(
        _ outcome: DefinitionsPollMachine.Outcome, _ update: (inout DefinitionsSourceStats) -> Void
    ) -> Duration? {
        state.withLock { s -> Duration? in
            s.running = nil
            let unit = s.random.unit()
            let delay = s.machine.finish(outcome, now: clock.monotonicNow, unit: unit)
            guard !s.machine.isClosed else { return nil }
            update(&s.stats)
            return delay
        }
    }

    /// `facts` with the source's origin (an HTTP source's; a file has none).
    private func logFacts(_ facts: [String: String]) -> [String: String] {
        guard case .http(let url, _) = source else { return facts }
        return facts.merging([HalyardLogRecord.Key.origin: HalyardLogRecord.origin(url)]) { $1 }
    }

    private func publish(_ definitions: FlagDefinitions, validator: String?) {
        let subscribers = state.withLock { s -> [AsyncStream<FlagDefinitions>.Continuation]? in
            s.running = nil
            let unit = s.random.unit()
            s.machine.finish(.loaded(validator: validator), now: clock.monotonicNow, unit: unit)
            guard !s.machine.isClosed else { return nil }
            published.withLock { $0 = definitions }
            s.stats.loads += 1
            s.stats.lastError = nil
            s.stats.lastLoad = clock.wallNow
            s.stats.flagCount = definitions.count
            return Array(s.subscribers.values)
        }
        guard let subscribers else { return }
        logHandler?(
            HalyardLogRecord(
                .info, "flag definitions from \(source) loaded: \(definitions.count) flags", .definitions,
                logFacts([HalyardLogRecord.Key.count: "\(definitions.count)"])))
        for subscriber in subscribers { subscriber.yield(definitions) }
        onPublish?(definitions)
    }
}
