/// The refresh machine's state, as types whose cases carry their data (the shape of
/// swift-async-algorithms' state machines): a rule such as "a refused key is a hard error" or
/// "an owed fetch is never in flight" holds because nothing else can be written down.
extension RefreshMachine {
    /// Where the machine is in its life; each case carries the data that exists only there.
    enum Lifecycle: Sendable, Hashable {
        /// Not started: only values from the on-device cache and the polling interval arrive.
        case idle
        /// Started with an invalid context: nothing is fetched until an `identify` (status `error`).
        case invalidContext
        /// Following a valid context.
        case running(Session)
        /// Closed for good: nothing is sent again. Carries the state it closed in (never `closed`
        /// itself; a session's fetch slot empty, its switch no longer `reconciling`), from which
        /// the status, the readiness and the failure count are still read.
        indirect case closed(Lifecycle)
    }

    /// A valid context being followed, and how fetching for it goes.
    struct Session: Sendable, Hashable {
        /// The fingerprint of the context (requests carry it).
        var fingerprint: String
        /// How the fetches since the context (or the key) changed went.
        var health: Health = .ok
        /// Whether the values of an `identify` are still to be served.
        var contextSwitch: ContextSwitch
        /// The one fetch in flight, or the one owed.
        var fetch: FetchSlot = .idle
        /// When polls are due; nil until a success or a 400 drew one. Kept across an `identify`.
        var poll: PollSchedule?

        /// The status of a session, given the values held (docs/protocol.md, "Status").
        func status(values: HeldValues?, now: Duration, staleAfter: Duration) -> ClientStatus {
            guard let values else {
                if case .rejected(.key, _) = health { return .fatal }
                if contextSwitch == .reconciling { return .reconciling }
                return health == .ok ? .notReady : .error
            }
            if contextSwitch == .reconciling { return .reconciling }
            if case .rejected = health { return .error }
            if contextSwitch == .unresolved { return health == .ok ? .reconciling : .error }
            guard let confirmed = values.confirmedAt else { return .stale }
            if health != .ok, now - confirmed >= staleAfter { return .stale }
            return .ready
        }
    }

    /// Values the owner serves: loaded from the on-device cache, or fetched.
    struct HeldValues: Sendable, Hashable {
        /// The fingerprint of the context they are for.
        var fingerprint: String
        /// The ETag they came with, sent as `If-None-Match` while ``fingerprint`` is the current
        /// context's; nil when none came or the key changed since.
        var etag: String?
        /// When the control plane last confirmed them; nil for cached values it has not confirmed.
        var confirmedAt: Duration?
    }

    /// How the fetches for the current context went since it (or the key) changed.
    enum Health: Sendable, Hashable {
        /// No fetch failed since the last success (or since the context changed).
        case ok
        /// The last fetch failed. `retries` counts the transient failures in a row and ends
        /// their backoff; nil when a key change reset them (its fetch has not been answered).
        case failing(Retries?)
        /// The control plane refused the context (400) or the key (401/403) and no success has
        /// cleared it; `retries` counts the transient failures since. A refused key stops
        /// background fetching: that is "auth-blocked".
        case rejected(Rejection, Retries?)

        /// The transient failures in a row and their backoff (nil: none).
        var retries: Retries? {
            switch self {
            case .ok: nil
            case .failing(let retries), .rejected(_, let retries): retries
            }
        }

        /// Whether the key was refused (401/403): background fetches stop until a success, a
        /// key change or an `identify`.
        var isKeyRefused: Bool {
            if case .rejected(.key, _) = self { return true }
            return false
        }

        /// This health after one more transient failure (a rejection stands).
        func failedAgain(_ retries: Retries) -> Health {
            switch self {
            case .ok, .failing: .failing(retries)
            case .rejected(let rejection, _): .rejected(rejection, retries)
            }
        }
    }

    /// What the control plane refused.
    enum Rejection: Sendable, Hashable {
        /// The context (400): polling goes on at the normal cadence.
        case context
        /// The key (401/403): background fetching stops.
        case key
    }

    /// Transient failures in a row and the end of their backoff.
    struct Retries: Sendable, Hashable {
        /// Failures in a row (at least 1).
        var count: Int
        /// No retry (and no poll, stream fetch or `refresh()`) before this.
        var until: Duration
    }

    /// An `identify` whose values are not served yet.
    enum ContextSwitch: Sendable, Hashable {
        /// No `identify` is unresolved: the values served are for the current context (or none is).
        case settled
        /// The `identify`'s fetch is in flight or owed (status `reconciling`).
        case reconciling
        /// The `identify`'s values are not served and no fetch is under way for it any more: it
        /// failed (the retries go on), or the machine closed. A later success resolves it.
        case unresolved
    }

    /// The one fetch slot of a session.
    enum FetchSlot: Sendable, Hashable {
        /// No fetch in flight or owed.
        case idle
        /// This request is in flight.
        case inFlight(InFlight)
        /// A fetch a `Retry-After` deferred, sent (ignoring backoff) with this trigger as soon as
        /// it ends: a start, identify, key change or refresh must not be lost when nothing else
        /// (no poll, no retry) would wake the engine later.
        case owed(Trigger)
    }

    /// When the next poll is due.
    struct PollSchedule: Sendable, Hashable {
        /// When the last poll delay was drawn from (the last success or 400).
        var base: Duration
        /// The next poll; nil when polling is off or the key was refused.
        var next: Duration?
    }
}
