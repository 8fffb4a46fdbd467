/// The shared cache's circuit breaker (SPEC §15, docs/fleet.md, "When Redis is slow or gone"),
/// a pure state machine on a monotonic time given by the caller:
///
/// - **closed**: every call goes; ``failuresToOpen`` failures in a row open it (a call that
///   waited its deadline out in the queue, or succeeded slower than the slow-call threshold,
///   is a failure here);
/// - **open** until `retryAt`: no call goes (the service runs on its own cache);
/// - then **half-open** until `trialDeadline`: one trial call goes; its success closes the
///   breaker, its failure opens it again for twice as long (``baseOpenTime`` doubling up to
///   ``maxOpenTime``). A trial that has not reported by ``trialTime`` is given up: the next call
///   is admitted as a new trial (a late report from the old one still counts, as any report does).
///
/// Every admitted call must report: ``succeeded()`` or ``failed(now:)``. A call that ends because
/// the client was closed (`RedisError.closed`) reports a failure: it learned nothing good of
/// Redis, and a closed client fails every later call the same way.
struct SharedCacheBreaker: Sendable, Hashable {
    /// Failures in a row that open a closed breaker.
    static let failuresToOpen = 5
    /// How long the first opening lasts.
    static let baseOpenTime: Duration = .seconds(1)
    /// The longest opening.
    static let maxOpenTime: Duration = .seconds(30)
    /// How long a trial call may go unreported before another is admitted: far longer than a
    /// call's deadline (*default* 25 ms), so only a call that never reports is superseded.
    static let trialTime: Duration = .seconds(1)

    enum Phase: Sendable, Hashable {
        case closed
        case open(retryAt: Duration)
        /// The trial call is out; another goes at `trialDeadline` if it has not reported.
        case halfOpen(trialDeadline: Duration)
    }

    private(set) var phase: Phase = .closed
    private(set) var failuresInARow = 0
    /// Openings since the breaker last closed (the open time's step).
    private(set) var openingsInARow = 0
    /// Openings in all.
    private(set) var openings = 0

    /// Whether a call may go now (taking the trial when the open time is over, or when the
    /// trial out has not reported by its deadline).
    mutating func admit(now: Duration) -> Bool {
        switch phase {
        case .closed: return true
        case .open(let until), .halfOpen(let until):
            guard now >= until else { return false }
            phase = .halfOpen(trialDeadline: now + Self.trialTime)
            return true
        }
    }

    /// Whether a call admitted earlier and waiting its turn may still go when its turn comes:
    /// not while the breaker is open (a call queued before it opened is skipped); when the
    /// open time is over, the call goes as the trial. A closed or half-open breaker lets it go
    /// (its deadline, counted from its admission, bounds it).
    mutating func stillAdmits(now: Duration) -> Bool {
        switch phase {
        case .closed, .halfOpen: return true
        case .open(let until):
            guard now >= until else { return false }
            phase = .halfOpen(trialDeadline: now + Self.trialTime)
            return true
        }
    }

    /// A call admitted by ``admit(now:)`` succeeded.
    mutating func succeeded() {
        phase = .closed
        failuresInARow = 0
        openingsInARow = 0
    }

    /// A call admitted by ``admit(now:)`` failed (deadline, connection, error reply, the client
    /// closed), waited its deadline out in the queue, or succeeded slower than the slow-call
    /// threshold (a Redis slow under the deadline still opens the breaker).
    mutating func failed(now: Duration) {
        failuresInARow += 1
        switch phase {
        case .closed where failuresInARow < Self.failuresToOpen: return
        case .open: return  // a call admitted before the opening ended late
        default: break
        }
        openingsInARow += 1
        openings += 1
        let step = min(openingsInARow - 1, 5)
        let time = min(Self.baseOpenTime * (1 << step), Self.maxOpenTime)
        phase = .open(retryAt: now + time)
    }

    /// Whether calls are being skipped now.
    var isOpen: Bool { phase != .closed }
}
