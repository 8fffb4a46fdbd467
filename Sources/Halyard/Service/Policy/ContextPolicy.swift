/// The service's decisions about one context (SPEC §12, §14; docs/service-internals.md, "The
/// per-context policy") as a pure value type: no lock, no clock, no randomness of its own.
/// Every event carries `now` (monotonic) and, where a delay is drawn, a `unit` uniform in
/// [0, 1) the caller drew; each returns what the service must do.
///
/// The service keeps a context's state spread over its shard (the node's ``Held`` fields, the
/// flight table, the failure records) and calls the event methods under the shard lock on
/// those pieces: ``read(_:now:staleBefore:queued:)`` and ``start(_:now:gate:)`` for a request
/// of a held context, ``miss(held:record:now:)`` and ``admit(previous:gate:)`` for a request
/// without servable values, ``answer(_:held:record:now:unit:)`` for a fetch's result. The
/// same methods drive ``ContextPolicy/Machine`` (ContextPolicy+Machine.swift), the whole
/// state of one context as one enum, which the random-sequence tests check.
struct ContextPolicy: Sendable, Hashable {
    /// The service's options the policy reads.
    struct Configuration: Sendable, Hashable {
        var refreshAfter: Duration
        var maxStaleness: Duration
        /// How long before expiry the one probe may go (``FlagServiceOptions/probeLead``).
        var probeLead: Duration
    }

    /// The backoffs a failing or shed context draws from (``ServiceFetcher``'s, as values).
    struct Backoffs: Sendable, Hashable {
        /// A failing context's backoff (its floor half of `initialBackoff`).
        var context: Backoff
        /// The longest backoff of a context whose values are held, and twice a shed's step.
        var recoveryInterval: Duration

        /// The backoff delay for a context's own `failures`; at most ``recoveryInterval``
        /// when its values are `held` (the cap lowers the ceiling the delay is drawn under, so
        /// the draw keeps its spread).
        func contextDelay(failures: Int, unit: Double, held: Bool = false) -> Duration {
            var backoff = context
            if held { backoff.maximum = min(backoff.maximum, recoveryInterval) }
            return backoff.delay(failures: max(1, failures), unit: unit)
        }

        /// The retry step of a held context after `sheds` refreshes shed in a row: its ceiling
        /// doubling from `initialBackoff` up to half of ``recoveryInterval``.
        func shedDelay(sheds: Int, unit: Double) -> Duration {
            var backoff = context
            backoff.maximum = min(backoff.maximum, recoveryInterval / 2)
            return backoff.delay(failures: max(1, sheds), unit: unit)
        }
    }

    /// The policy facts of a context whose values are held (its cache node's fields).
    struct Held: Sendable, Hashable {
        /// When the values were confirmed: the time the request that brought or confirmed them
        /// was SENT (monotonic), so an answer that crossed a change event is stale to it.
        var confirmedAt: Duration
        /// No fetch before this (its backoff, a shed refresh's step, a 400).
        var retryAt: Duration = .zero
        /// Consecutive failed fetches.
        var failures: Int = 0
        /// Refreshes shed in a row.
        var sheds: UInt8 = 0
        /// Whether the one probe before expiry was sent.
        var probed = false
    }

    /// What a request finds about a held context's values.
    enum Read: Sendable, Hashable {
        /// Servable and nothing is owed: serve.
        case serve
        /// Servable and due for a refresh (older than `refreshAfter`, or `marked` stale by a
        /// change event): serve, and start a refresh unless one is in flight.
        case due(marked: Bool)
        /// Not servable (older than `maxStaleness`): a miss.
        case expired
    }

    /// What a due refresh comes to at the gate.
    enum Refresh: Sendable, Hashable {
        /// Start a background refresh.
        case start
        /// Start the one probe let through before expiry (``Held/probed`` is now set).
        case probe
        /// Refused for want of room only: the context gets a retry time (``shed(_:now:unit:)``).
        case shed
        /// Nothing now (backing off, paused, fatal, closed).
        case none
    }

    /// What a request without servable values does.
    enum Miss: Sendable, Hashable {
        /// Serve defaults with this code (backing off, a failure record): nothing is fetched.
        case backingOff(FlagErrorCode)
        /// Join the flight in flight, or start one if the gate admits it (``admit(previous:gate:)``).
        case fetch
    }

    /// What a fetch came to, as the policy sees it (``ServiceFetcher/Result`` without its
    /// payload).
    enum Outcome: Sendable, Hashable {
        /// 200, or a fleet's shared entry: new values.
        case updated
        case notModified
        case badRequest
        case forbidden
        case unauthorized
        /// Nothing was sent (or the answer was to a replaced key).
        case skipped
        case shed
        case failed(retryAfter: Duration?)
    }

    /// What an answer does to the context.
    enum Answer: Sendable, Hashable {
        /// Hold the new values (or the previous ones a 304 confirmed, when the entry left
        /// meanwhile) with these facts; the failure record goes.
        case store(Held)
        /// The held entry's facts become these (a 304, a failure, a shed, a 400); serve its
        /// values while servable.
        case update(Held)
        /// The entry (if any) goes; the context serves defaults with this record.
        case fail(FailureRecord)
        /// Nothing changes.
        case none
    }

    let configuration: Configuration
    let backoffs: Backoffs

    // MARK: - A request of a held context

    /// A request finds `held` at `now`. `staleBefore`: the last change event's arrival (nil:
    /// none); `queued`: whether a wave holds the context (its refresh is queued or running, so
    /// it is not marked again), evaluated only for values confirmed before that event.
    @inline(__always)
    func read(_ held: Held, now: Duration, staleBefore: Duration?, queued: @autoclosure () -> Bool) -> Read {
        guard now - held.confirmedAt <= configuration.maxStaleness else { return .expired }
        let marked = held.confirmedAt < (staleBefore ?? .zero) && !queued()
        if marked || now - held.confirmedAt > configuration.refreshAfter { return .due(marked: marked) }
        return .serve
    }

    /// A due refresh of `held`, with no flight in flight, at the gate: a refresh when the
    /// context is not backing off and the gate has room; else the one probe when expiry is
    /// near and the backoff or pause would outlast it (never before a 429's `Retry-After`);
    /// else a shed when only room is missing.
    func start(_ held: inout Held, now: Duration, gate: ServiceFetcher.Gate) -> Refresh {
        if now >= held.retryAt && gate.admits(.refresh) { return .start }
        if !held.probed, now >= held.confirmedAt + configuration.maxStaleness - configuration.probeLead,
            held.sheds == 0 || now >= held.retryAt, gate.admitsProbe
        {
            held.probed = true
            return .probe
        }
        if now >= held.retryAt && gate.shedsRefresh { return .shed }
        return .none
    }

    /// A refresh of `held` was shed (no room): a retry time growing with the sheds in a row,
    /// so a context creates at most one refresh per backoff step however many requests read
    /// it; a shed probe may go again after it.
    func shed(_ held: inout Held, now: Duration, unit: Double) {
        if held.sheds < .max { held.sheds += 1 }
        let delay = backoffs.shedDelay(sheds: Int(held.sheds), unit: unit)
        held.retryAt = retryTime(now: now, delay: delay, confirmedAt: held.confirmedAt)
    }

    // MARK: - A request without servable values

    /// A request of a context whose values are expired (`held`) or absent (`record`: its
    /// failure record, if any).
    func miss(held: Held?, record: FailureRecord?, now: Duration) -> Miss {
        if let held {
            if now < held.retryAt { return .backingOff(.providerNotReady) }
        } else if let record, now < record.retryAt {
            return .backingOff(record.code)
        }
        return .fetch
    }

    /// Whether a fetch (no flight in flight) may be created: a held (expired) context's as a
    /// refresh, it has a user being served. Not admitted: `shed` when only room is missing
    /// and the context holds values.
    func admit(previous: Bool, gate: ServiceFetcher.Gate) -> (admitted: Bool, shed: Bool) {
        if gate.admits(previous ? .refresh : .cold) { return (true, false) }
        return (false, previous && gate.shedsRefresh)
    }

    // MARK: - An answer

    /// A fetch's `outcome` arrives at `now`, for a request sent at `sentAt` (nil: nothing was
    /// sent) with a key of generation `keyGeneration` while `currentKey` is in use. `held`:
    /// the context's entry now (servable or not), `record`: its failure record. `unit` is
    /// uniform in [0, 1).
    ///
    /// An answer to a replaced key changes nothing (SPEC §12), whatever its status. Values
    /// are confirmed as of `sentAt`.
    func answer(
        _ outcome: Outcome, held: Held?, record: FailureRecord?, sentAt: Duration?, keyGeneration: UInt64,
        currentKey: UInt64, now: Duration, unit: Double
    ) -> Answer {
        if sentAt != nil && keyGeneration != currentKey { return .none }
        let confirmedAt = min(sentAt ?? now, now)
        switch outcome {
        case .updated:
            return .store(Held(confirmedAt: confirmedAt))
        case .notModified:
            guard var held else { return .store(Held(confirmedAt: confirmedAt)) }
            held.confirmedAt = max(held.confirmedAt, confirmedAt)
            held.retryAt = .zero
            held.failures = 0
            held.probed = false
            held.sheds = 0
            return .update(held)
        case .badRequest:
            // SPEC §5: 400 keeps serving held values; otherwise remembered as invalid.
            if var held, servable(held, now: now) {
                held.retryAt = now + configuration.refreshAfter
                return .update(held)
            }
            return .fail(FailureRecord(code: .invalidContext, retryAt: now + configuration.refreshAfter, failures: 0))
        case .forbidden:
            // This context was refused: defaults until maxStaleness, then retried.
            return .fail(
                FailureRecord(
                    code: .providerFatal, retryAt: now + configuration.maxStaleness,
                    failures: (record?.failures ?? 0) + 1))
        case .unauthorized, .skipped:
            return .none
        case .shed:
            guard var held else { return .none }
            shed(&held, now: now, unit: unit)
            held.probed = false
            return .update(held)
        case .failed(let retryAfter):
            // Retry-After is a floor of the context's own backoff, never a replacement. A
            // context whose values are held waits at most the recovery interval.
            if var held {
                let failures = held.failures + 1
                let delay = max(
                    retryAfter ?? .zero, backoffs.contextDelay(failures: failures, unit: unit, held: true))
                held.failures = failures
                held.sheds = 0
                held.retryAt = retryTime(now: now, delay: delay, confirmedAt: held.confirmedAt)
                return .update(held)
            }
            let failures = (record?.failures ?? 0) + 1
            let delay = max(retryAfter ?? .zero, backoffs.contextDelay(failures: failures, unit: unit))
            return .fail(FailureRecord(code: .providerNotReady, retryAt: now + delay, failures: failures))
        }
    }

    // MARK: - Rules

    /// Whether `held`'s values may be served at `now` (younger than `maxStaleness`).
    func servable(_ held: Held, now: Duration) -> Bool { now - held.confirmedAt <= configuration.maxStaleness }

    /// A held context's retry time: `now + delay`, clamped to its entry's expiry while the
    /// entry is servable (the backoff never outlasts what may still be served).
    func retryTime(now: Duration, delay: Duration, confirmedAt: Duration) -> Duration {
        let expiry = confirmedAt + configuration.maxStaleness
        return now < expiry ? min(now + delay, expiry) : now + delay
    }
}
