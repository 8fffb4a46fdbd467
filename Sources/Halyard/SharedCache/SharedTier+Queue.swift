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
    package func call(_ commands: [RedisCommand], writes: Bool) async -> [RedisValue]? {
        let replies = await perform(commands)
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

    /// Sends `commands` (one pipeline) on the least busy lane unless the breaker is open; nil
    /// when it was skipped, dropped or failed (an error reply included: counted, and a failure
    /// for the breaker). The deadline counts from now (the admission): a call whose deadline
    /// passed in the queue is dropped unsent, one whose breaker opened meanwhile is skipped.
    /// Calls that queue while their lane's connection is busy go out together at its next
    /// exchange (``drain(_:)``), each still answered, failed and counted on its own. The
    /// breaker hears of every exchange that answered once (a success, or a failure when slower
    /// than ``slowCallThreshold``), of every call that failed (the closed client's included),
    /// and of a call dropped in the queue behind a failed call (behind calls that succeed it
    /// does not: a burst is not an outage).
    func perform(_ commands: [RedisCommand]) async -> [RedisValue]? {
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
        let outcome: Outcome<[RedisValue]> = await withCheckedContinuation { continuation in
            let call = WaitingCall(commands: commands, deadline: deadline, continuation: continuation)
            let start = lanes[lane].waiting.withLock { w -> Bool in
                w.calls.append(call)
                guard !w.draining else { return false }
                w.draining = true
                return true
            }
            if start { lanes[lane].queue.async { [self] in drain(lane) } }
        }
        let end = clock.monotonicNow
        var log: (HalyardLogLevel, String)?
        switch outcome {
        case .done(let value, _):
            // The exchange was reported to the breaker once, by ``send(_:on:)``.
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

    /// Runs on lane `index`'s queue: takes the calls waiting there, up to
    /// ``maxCallsPerExchange`` at a time, and sends them until none is left. Each taken call is
    /// skipped when the breaker no longer admits, dropped unsent when its deadline has passed
    /// (behind a failed call: `stuck`), and otherwise sent with the others in one exchange whose
    /// deadline is the earliest of theirs (a call is never given more than its own time).
    func drain(_ index: Int) {
        let lane = lanes[index]
        while true {
            let taken = lane.waiting.withLock { w -> [WaitingCall] in
                guard !w.calls.isEmpty else {
                    w.draining = false
                    return []
                }
                let count = min(w.calls.count, maxCallsPerExchange)
                defer { w.calls.removeFirst(count) }
                return Array(w.calls.prefix(count))
            }
            guard !taken.isEmpty else { return }
            send(taken, on: index)
        }
    }

    /// Sends `taken` (calls of lane `index`) in one exchange and resumes each with its outcome.
    private func send(_ taken: [WaitingCall], on index: Int) {
        let clock = self.clock
        let start = ContinuousClock.now
        let (go, stuck) = state.withLock { s -> (Bool, Bool) in
            s.queued[index] -= taken.count
            return (s.breaker.stillAdmits(now: clock.monotonicNow), s.laneFailing[index])
        }
        guard go else {
            for call in taken { call.continuation.resume(returning: .skipped) }
            return
        }
        var live: [WaitingCall] = []
        live.reserveCapacity(taken.count)
        for call in taken {
            if start.duration(to: call.deadline) > .zero {
                live.append(call)
            } else {
                call.continuation.resume(returning: .expired(stuck: stuck))
            }
        }
        guard let first = live.first else { return }
        let deadline = live.reduce(first.deadline) { min($0, $1.deadline) }
        let results = lanes[index].client.pipeline(calls: live.map(\.commands), deadline: deadline)
        let elapsed = start.duration(to: .now)
        state.withLock { s in
            let now = clock.monotonicNow
            var failing = false
            for result in results {
                switch result {
                case .success:
                    failing = false
                    s.latency.record(elapsed, now: now)
                case .failure(let error):
                    failing = error != .closed
                    if error != .closed { s.latency.record(elapsed, now: now) }
                }
            }
            s.laneFailing[index] = failing
            s.stats.calls += live.count
            s.stats.exchanges += 1
        }
        var answered = 0
        for case .success in results { answered += 1 }
        if answered > 0 { reportAnswered(answered, elapsed: elapsed) }
        for (call, result) in zip(live, results) {
            switch result {
            case .success(let replies): call.continuation.resume(returning: .done(replies, elapsed: elapsed))
            case .failure(let error): call.continuation.resume(returning: .failed(error))
            }
        }
    }

    /// Reports an exchange that answered `answered` of its calls to the breaker, once whatever
    /// their number (a burst sent together is one observation of Redis, not many): slower than
    /// ``slowCallThreshold`` it is a failure (its calls are used, and counted in
    /// ``SharedCacheStats/slowCalls``); otherwise a success, which also releases by token the
    /// leases failed calls left behind. Calls of the exchange that failed (an error reply) are
    /// reported by ``perform(_:)`` each, after this.
    private func reportAnswered(_ answered: Int, elapsed: Duration) {
        let end = clock.monotonicNow
        var log: (HalyardLogLevel, String)?
        if elapsed > slowCallThreshold {
            state.withLock { s in
                s.stats.slowCalls += answered
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
            return
        }
        let orphans = state.withLock { s -> [RedisCommand] in
            if s.breaker.isOpen && s.loggedOutage { log = (.info, "the shared cache answers again") }
            s.breaker.succeeded()
            s.loggedOutage = false
            return orphanReleases(&s, now: end)
        }
        if let log { logHandler?(HalyardLogRecord(log.0, log.1, .sharedCache, logFacts)) }
        if !orphans.isEmpty { releaseOrphans(orphans) }
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
