import Dispatch

/// How a ``SharedTier`` makes a call: admitted by the breaker onto the least busy lane,
/// its deadline counted from the admission, its outcome reported to the breaker and the
/// counters; leases a failed call left behind are released by token after the next success.
extension SharedTier {
    /// What became of one call.
    enum Outcome<T: Sendable>: Sendable {
        case done(T, elapsed: Duration)
        case failed(RedisError)
        /// Its deadline passed while it waited in the queue: not sent. `stuck`: the call before
        /// it on its connection failed too.
        case expired(stuck: Bool)
        /// The breaker opened while it waited in the queue: not sent.
        case skipped
    }

    /// Sends `commands` in one pipeline through ``perform(_:)``; nil when the call was not
    /// answered. Marks the episodes (docs/fleet.md, "Each failure, as an operator sees it"):
    /// the first `-OOM` reply since the last write Redis took is logged once (a failover reply
    /// fails its call and is logged by ``perform(_:)`` the same way), and a call of `writes`
    /// answered without an error reply ends every episode. A read does not end one: a replica
    /// keeps answering reads, a full Redis too.
    func call(_ commands: [RedisCommand], writes: Bool) async -> [RedisValue]? {
        let replies = await perform { (client, timeout) throws(RedisError) in
            try client.pipeline(commands, timeout: timeout)
        }
        guard let replies else { return nil }
        var refused = false
        var full: RedisError?
        for case .error(let message) in replies {
            refused = true
            if full == nil && RedisError.category(ofReply: message) == .outOfMemory { full = .server(message) }
        }
        let record = state.withLock { s -> HalyardLogRecord? in
            if let full, s.episodes.insert(.outOfMemory).inserted {
                return Self.episodeRecord(full, facts: logFacts)
            }
            if writes && !refused { s.episodes.removeAll() }
            return nil
        }
        if let record { logHandler?(record) }
        return replies
    }

    /// Runs `body` (with the time left of the call's deadline) on the least busy lane unless
    /// the breaker is open; nil when it was skipped, dropped or failed (an error reply
    /// included: counted, and a failure for the breaker). The deadline counts from now (the
    /// admission): a call whose deadline passed in the queue is dropped unsent, one whose
    /// breaker opened meanwhile is skipped. Every call admitted and run reports its outcome to
    /// the breaker (the closed client's included), a call dropped in the queue behind a failed
    /// call reports a failure (behind calls that succeed it does not: a burst is not an
    /// outage), and a call that succeeded slower than ``slowCallThreshold`` reports one too.
    func perform<T: Sendable>(
        _ body: @escaping @Sendable (RedisClient, Duration) throws(RedisError) -> T
    ) async -> T? {
        let now = clock.monotonicNow
        let deadline = ContinuousClock.now + callDeadline
        let lane = state.withLock { s -> Int? in
            guard s.breaker.admit(now: now) else {
                s.stats.skippedCalls += 1
                return nil
            }
            var best = 0
            for index in s.queued.indices where s.queued[index] < s.queued[best] { best = index }
            s.queued[best] += 1
            s.stats.peakQueueDepth = max(s.stats.peakQueueDepth, s.queued.reduce(0, +))
            return best
        }
        guard let lane else { return nil }
        let (client, queue) = (lanes[lane].client, lanes[lane].queue)
        let clock = self.clock
        let outcome: Outcome<T> = await withCheckedContinuation { continuation in
            queue.async { [state] in
                let start = ContinuousClock.now
                let left = start.duration(to: deadline)
                let (go, stuck) = state.withLock { s -> (Bool, Bool) in
                    s.queued[lane] -= 1
                    return (s.breaker.stillAdmits(now: clock.monotonicNow), s.laneFailing[lane])
                }
                guard go else { return continuation.resume(returning: .skipped) }
                guard left > .zero else { return continuation.resume(returning: .expired(stuck: stuck)) }
                do throws(RedisError) {
                    let value = try body(client, left)
                    let elapsed = start.duration(to: .now)
                    state.withLock { s in
                        s.laneFailing[lane] = false
                        s.latency.record(elapsed, now: clock.monotonicNow)
                    }
                    continuation.resume(returning: .done(value, elapsed: elapsed))
                } catch {
                    let elapsed = start.duration(to: .now)
                    state.withLock { s in
                        s.laneFailing[lane] = error != .closed
                        if error != .closed { s.latency.record(elapsed, now: clock.monotonicNow) }
                    }
                    continuation.resume(returning: .failed(error))
                }
            }
        }
        let end = clock.monotonicNow
        var log: (HalyardLogLevel, String)?
        switch outcome {
        case .done(let value, let elapsed) where elapsed > slowCallThreshold:
            // Answered, but slower than the threshold: used, and a failure for the breaker.
            state.withLock { s in
                s.stats.slowCalls += 1
                s.breaker.failed(now: end)
                if s.breaker.isOpen && !s.loggedOutage {
                    s.loggedOutage = true
                    log = (
                        .warning,
                        "the shared cache is slow (calls over \(slowCallThreshold)); the service runs on its own cache and retries"
                    )
                }
            }
            if let log { logHandler?(HalyardLogRecord(log.0, log.1, .sharedCache, logFacts)) }
            return value
        case .done(let value, _):
            let orphans = state.withLock { s -> [RedisCommand] in
                if s.breaker.isOpen && s.loggedOutage { log = (.info, "the shared cache answers again") }
                s.breaker.succeeded()
                s.loggedOutage = false
                return orphanReleases(&s, now: end)
            }
            if let log { logHandler?(HalyardLogRecord(log.0, log.1, .sharedCache, logFacts)) }
            if !orphans.isEmpty { releaseOrphans(orphans) }
            return value
        case .skipped:
            state.withLock { $0.stats.skippedCalls += 1 }
            return nil
        case .failed(.closed):
            // The tier was closed (the service is shutting down): a failure for the breaker, so
            // that a trial ends and no phase outlives its call; not an error of Redis's, so
            // neither counted nor logged.
            state.withLock { $0.breaker.failed(now: end) }
            return nil
        case .expired(stuck: false):
            // Behind a burst a healthy Redis is working through: counted, not a failure.
            state.withLock { $0.stats.droppedInQueue += 1 }
            return nil
        case .expired, .failed:
            var once: HalyardLogRecord?
            state.withLock { s in
                if case .failed(let error) = outcome {
                    s.stats.errors += 1
                    log = (.warning, "\(error)")
                    if let record = Self.configurationRecord(error, facts: logFacts),
                        s.loggedClasses.insert(error.category).inserted
                    {
                        once = record
                    } else if error.category == .failover, s.episodes.insert(.failover).inserted {
                        once = Self.episodeRecord(error, facts: logFacts)
                    }
                } else {
                    s.stats.droppedInQueue += 1
                    log = (.warning, "calls waited out their \(callDeadline) deadline in the queue")
                }
                s.breaker.failed(now: end)
                if s.breaker.isOpen && !s.loggedOutage, let reason = log?.1 {
                    s.loggedOutage = true
                    log = (
                        .warning,
                        "the shared cache is unavailable (\(reason)); the service runs on its own cache and retries"
                    )
                } else {
                    log = nil
                }
            }
            if let once { logHandler?(once) }
            if let log { logHandler?(HalyardLogRecord(log.0, log.1, .sharedCache, logFacts)) }
            return nil
        }
    }

    /// Takes the leases whose lease call or release failed (Redis may hold them) and have not
    /// lapsed yet: released by token now that Redis answers. Lapsed ones are forgotten.
    func orphanReleases(_ s: inout State, now: Duration) -> [RedisCommand] {
        guard s.leases.values.contains(where: \.unsettled) else { return [] }
        var commands: [RedisCommand] = []
        for (key, lease) in s.leases where lease.unsettled {
            s.leases.removeValue(forKey: key)
            if lease.lapsesAt > now { commands.append(.compareAndDelete(key, token: lease.token)) }
        }
        return commands
    }

    /// Releases leases by token in the background (one pipeline, one call deadline).
    func releaseOrphans(_ commands: [RedisCommand]) {
        Task { [self] in
            let done = await call(commands, writes: true)
            if done != nil { state.withLock { $0.stats.leasesReleased += commands.count } }
        }
    }
}
