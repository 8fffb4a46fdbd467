import Foundation

extension ServiceFetcher {
    /// Fetches the values of `context`, with `If-None-Match: etag` when given. A cold fetch
    /// that waits for a slot is dropped (counted, not sent) when every request waiting on
    /// `flight` leaves first. A `probe` (a held entry about to expire) passes the service-wide
    /// pause, never a 429's `Retry-After`.
    func fetch(
        _ context: FittedContext, etag: String?, priority: FetchPriority = .cold, flight: ContextFlight? = nil,
        flagConfig: FlagConfigVersion? = nil, probe: Bool = false
    ) async -> Result {
        await send(context, etag: etag, priority: priority, flight: flight, flagConfig: flagConfig, probe: probe)
            .result
    }

    /// ``fetch(_:etag:priority:flight:flagConfig:probe:)`` with what its request was sent with
    /// and when (``Answer/sent``, nil when nothing was sent).
    func send(
        _ context: FittedContext, etag: String?, priority: FetchPriority = .cold, flight: ContextFlight? = nil,
        flagConfig: FlagConfigVersion? = nil, probe: Bool = false
    ) async -> Answer {
        if let refused = await takeSlot(priority, flight: flight, probe: probe) { return refused }
        defer { releaseSlot() }
        return await sendHoldingSlot(context, etag: etag, flagConfig: flagConfig, probe: probe)
    }

    /// Takes a fetch slot, waiting when all are taken: nil when it was granted (the caller
    /// sends with ``sendHoldingSlot(_:etag:flagConfig:probe:)`` and then calls
    /// ``releaseSlot()``), else the answer of a fetch that was refused or shed. The shared
    /// cache's plan takes a context's lease only once it holds a slot (SharedFetchPlan.swift).
    func takeSlot(_ priority: FetchPriority, flight: ContextFlight?, probe: Bool) async -> Answer? {
        switch await acquire(priority, flight: flight, probe: probe) {
        case .granted: return nil
        case .refused(let until): return Answer(result: .skipped(until: until))
        case .shed: return Answer(result: .shed)
        }
    }

    /// Frees the slot ``takeSlot(_:flight:probe:)`` granted.
    func releaseSlot() { release() }

    /// Sends the request of a fetch that holds a slot (``takeSlot(_:flight:probe:)``).
    ///
    /// An answer to a key `setKey` has replaced (cancelled on the wire, or landing after the
    /// rotation) says nothing: the fetch sends again, with the key in use, so its waiters get
    /// the new key's answer (SPEC §12). Bounded: a rotation per attempt.
    func sendHoldingSlot(
        _ context: FittedContext, etag: String?, flagConfig: FlagConfigVersion?, probe: Bool
    ) async -> Answer {
        var attempt = 0
        while true {
            attempt += 1
            let now = clock.monotonicNow
            let gate = gate(now: now)
            let paused = probe ? gate.retryAfterInForce : gate.pausedUntil != nil
            if gate.closed || gate.fatal || paused {
                // Paused, fatal or closed while it waited for its slot (or since the rotation).
                if paused { state.withLock { $0.stats.paused += 1 } }
                return Answer(result: .skipped(until: gate.pausedUntil))
            }
            // A re-send goes without `If-None-Match`: the held ETag is the replaced key's.
            let answer = await sendOnce(context, etag: attempt == 1 ? etag : nil, flagConfig: flagConfig)
            guard attempt < Self.attemptsPerRotation, let sent = answer.sent, !Task.isCancelled,
                !isCurrentKey(sent.keyGeneration), !isClosedForTasks
            else { return answer }
        }
    }

    /// How many requests one fetch sends at most when `setKey` replaces the key of each
    /// (``send(_:etag:priority:flight:flagConfig:probe:)``).
    static let attemptsPerRotation = 3

    /// One request of a fetch that holds a slot: built with the key in use, sent in the fetch's
    /// own task with a cancellation handle ``setKey(_:tier:)`` uses if that key is replaced,
    /// classified and recorded.
    ///
    /// Not a task of its own: a task per request waits its turn on the cooperative pool once
    /// more, which under load cost cold waits their `coldFetchTimeout` (25 of 55 `ServiceTests`
    /// expectations failed in a full run). The handle reuses the task the guarded transport
    /// already runs every request in.
    private func sendOnce(_ context: FittedContext, etag: String?, flagConfig: FlagConfigVersion?) async -> Answer {
        // The key, its generation and the request's registration in one critical section: the
        // request carries exactly the key its answer is judged by, and a `setKey` either comes
        // first (the request carries the new key) or finds it registered and cancels it
        // (SPEC §12).
        let cancellation = RequestCancellation()
        let (generation, key, exchange) = state.withLock { s -> (UInt64, String, UInt64) in
            s.stats.requestsSent += 1
            s.nextExchangeID &+= 1
            s.exchanges[s.nextExchangeID] = cancellation
            return (s.keyGeneration, s.key, s.nextExchangeID)
        }
        let request = builder.request(
            contextJSON: context.canonicalJSON, ifNoneMatch: etag, flagConfig: flagConfig, key: key)
        // Confirmed as of now: an answer is as old as its request (docs/service.md, "Event streams").
        let sent = Sent(keyGeneration: generation, at: clock.monotonicNow, wallAt: clock.wallNow)
        let outcome: RefreshMachine.Outcome
        var decoded: OFREPResponse?
        var status: Int?
        do {
            // Off the table once it ends (before the catch clauses run, when it throws).
            defer { _ = state.withLock { $0.exchanges.removeValue(forKey: exchange) } }
            let response = try await transport.send(request, cancellation: cancellation)
            status = response.status
            (outcome, decoded) = RefreshMachine.Outcome.classify(
                response, maxResponseBytes: builder.maxResponseBytes, wallNow: clock.wallNow,
                controlPlane: builder.identity.baseURL)
        } catch let error as TransportError where error != .cancelled && !Task.isCancelled {
            switch error {
            case .timedOut: outcome = .transient(.timedOut, retryAfter: nil)
            case .responseTooLarge: outcome = .transient(.tooLarge, retryAfter: nil)
            case .network, .cancelled, .redirectRefused: outcome = .transient(.network, retryAfter: nil)
            }
        } catch {
            // Cancelled (close(), a service dropped, or `setKey` replaced its key): not a
            // network error, nothing to record.
            if Task.isCancelled || error is CancellationError || (error as? TransportError) == .cancelled {
                return Answer(result: .skipped(until: nil), sent: sent)
            }
            outcome = .transient(.network, retryAfter: nil)
        }
        return Answer(
            result: record(
                outcome, status: status, decoded: decoded, generation: generation, fingerprint: context.fingerprint),
            sent: sent)
    }

    private func record(
        _ outcome: RefreshMachine.Outcome, status: Int?, decoded: OFREPResponse?, generation: UInt64,
        fingerprint: String
    ) -> Result {
        let now = clock.monotonicNow
        let unit = Double.random(in: 0..<1)
        // A `Retry-After` is capped at 1 h and spread over its window (SPEC §5), drawn once
        // here for the pause, the 429 gate and the context's failure record alike.
        let floorUnit = Double.random(in: 0..<1)
        var log: (HalyardLogLevel, String)?
        var serviceStatus = ""
        let result = state.withLock { s -> Result in
            defer { serviceStatus = "\(s.status)" }
            defer { publish(s) }
            if let status { s.stats.responsesByStatus[status, default: 0] += 1 }
            if generation != s.keyGeneration {
                // Sent with a key `setKey` has replaced: says nothing about the new key, whatever
                // its status (SPEC §12). A 200 would serve (and cache) the old environment's
                // values; a 429 or 5xx would pause the new key's fetches; a late 401 made the
                // service fatal again after the rotation (with 32 fetches in flight).
                if case .unauthorized = outcome { s.stats.staleKeyRefusals += 1 }
                s.stats.staleKeyAnswers += 1
                return .skipped(until: nil)
            }
            switch outcome {
            case .updated(let etag):
                succeeded(&s, now: now)
                guard let decoded else { return .failed(retryAfter: nil) }
                return .updated(decoded, etag: etag)
            case .notModified:
                succeeded(&s, now: now)
                s.stats.notModified += 1
                return .notModified
            case .badRequest:
                return .badRequest
            case .unauthorized(let code) where code == 403:
                // About this context (a WAF rule, a per-tenant refusal): the others go on.
                s.stats.forbidden += 1
                return .forbidden
            case .unauthorized(let code):
                if s.status != .fatal {
                    log = (
                        .error,
                        "the control plane refused the key (HTTP \(code)); the service sends no more fetches until setKey(_:)"
                    )
                }
                s.status = .fatal
                return .unauthorized
            case .rateLimited(let retryAfter):
                s.stats.rateLimited += 1
                s.consecutiveFailures += 1
                let floor = RetryAfter.jitteredFloor(retryAfter, unit: floorUnit)
                if let floor {
                    // The server's own word: not even a probe goes before it.
                    s.retryAfterUntil = max(s.retryAfterUntil, now + floor)
                }
                let delay = pauseService(&s, now: now, retryAfter: floor, unit: unit)
                if s.status != .fatal { s.status = .error }
                log = (.warning, "429 from the control plane: every context's fetches pause for \(delay)")
                return .failed(retryAfter: delay)
            case .transient(let cause, let retryAfter):
                switch cause {
                case .timedOut: s.stats.timeouts += 1
                case .network: s.stats.networkErrors += 1
                case .invalidBody: s.stats.invalidBodies += 1
                case .tooLarge: s.stats.oversizedResponses += 1
                case .status: break
                }
                s.consecutiveFailures += 1
                let floor = RetryAfter.jitteredFloor(retryAfter, unit: floorUnit)
                if s.consecutiveFailures >= backoffAfterFailures {
                    _ = pauseService(&s, now: now, retryAfter: floor, unit: unit)
                    if s.status != .fatal { s.status = .error }
                }
                return .failed(retryAfter: floor)
            }
        }
        if let log {
            var facts = [
                HalyardLogRecord.Key.origin: logOrigin, HalyardLogRecord.Key.status: serviceStatus,
                HalyardLogRecord.Key.context: HalyardLogRecord.contextPrefix(fingerprint),
            ]
            if let status { facts[HalyardLogRecord.Key.httpStatus] = "\(status)" }
            if case .failed(let retryAfter?) = result {
                facts[HalyardLogRecord.Key.retryIn] = HalyardLogRecord.seconds(retryAfter)
            }
            logHandler?(HalyardLogRecord(log.0, log.1, .service, facts))
        }
        return result
    }

    /// A fetch succeeded: the failure run ends; the status is `ready` unless a pause is in
    /// force; the pause step goes back to zero only after a quiet time (``PauseState``).
    private func succeeded(_ s: inout State, now: Duration) {
        s.consecutiveFailures = 0
        s.pause.succeeded(now: now)
        if s.status != .fatal && now >= s.pausedUntil { s.status = .ready }
    }

    /// Pauses every context's fetches (or extends the pause in force); returns the delay.
    private func pauseService(_ s: inout State, now: Duration, retryAfter: Duration?, unit: Double) -> Duration {
        let delay = s.pause.pause(
            now: now, pausedUntil: s.pausedUntil, floor: initialBackoff, cap: recoveryInterval, retryAfter: retryAfter,
            unit: unit)
        s.pausedUntil = max(s.pausedUntil, now + delay)
        return delay
    }

    private enum Admission {
        case granted
        case refused(until: Duration?)
        case shed
    }

    /// Takes a slot, waiting when all are taken (refreshes before cold fetches, FIFO within
    /// each); refused when closed, fatal, paused (a probe: by a 429's `Retry-After` only) or
    /// the queue is full (shed).
    private func acquire(_ priority: FetchPriority, flight: ContextFlight?, probe: Bool) async -> Admission {
        let now = clock.monotonicNow
        enum Step {
            case granted, refused(Duration?), wait
        }
        let step = state.withLock { s -> Step in
            defer { publish(s) }
            if s.closed || s.status == .fatal { return .refused(nil) }
            if now < s.retryAfterUntil || (!probe && now < s.pausedUntil) {
                s.stats.paused += 1
                return .refused(s.pausedUntil)
            }
            if s.inFlight < maxConcurrent {
                s.inFlight += 1
                return .granted
            }
            return .wait
        }
        switch step {
        case .granted: return .granted
        case .refused(let until): return .refused(until: until)
        case .wait: break
        }
        let grant = await withCheckedContinuation { (c: CheckedContinuation<Grant, Never>) in
            var displaced: CheckedContinuation<Grant, Never>?
            let outcome = state.withLock { s -> (Grant?, UInt64) in
                defer { publish(s) }
                if s.closed { return (.refused, 0) }
                if s.inFlight < maxConcurrent {
                    s.inFlight += 1
                    return (.granted, 0)
                }
                s.nextTicket += 1
                let ticket = s.nextTicket
                switch s.queue.enqueue(ticket, priority) {
                case .full:
                    s.stats.shed += 1
                    return (.shed, 0)
                case .queuedDisplacing(let other):
                    s.stats.shed += 1
                    displaced = s.waiting.removeValue(forKey: other)
                    fallthrough
                case .queued:
                    s.waiting[ticket] = c
                    return (nil, ticket)
                }
            }
            displaced?.resume(returning: .shed)
            if let grant = outcome.0 {
                c.resume(returning: grant)
            } else if priority == .cold, let flight {
                let ticket = outcome.1
                flight.whenAbandoned { [weak self] in self?.drop(ticket) }
            }
        }
        switch grant {
        case .granted: return .granted
        case .shed: return .shed
        case .refused, .dropped: return .refused(until: nil)
        }
    }

    /// Drops a queued fetch whose waiters all left (counted in `droppedFetches`).
    private func drop(_ ticket: UInt64) {
        let waiter = state.withLock { s -> CheckedContinuation<Grant, Never>? in
            defer { publish(s) }
            guard s.queue.remove(ticket), let waiter = s.waiting.removeValue(forKey: ticket) else { return nil }
            s.stats.dropped += 1
            return waiter
        }
        waiter?.resume(returning: .dropped)
    }

    /// Frees a slot, handing it to the next waiter (refreshes first).
    private func release() {
        let next = state.withLock { s -> CheckedContinuation<Grant, Never>? in
            defer { publish(s) }
            while let ticket = s.queue.popNext() {
                if let c = s.waiting.removeValue(forKey: ticket) { return c }  // the slot passes to it
            }
            s.inFlight -= 1
            return nil
        }
        next?.resume(returning: .granted)
    }
}
