import CHalyardAtomics
import Foundation

/// The in-process half of a ``FlagService`` built with ``FlagServiceOptions/definitions``
/// (SPEC §17, docs/in-process.md): the ``DefinitionsFeed`` that keeps the definitions
/// published, the current ``DefinitionsGeneration``, and each context's results
/// (``InProcessMemo``). No request is made per context: a view's snapshot is evaluated here
/// from the definitions, or reused when the same context was evaluated from the same
/// generation (and, for rules reading `$flagd.timestamp`, in the same second).
final class InProcessEvaluator: Sendable {
    let feed: DefinitionsFeed
    let memo: InProcessMemo
    private let clock: any HalyardClock
    private let state: Locked<State>

    private struct State: Sendable {
        var generation: DefinitionsGeneration?
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter: UInt64 = 0
        var closed = false
    }

    /// Atomic counters (``Word``).
    enum Word: Int, CaseIterable {
        case contextsEvaluated, resultsReused, evaluations
    }

    nonisolated(unsafe) private let words: UnsafeMutablePointer<hal_atomic_word>

    /// Opens the source (nothing is read until ``start()``).
    /// - Throws: ``DefinitionsSourceError/unusable(reason:)`` for a source that cannot be used.
    init(options: FlagServiceOptions, source: DefinitionsSource, transport: any FlagTransport)
        throws(DefinitionsSourceError)
    {
        let state = Locked(State())
        let clock = options.clock
        // First: the one step that throws, before anything a deinit would have to undo.
        feed = try DefinitionsFeed(
            source: source, transport: transport, clock: clock, pollInterval: options.definitionsPollInterval,
            requestTimeout: options.requestTimeout, logHandler: options.logSink,
            onPublish: { definitions in Self.install(definitions, into: state, loadedAt: clock.wallNow) })
        self.state = state
        self.clock = clock
        memo = InProcessMemo(maxContexts: options.maxContexts, maxBytes: options.maxCacheBytes)
        words = .allocate(capacity: Word.allCases.count)
        words.initialize(repeating: hal_atomic_word(value: 0), count: Word.allCases.count)
    }

    deinit {
        feed.close()
        words.deallocate()
    }

    /// Publishes `definitions` as the next generation and wakes the requests waiting for the
    /// first one. Called by the feed, off its locks, once per document loaded.
    private static func install(_ definitions: FlagDefinitions, into state: Locked<State>, loadedAt: Date) {
        // Built before the lock: the shared key table and fixed results are the expensive part.
        let number = state.withLock { ($0.generation?.number ?? 0) + 1 }
        let generation = DefinitionsGeneration(definitions: definitions, number: number, loadedAt: loadedAt)
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            // Publications come one at a time (the feed checks once at a time), so `number`
            // is still next; the check keeps it so should that ever change.
            if let current = s.generation, current.number >= number { return [] }
            s.generation = generation
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Starts reading the source: at once, then at the poll interval.
    func start() { feed.start() }

    /// Stops reading the source and wakes every waiter; the definitions in use stay.
    func close() {
        feed.close()
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.closed = true
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// The definitions in use (nil before the first load).
    var current: DefinitionsGeneration? { state.withLock { $0.generation } }

    /// The definitions in use, waiting at most `timeout` (on the service's clock) for the first
    /// ones when none are loaded yet.
    func firstDefinitions(timeout: Duration) async -> DefinitionsGeneration? {
        if let current { return current }
        let id = state.withLock { s -> UInt64 in
            s.nextWaiter += 1
            return s.nextWaiter
        }
        let clock = self.clock
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let waiting = state.withLock { s -> Bool in
                    guard s.generation == nil, !s.closed else { return false }
                    s.waiters[id] = continuation
                    return true
                }
                guard waiting else { return continuation.resume() }
                Task { [weak self] in
                    try? await clock.sleep(for: timeout)
                    self?.wake(id)
                }
            }
        } onCancel: {
            wake(id)
        }
        return current
    }

    private func wake(_ id: UInt64) {
        state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
    }

    /// The results of every flag for `context` (whose warm-path entry is `entry`) from
    /// `generation`: reused when held for the same context and generation (and second, when a
    /// rule reads the time), else evaluated and held.
    func snapshot(for entry: FittingMemo.Entry, _ context: EvaluationContext, _ generation: DefinitionsGeneration)
        -> Snapshot
    {
        let second = Self.second(clock.wallNow)
        let held = memo.item(entry)
        if let held, held.generation == generation.number, !generation.readsTimestamp || held.second == second {
            _ = hal_fetch_add(words + Word.resultsReused.rawValue, 1)
            return held.snapshot
        }
        let snapshot = evaluate(context, entry.fitted.fingerprint, generation, second, previous: held?.snapshot)
        memo.store(
            InProcessMemo.Item(
                entry: entry, generation: generation.number, second: second, snapshot: snapshot,
                bytes: snapshot.estimatedBytes(keysShared: true)))
        return snapshot
    }

    /// The results for a context given fitted: evaluated at each call, from its kept (public)
    /// attributes (docs/in-process.md, "Per-context results").
    func snapshot(for fitted: FittedContext, _ generation: DefinitionsGeneration) -> Snapshot {
        evaluate(fitted.context, fitted.fingerprint, generation, Self.second(clock.wallNow), previous: nil)
    }

    private func evaluate(
        _ context: EvaluationContext, _ fingerprint: String, _ generation: DefinitionsGeneration, _ second: Int64,
        previous: Snapshot?
    ) -> Snapshot {
        _ = hal_fetch_add(words + Word.contextsEvaluated.rawValue, 1)
        _ = hal_fetch_add(words + Word.evaluations.rawValue, UInt(generation.targetedCount))
        // Results built once per generation, picked per flag (no ServedFlag copied, no detail
        // built but a failure's).
        let (entries, details) = generation.evaluateAll(context, timestamp: second)
        // The previous results of the same context hand over their exposure slots (a variant
        // that did not change is not exposed again within the window).
        return Snapshot.make(
            entries: entries, details: details, source: .network, confirmedAt: generation.loadedAt,
            contextFingerprint: fingerprint, inheritingFrom: previous, sharing: generation.table)
    }

    /// `date` in whole seconds since 1970 (`$flagd.timestamp`).
    static func second(_ date: Date) -> Int64 {
        Int64(date.timeIntervalSince1970.rounded(.down))
    }

    /// The service's status from the definitions: `notReady` until the first load, then `ready`
    /// (later failures keep the definitions and show in ``FlagServiceStats/definitions``).
    var status: ClientStatus { current == nil ? .notReady : .ready }

    /// The definitions' part of the service's stats.
    var stats: FlagServiceStats.DefinitionsStats {
        var stats = FlagServiceStats.DefinitionsStats()
        stats.source = feed.stats
        let generation = current
        stats.generation = Int(generation?.number ?? 0)
        stats.flagCount = generation?.keys.count ?? 0
        stats.contextsEvaluated = Int(hal_load_relaxed(words + Word.contextsEvaluated.rawValue))
        stats.resultsReused = Int(hal_load_relaxed(words + Word.resultsReused.rawValue))
        stats.evaluations = Int(hal_load_relaxed(words + Word.evaluations.rawValue))
        let totals = memo.totals
        stats.contextsHeld = totals.count
        stats.bytesHeld = totals.bytes
        stats.evictions = totals.evictions
        return stats
    }
}
