import Foundation

/// Service mode's event stream (SPEC §14, docs/service.md "Event streams"): one stream per
/// service, opened from the first bulk response that advertises one. A `refetchEvaluation`
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
    }

    private struct Roster {
        /// Contexts used since the last wave, with when they were last used.
        var used: [String: Used] = [:]
        /// Held values confirmed before this are stale (refreshed on next use).
        var staleBefore: Duration?
        /// Contexts the running wave will refresh: not marked stale meanwhile (a read of one
        /// would otherwise start a second, background refresh of it).
        var queued: Set<String> = []
        /// Whether a stream was advertised once (then it is followed for the service's life).
        var opened = false
        var waves = 0
        var waveRefreshes = 0
    }

    private struct Bucket {
        var tokens: Double
        var updatedAt: Duration
    }

    let driver: EventStreamDriver
    private let clock: any HalyardClock
    private let limit: Int
    private let concurrency: Int
    private let roster = Locked(Roster())
    private let bucket: Locked<Bucket>

    init(driver: EventStreamDriver, clock: any HalyardClock, maxContexts: Int, maxConcurrentFetches: Int) {
        self.driver = driver
        self.clock = clock
        limit = max(maxContexts, 1)
        concurrency = max(maxConcurrentFetches, 1)
        bucket = Locked(Bucket(tokens: Self.requestsPerSecond, updatedAt: clock.monotonicNow))
    }

    /// The service's stream for its options: only with ``ChangeDetection/automatic`` and a
    /// transport that can stream.
    static func make(options: FlagServiceOptions, identity: ClientIdentity, transport: any FlagTransport)
        -> ServiceStreaming?
    {
        guard options.changeDetection == .automatic, let streaming = GuardedTransport.streaming(transport) else {
            return nil
        }
        var machine = EventStreamMachine.Configuration()
        // The service does not poll: `refreshAfter` is its safety net.
        machine.pollInterval = .zero
        machine.connectTimeout = options.requestTimeout > .zero ? options.requestTimeout : .seconds(10)
        let driver = EventStreamDriver(
            configuration: .init(machine: machine, identity: identity), transport: streaming, clock: options.clock,
            logHandler: options.logHandler)
        return ServiceStreaming(
            driver: driver, clock: options.clock, maxContexts: options.maxContexts,
            maxConcurrentFetches: options.maxConcurrentFetches)
    }

    /// Notes a use of `fitted` (for the next wave) and returns the stale mark in force.
    func noteUse(_ fitted: FittedContext, now: Duration) -> Duration? {
        roster.withLock { r in
            if r.used[fitted.fingerprint] != nil || r.used.count < limit {
                r.used[fitted.fingerprint] = Used(fitted: fitted, usedAt: now)
            }
            return r.queued.contains(fitted.fingerprint) ? nil : r.staleBefore
        }
    }

    /// The streams a bulk response advertised: the first non-empty list opens the stream.
    func advertised(_ streams: [OFREPEventStream]) {
        guard !streams.isEmpty else { return }
        let first = roster.withLock { r -> Bool in
            defer { r.opened = true }
            return !r.opened
        }
        if first { driver.advertised(streams) }
    }

    /// Waves started and refreshes sent by them.
    var counters: (waves: Int, refreshes: Int) { roster.withLock { ($0.waves, $0.waveRefreshes) } }

    /// One wave: marks every held context stale, then refreshes the contexts used since the
    /// last wave, most recent first, through `refresh` (which returns when that fetch is over).
    func wave(refresh: @escaping @Sendable (FittedContext) async -> Void) async {
        let now = clock.monotonicNow
        let taken = roster.withLock { r -> [Used] in
            r.staleBefore = now
            r.waves += 1
            let list = Array(r.used.values)
            r.used = [:]
            r.queued = Set(r.used.keys)
            for entry in list { r.queued.insert(entry.fitted.fingerprint) }
            r.waveRefreshes += list.count
            return list
        }
        // Sorted outside the lock: most recently used first.
        let order = taken.sorted { $0.usedAt > $1.usedAt }.map(\.fitted)
        guard !order.isEmpty else { return }
        let next = Locked(0)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<min(concurrency, order.count) {
                group.addTask { [self] in
                    while !Task.isCancelled {
                        let i = next.withLock { n -> Int in
                            defer { n += 1 }
                            return n
                        }
                        guard i < order.count else { return }
                        guard await self.takeToken() else {
                            self.roster.withLock { $0.queued.removeAll() }
                            return
                        }
                        await refresh(order[i])
                        _ = self.roster.withLock { $0.queued.remove(order[i].fingerprint) }
                    }
                }
            }
        }
    }

    /// Takes one token from the bucket, sleeping on the clock until one is there. False when
    /// the task was cancelled.
    private func takeToken() async -> Bool {
        while !Task.isCancelled {
            let wait = bucket.withLock { b -> Duration in
                let now = clock.monotonicNow
                let elapsed = now - b.updatedAt
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
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

    func close() { driver.close() }
}
