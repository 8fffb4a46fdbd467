extension FlagService {
    enum Decision {
        case view(ContextFlags)
        case join(ContextFlight)
    }

    struct Start {
        var flight: ContextFlight
        var previous: Snapshot?
        var background: Bool
        /// A stream event's flag configuration version (a wave's refresh only).
        var flagConfig: FlagConfigVersion? = nil
        /// When the event that started this refresh arrived (monotonic; a wave's refresh only):
        /// a shared-cache entry confirmed before it does not answer it.
        var eventAt: Duration? = nil
        /// The one request let through before the entry expires (passes the service-wide
        /// pause and the context's backoff; docs/service.md, "Recovery").
        var probe = false
        /// A refetch owed after a flight an event marked (``FlagService/refetchOwed(_:flagConfig:)``):
        /// not sent (shed, paused meanwhile), it is owed again.
        var owed = false
    }

    /// The one decision of a request, under its shard's lock: serve held values (and maybe
    /// start a background refresh), serve defaults (invalid or backing-off context, or a
    /// service that creates no fetch now: paused, fatal, closed, queue full), or join the
    /// context's flight (starting it when there is none and the gate admits it). The gate is
    /// read from atomics before the lock; nothing is created when it is shut.
    ///
    /// `link`: a fitting-memo entry's cache node for this context (``ContextCache/Shard/find(_:linkedBy:)``),
    /// nil on the pre-fitted path.
    func decide(_ fitted: FittedContext, join: Bool, link: UnsafeMutablePointer<Int32>? = nil) -> Decision {
        let fingerprint = fitted.fingerprint
        let now = clock.monotonicNow
        let gate = fetcher.gate(now: now)
        let shutCode: FlagErrorCode = gate.fatal ? .providerFatal : .providerNotReady
        var start: Start?
        var refused = false
        /// A held context whose refresh the gate shed for want of room: it gets a retry time.
        var shed = false
        let policy = self.policy
        // Held values confirmed before the last stream wave are stale (two atomic loads: no
        // global lock on the lookup path, SPEC §12; the use is recorded in the shard below).
        let tracking = streaming?.isTracking ?? false
        let staleBefore = streaming?.staleBefore
        var marked = false
        let decision = cache.shard(for: fingerprint).withLock { s -> Decision in
            var previous: Snapshot?
            s.recordAccess(fingerprint)
            let found: Int32?
            if let link { found = s.find(fingerprint, linkedBy: link) } else { found = s.find(fingerprint) }
            if let i = found {
                if tracking { s.noteStreamUse(i, fitted, now: now, budget: cache.budget) }
                s.touch(i)
                let node = s.nodes[Int(i)]
                if let snapshot = node.snapshot {
                    // The policy's read (ContextPolicy): serve, due for a refresh, or expired.
                    switch policy.read(
                        node.held, now: now, staleBefore: staleBefore, queued: s.streamQueued.contains(fingerprint))
                    {
                    case .serve:
                        s.hits += 1
                        return .view(ContextFlags(snapshot: snapshot, environment: environment))
                    case .due(let isMarked):
                        s.hits += 1
                        marked = isMarked
                        if s.flights[fingerprint] == nil {
                            var held = node.held
                            let refresh = policy.start(&held, now: now, gate: gate)
                            switch refresh {
                            case .start, .probe:
                                // The probe: its expiry is near and its backoff or the pause
                                // would outlast it, so one request goes anyway.
                                s.nodes[Int(i)].held = held
                                let flight = ContextFlight()
                                s.flights[fingerprint] = flight
                                start = Start(
                                    flight: flight, previous: snapshot, background: true, probe: refresh == .probe)
                            case .shed:
                                shed = true
                            case .none:
                                break
                            }
                        }
                        return .view(ContextFlags(snapshot: snapshot, environment: environment))
                    case .expired:
                        break
                    }
                }
                s.misses += 1
                if case .backingOff(let code) = policy.miss(held: node.held, record: nil, now: now) {
                    return .view(ContextFlags(unavailable: code, fingerprint: fingerprint, environment: environment))
                }
                previous = node.snapshot
            } else {
                s.misses += 1
                if case .backingOff(let code) = policy.miss(
                    held: nil, record: s.failureRecords[fingerprint], now: now)
                {
                    return .view(ContextFlags(unavailable: code, fingerprint: fingerprint, environment: environment))
                }
                // Not held (yet): a cold fetch, perhaps in flight during the next event, whose
                // wave must then fetch it again.
                if tracking { s.noteStreamMiss(fitted, now: now, budget: cache.budget) }
            }
            if let flight = s.flights[fingerprint] { return .join(flight) }
            let admission = policy.admit(previous: previous != nil, gate: gate)
            guard admission.admitted else {
                refused = true
                shed = admission.shed
                return .view(ContextFlags(unavailable: shutCode, fingerprint: fingerprint, environment: environment))
            }
            let flight = ContextFlight()
            s.flights[fingerprint] = flight
            start = Start(flight: flight, previous: previous, background: false)
            return .join(flight)
        }
        if refused || shed { fetcher.countRefused(gate) }
        if shed { shedRefresh(fingerprint, now: now) }
        if var start {
            // A refresh the stale mark started is event-triggered: it carries the event's
            // parameters (read outside the shard lock, once per context per wave).
            if marked, start.background {
                start.flagConfig = streaming?.staleFlagConfig
                start.eventAt = streaming?.staleBefore
            }
            run(start, fitted)
        }
        return decision
    }

    /// A refresh of a held context was shed (no room): the context gets a retry time, growing
    /// with the sheds in a row, so it creates at most one refresh per backoff step however many
    /// requests read it. The random draw is made outside the shard lock.
    private func shedRefresh(_ fingerprint: String, now: Duration) {
        let unit = Double.random(in: 0..<1)
        let policy = self.policy
        cache.shard(for: fingerprint).withLock { s in
            guard let i = s.find(fingerprint), s.nodes[Int(i)].snapshot != nil, now >= s.nodes[Int(i)].retryAt
            else { return }
            policy.shed(&s.nodes[Int(i)].held, now: now, unit: unit)
        }
    }

}
