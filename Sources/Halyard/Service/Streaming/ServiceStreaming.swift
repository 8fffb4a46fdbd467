import Foundation

/// Service mode's event stream (SPEC §14, docs/service.md "Event streams"): one stream per
/// service, following what the latest bulk response advertised (a new URL replaces the stream,
/// a 200 without one closes it, as for a client). A `refetchEvaluation`
/// (and a reconnect) starts a refresh wave: the held contexts used since the last wave are
/// refreshed most recently used first, by at most `maxConcurrentFetches` workers and at most
/// ``requestsPerSecond`` requests/s (a token bucket on the injected clock), with
/// `If-None-Match`; every other held context is marked stale (confirmed before the wave), so
/// its next use serves the held values and refreshes it in the background.
final class ServiceStreaming: Sendable {
    /// The wave's request rate ceiling.
    static let requestsPerSecond = 200.0

    private struct Used {
        var fitted: FittedContext
        var usedAt: Duration
        /// The bytes reserved for it in the cache's budget (given back when the wave is done
        /// with it: refreshed, merged into another entry, or dropped).
        var bytes: Int
        /// The flag configuration version of the latest wave that queued it.
        var flagConfig: FlagConfigVersion? = nil
    }

    private struct Roster {
        /// The version of the latest event's wave: what a context ``ServiceStreaming/staleBefore``
        /// marks is fetched with (a connect's wave keeps it: the event's change may not be
        /// seen yet).
        var staleFlagConfig: FlagConfigVersion?
        /// The contexts the waves still have to refresh, most recently used LAST (workers take
        /// from the end). A new wave merges into it, so the contexts used most recently go
        /// first even while an earlier wave (a connect wave over every held context, at
        /// 200 requests/s) is still running.
        var pending: [Used] = []
        /// Running workers (at most the concurrency bound; counted from when a wave reserves
        /// them) and their tasks, for `close`.
        var running = 0
        var workers: [UInt64: Task<Void, Never>] = [:]
        var exited: Set<UInt64> = []
        var nextWorker: UInt64 = 0
        var closed = false
        var waves = 0
        var waveRefreshes = 0
        /// The bytes reserved for the contexts the waves hold (pending, or being refreshed).
        var heldBytes = 0

        /// Merges `taken` into `pending` (a context already pending keeps one place, at its
        /// latest use) for the wave of `fetch`, and answers how many contexts were added and
        /// the bytes of the copies merged away (to give back).
        mutating func merge(_ taken: [Used], fetch: EventStreamMachine.Fetch) -> (added: Int, merged: Int) {
            var added = 0
            var merged = 0
            var byFingerprint: [String: Used] = [:]
            byFingerprint.reserveCapacity(pending.count + taken.count)
            for var entry in pending {
                // The latest event's parameters describe the configuration to fetch now; a
                // connect's wave keeps those of an event whose refresh is still owed.
                entry.flagConfig = EventStreamMachine.Fetch.flagConfig(entry.flagConfig, then: fetch)
                byFingerprint[entry.fitted.fingerprint] = entry
            }
            for var entry in taken {
                let fingerprint = entry.fitted.fingerprint
                let old = byFingerprint[fingerprint]
                entry.flagConfig = EventStreamMachine.Fetch.flagConfig(old?.flagConfig, then: fetch)
                if let old {
                    if entry.usedAt > old.usedAt {
                        byFingerprint[fingerprint] = entry
                        merged += old.bytes
                    } else {
                        merged += entry.bytes
                    }
                } else {
                    byFingerprint[fingerprint] = entry
                    added += 1
                }
            }
            pending = byFingerprint.values.sorted { $0.usedAt < $1.usedAt }
            return (added, merged)
        }

        /// Drops every pending context; returns their bytes (to give back).
        mutating func dropPending() -> Int {
            let bytes = pending.reduce(0) { $0 + $1.bytes }
            pending.removeAll()
            heldBytes -= bytes
            return bytes
        }
    }

    private struct Bucket {
        var tokens: Double
        var updatedAt: Duration
    }

    let driver: EventStreamDriver
    private let clock: any HalyardClock
    /// Where uses are recorded (per shard, under the lock a lookup holds anyway) and the
    /// contexts a wave holds are marked (`ContextCache+StreamUses.swift`).
    private let cache: ContextCache
    private let concurrency: Int
    private let roster = Locked(Roster())
    private let bucket: Locked<Bucket>
    /// Whether the stream is connected: lookups record their use for the next wave only then.
    private let tracking = AtomicU64(0)
    /// Held values confirmed before this (nanoseconds on the service's monotonic clock) are
    /// stale: refreshed on their next use. `Int64.min`: no wave yet.
    private let staleBeforeNanoseconds = AtomicU64(UInt64(bitPattern: .min))

    init(
        driver: EventStreamDriver, clock: any HalyardClock, cache: ContextCache, maxConcurrentFetches: Int
    ) {
        self.driver = driver
        self.clock = clock
        self.cache = cache
        concurrency = max(maxConcurrentFetches, 1)
        bucket = Locked(Bucket(tokens: Self.requestsPerSecond, updatedAt: clock.monotonicNow))
    }

    /// The service's stream for its options: only with ``ChangeDetection/automatic`` and a
    /// transport that can stream.
    static func make(
        options: FlagServiceOptions, identity: ClientIdentity, transport: any FlagTransport, cache: ContextCache
    ) -> ServiceStreaming? {
        guard options.changeDetection == .automatic, let streaming = GuardedTransport.streaming(transport) else {
            return nil
        }
        var machine = EventStreamMachine.Configuration()
        // The service does not poll: `refreshAfter` is its safety net.
        machine.pollInterval = .zero
        // A wave is already limited (200 requests/s, `maxConcurrentFetches`) and coalesced.
        machine.minEventFetchSpacing = .zero
        machine.connectTimeout = options.requestTimeout > .zero ? options.requestTimeout : .seconds(10)
        let driver = EventStreamDriver(
            configuration: .init(machine: machine, identity: identity), transport: streaming, clock: options.clock,
            logHandler: options.logSink)
        return ServiceStreaming(
            driver: driver, clock: options.clock, cache: cache, maxConcurrentFetches: options.maxConcurrentFetches)
    }

    /// Whether a lookup records its use for the next wave (a stream is connected): one atomic
    /// load.
    var isTracking: Bool { tracking.loadRelaxed() != 0 }

    /// Held values confirmed before this are stale (nil: no wave yet): one atomic load.
    var staleBefore: Duration? {
        let nanoseconds = Int64(bitPattern: staleBeforeNanoseconds.load())
        return nanoseconds == .min ? nil : .nanoseconds(nanoseconds)
    }

    /// The flag configuration version of the event whose wave set ``staleBefore``: read only
    /// when a lookup found its context marked (once per context per wave).
    var staleFlagConfig: FlagConfigVersion? { roster.withLock { $0.staleFlagConfig } }

    /// The driver says whether the stream is connected: uses are recorded only while it is;
    /// those recorded are dropped when it stops being (its reconnect's wave marks every held
    /// context stale, so none is missed).
    func connected(_ isConnected: Bool) {
        tracking.store(isConnected ? 1 : 0)
        if !isConnected { cache.dropStreamUses() }
    }

    /// A context the service sent a request for lately: what a re-learn fetch sends
    /// (``FlagService/relearnStream()``).
    private let lastFetched = Locked<FittedContext?>(nil)

    /// The context of a fetch the service starts (one lock per fetch, off the lookup path).
    func noteFetched(_ fitted: FittedContext) {
        lastFetched.withLock { $0 = fitted }
    }

    /// The context a re-learn fetch sends, nil before any fetch.
    var relearnContext: FittedContext? { lastFetched.withLock { $0 } }

    /// The streams a 200 bulk response advertised: the driver follows the first (the same URL
    /// keeps its connection, another replaces it, none closes it: SPEC §14, client and service
    /// alike).
    func advertised(_ streams: [OFREPEventStream]) {
        driver.advertised(streams)
    }

    /// Waves started and refreshes sent by them, and the bytes of the contexts the waves hold.
    var counters: (waves: Int, refreshes: Int, heldBytes: Int) {
        roster.withLock { ($0.waves, $0.waveRefreshes, $0.heldBytes) }
    }

    /// One wave (for the stream's `fetch`: its `flagConfig*` values, and whether it is an
    /// event's): marks every held context stale, then queues the contexts used since the
    /// last wave for a refresh through `refresh` (which returns when that fetch is over), most
    /// recently used first, merged with what earlier waves still have to do. Returns once the
    /// work is queued and its workers started: the stream's next event is not held behind a
    /// long wave; it starts the next wave, whose contexts go first.
    func wave(
        _ fetch: EventStreamMachine.Fetch,
        refresh: @escaping @Sendable (FittedContext, FlagConfigVersion?) async -> Void
    ) async {
        let now = clock.monotonicNow
        // The uses, shard by shard (off the lookup path); then the roster, never under a shard.
        let taken = cache.takeStreamUses().map { Used(fitted: $0.fitted, usedAt: $0.usedAt, bytes: $0.bytes) }
        var giveBack = 0
        defer { cache.releaseStreamBytes(giveBack) }
        let start = roster.withLock { r -> [UInt64] in
            guard !r.closed else {
                giveBack = taken.reduce(0) { $0 + $1.bytes }
                return []
            }
            r.staleFlagConfig = EventStreamMachine.Fetch.flagConfig(r.staleFlagConfig, then: fetch)
            staleBeforeNanoseconds.store(UInt64(bitPattern: Self.nanoseconds(now)))
            r.waves += 1
            r.heldBytes += taken.reduce(0) { $0 + $1.bytes }
            let (added, merged) = r.merge(taken, fetch: fetch)
            r.waveRefreshes += added
            r.heldBytes -= merged
            giveBack = merged
            let wanted = min(concurrency, r.pending.count) - r.running
            guard wanted > 0 else { return [] }
            r.running += wanted
            let ids = (0..<UInt64(wanted)).map { r.nextWorker + $0 }
            r.nextWorker += UInt64(wanted)
            return ids
        }
        for id in start {
            let task = Task { [self] in await self.work(id, refresh: refresh) }
            roster.withLock { r in
                if r.exited.remove(id) == nil { r.workers[id] = task }
            }
        }
    }

    /// A wave worker: refreshes pending contexts, one token each, until none is left. It
    /// leaves the worker table in the same critical section that finds nothing pending, so a
    /// wave merging work meanwhile never counts a worker that is on its way out.
    private func work(
        _ id: UInt64, refresh: @escaping @Sendable (FittedContext, FlagConfigVersion?) async -> Void
    ) async {
        func leave(_ r: inout Roster) {
            r.running -= 1
            if r.workers.removeValue(forKey: id) == nil { r.exited.insert(id) }
        }
        while true {
            // The token first, then the context: a context is chosen when it can be sent, so a
            // wave merged while this worker waited for a token is served first.
            let idle = roster.withLock { r -> Bool in
                guard !r.closed, !Task.isCancelled, !r.pending.isEmpty else {
                    leave(&r)
                    return true
                }
                return false
            }
            if idle { return }
            guard await takeToken() else {
                let bytes = roster.withLock { r -> Int in
                    defer { leave(&r) }
                    return r.dropPending()
                }
                cache.releaseStreamBytes(bytes)
                cache.clearStreamQueued()
                return
            }
            let next = roster.withLock { r -> Used? in
                guard !r.closed, let entry = r.pending.popLast() else {
                    leave(&r)
                    return nil
                }
                return entry
            }
            guard let next else {
                refundToken()
                return
            }
            await refresh(next.fitted, next.flagConfig)
            cache.streamDone(next.fitted.fingerprint)
            roster.withLock { $0.heldBytes -= next.bytes }
            cache.releaseStreamBytes(next.bytes)
        }
    }

    /// `duration` in whole nanoseconds (saturating), above `Int64.min`: that is "no wave yet".
    private static func nanoseconds(_ duration: Duration) -> Int64 {
        max(duration.saturatingNanoseconds, .min + 1)
    }

    /// Gives back a token taken for a context that another worker sent first.
    private func refundToken() {
        bucket.withLock { $0.tokens = min(Self.requestsPerSecond, $0.tokens + 1) }
    }

    /// Takes one token from the bucket, sleeping on the clock until one is there. False when
    /// the task was cancelled.
    private func takeToken() async -> Bool {
        while !Task.isCancelled {
            let wait = bucket.withLock { b -> Duration in
                let now = clock.monotonicNow
                let elapsed = now - b.updatedAt
                let seconds = elapsed.fractionalSeconds
                b.tokens = min(Self.requestsPerSecond, b.tokens + seconds * Self.requestsPerSecond)
                b.updatedAt = now
                if b.tokens >= 1 {
                    b.tokens -= 1
                    return .zero
                }
                return .nanoseconds(Int64((1 - b.tokens) / Self.requestsPerSecond * 1e9) + 1)
            }
            if wait == .zero { return true }
            do { try await clock.sleep(for: wait) } catch { return false }
        }
        return false
    }

    /// Closes the stream and stops the waves' workers.
    func close() {
        let (tasks, bytes) = roster.withLock { r -> ([Task<Void, Never>], Int) in
            r.closed = true
            return (Array(r.workers.values), r.dropPending())
        }
        cache.releaseStreamBytes(bytes)
        tracking.store(0)
        cache.dropStreamUses()
        cache.clearStreamQueued()
        for task in tasks { task.cancel() }
        driver.close()
    }
}
