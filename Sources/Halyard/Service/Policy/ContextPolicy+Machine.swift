extension ContextPolicy {
    /// One context's whole state as one enum, driven by the policy's event methods (the
    /// service keeps the same pieces in its shard: the node's ``Held`` fields, the flight
    /// table with its marks, the failure records). What the random-sequence tests check:
    /// every interleaving of reads, sends, answers (late, to a replaced key), change events,
    /// key rotations, evictions and gate changes.
    struct Machine: Sendable, Hashable {
        /// Where one context is.
        enum State: Sendable, Hashable {
            /// Nothing held, no failure record.
            case absent
            /// No values: served defaults with the record's code until its retry time.
            case failing(FailureRecord)
            /// Values held (fresh, stale or expired: ``ContextPolicy/read(_:now:staleBefore:queued:)``).
            case held(Held)
            /// A fetch in flight, and what the context has meanwhile.
            case fetching(Flight)
        }

        /// A fetch in flight.
        struct Flight: Sendable, Hashable {
            /// The values held meanwhile (nil: a cold fetch).
            var held: Held?
            /// The failure record meanwhile.
            var record: FailureRecord?
            /// The one probe before expiry.
            var probe = false
            /// When its request left, with which key generation (nil: waiting for a slot).
            var sent: Sent?
            /// A change event found it in flight: its answer may predate the change, so a
            /// refetch is owed when it ends.
            var marked = false
            /// It is the refetch owed after a marked flight: not sent, it is owed again.
            var owing = false
        }

        /// When a request left and with which key generation.
        struct Sent: Sendable, Hashable {
            var at: Duration
            var keyGeneration: UInt64
        }

        /// What a request, an answer or a tick asks of the service.
        enum Action: Sendable, Hashable {
            /// Serve the held values.
            case serve
            /// Serve the held values and start a background fetch (`probe`: the one before expiry).
            case serveAndRefresh(probe: Bool)
            /// Serve the held values; the refresh was shed (a retry time was set).
            case serveShed
            /// Serve defaults with this code; nothing is fetched.
            case defaults(FlagErrorCode)
            /// Wait for the flight in flight.
            case join
            /// Start a fetch and wait for it.
            case fetch
            /// Start the refetch owed after a marked flight.
            case refetch
            /// Nothing to do.
            case none
        }

        let policy: ContextPolicy
        private(set) var state: State = .absent
        /// The last change event's arrival (nil: none yet).
        private(set) var staleBefore: Duration?
        /// The key generation in use.
        private(set) var keyGeneration: UInt64 = 0
        /// A refetch is owed (a marked flight ended with the context held) and waits for the
        /// gate, the pause's end or the context's retry time: never dropped.
        private(set) var owed = false

        init(policy: ContextPolicy) { self.policy = policy }

        /// The values served now, if any.
        func servable(now: Duration) -> Held? {
            switch state {
            case .held(let held): policy.servable(held, now: now) ? held : nil
            case .fetching(let flight): flight.held.flatMap { policy.servable($0, now: now) ? $0 : nil }
            case .absent, .failing: nil
            }
        }

        /// A request for the context (`join`: it waits for a fetch, `flags(for:)`; else
        /// `flagsIfCached`, which joins nothing but starts the fetch all the same).
        mutating func read(now: Duration, gate: ServiceFetcher.Gate, unit: Double) -> Action {
            switch state {
            case .fetching(let flight):
                if let held = flight.held, policy.servable(held, now: now) { return .serve }
                if let held = flight.held, case .backingOff(let code) = policy.miss(held: held, record: nil, now: now) {
                    return .defaults(code)
                }
                return .join
            case .held(var held):
                switch policy.read(held, now: now, staleBefore: staleBefore, queued: false) {
                case .serve:
                    return .serve
                case .due:
                    switch policy.start(&held, now: now, gate: gate) {
                    case .start:
                        owed = false
                        state = .fetching(Flight(held: held))
                        return .serveAndRefresh(probe: false)
                    case .probe:
                        owed = false
                        state = .fetching(Flight(held: held, probe: true))
                        return .serveAndRefresh(probe: true)
                    case .shed:
                        policy.shed(&held, now: now, unit: unit)
                        state = .held(held)
                        return .serveShed
                    case .none:
                        state = .held(held)
                        return .serve
                    }
                case .expired:
                    return cold(held: held, record: nil, now: now, gate: gate, unit: unit)
                }
            case .failing(let record):
                return cold(held: nil, record: record, now: now, gate: gate, unit: unit)
            case .absent:
                return cold(held: nil, record: nil, now: now, gate: gate, unit: unit)
            }
        }

        private mutating func cold(
            held: Held?, record: FailureRecord?, now: Duration, gate: ServiceFetcher.Gate, unit: Double
        ) -> Action {
            if case .backingOff(let code) = policy.miss(held: held, record: record, now: now) { return .defaults(code) }
            let admission = policy.admit(previous: held != nil, gate: gate)
            guard admission.admitted else {
                if admission.shed, var held {
                    policy.shed(&held, now: now, unit: unit)
                    state = .held(held)
                }
                return .defaults(gate.fatal ? .providerFatal : .providerNotReady)
            }
            owed = false
            state = .fetching(Flight(held: held, record: record))
            return .fetch
        }

        /// The flight's request leaves now, with the key in use.
        mutating func sent(now: Duration) {
            guard case .fetching(var flight) = state, flight.sent == nil else { return }
            flight.sent = Sent(at: now, keyGeneration: keyGeneration)
            state = .fetching(flight)
        }

        /// The flight ends with `outcome` (nothing was sent unless ``sent(now:)`` came first).
        /// A marked flight leaves a refetch owed, tried at once (``tick(now:gate:)``).
        mutating func answer(_ outcome: Outcome, now: Duration, gate: ServiceFetcher.Gate, unit: Double) -> Action {
            guard case .fetching(let flight) = state else { return .none }
            let result = policy.answer(
                outcome, held: flight.held, record: flight.record, sentAt: flight.sent?.at,
                keyGeneration: flight.sent?.keyGeneration ?? keyGeneration, currentKey: keyGeneration, now: now,
                unit: unit)
            switch result {
            case .store(let held), .update(let held): state = .held(held)
            case .fail(let record): state = .failing(record)
            case .none:
                if let held = flight.held {
                    state = .held(held)
                } else if let record = flight.record {
                    state = .failing(record)
                } else {
                    state = .absent
                }
            }
            // Owed: an event found the flight in flight; or an owed refetch that was never sent.
            if flight.marked || (flight.owing && (outcome == .skipped || outcome == .shed)) { owed = true }
            return tick(now: now, gate: gate)
        }

        /// A change event arrives: values confirmed before now are stale, and a flight in
        /// flight is marked.
        mutating func event(now: Duration) {
            staleBefore = now
            if case .fetching(var flight) = state {
                flight.marked = true
                state = .fetching(flight)
            }
        }

        /// `setKey`: answers to requests sent before are ignored from now on.
        mutating func setKey() { keyGeneration &+= 1 }

        /// The entry leaves the cache (eviction): its values and what was owed for them go.
        mutating func evict() {
            switch state {
            case .held:
                state = .absent
                owed = false
            case .fetching(var flight):
                flight.held = nil
                state = .fetching(flight)
            case .absent, .failing:
                break
            }
        }

        /// Time passes or the gate changes: an owed refetch starts when the context is held,
        /// not backing off and the gate admits a refresh; it stays owed otherwise (a pause, no
        /// room, a backoff), and goes when the context is no longer held or the service is
        /// closed or fatal.
        mutating func tick(now: Duration, gate: ServiceFetcher.Gate) -> Action {
            guard owed else { return .none }
            guard case .held(let held) = state, !gate.closed, !gate.fatal else {
                if case .fetching = state { return .none }
                owed = false
                return .none
            }
            guard now >= held.retryAt, gate.admits(.refresh) else { return .none }
            owed = false
            state = .fetching(Flight(held: held, owing: true))
            return .refetch
        }
    }
}
