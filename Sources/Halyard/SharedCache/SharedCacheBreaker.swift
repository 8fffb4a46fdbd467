/// The shared cache's circuit breaker (SPEC §15, docs/fleet.md, "When Redis is slow or gone"),
/// a pure state machine on a monotonic time given by the caller:
///
/// - **closed**: every call goes; ``failuresToOpen`` failures in a row open it;
/// - **open** until `retryAt`: no call goes (the service runs on its own cache);
/// - then **half-open**: one trial call goes; its success closes the breaker, its failure
///   opens it again for twice as long (``baseOpenTime`` doubling up to ``maxOpenTime``).
struct SharedCacheBreaker: Sendable, Hashable {
    /// Failures in a row that open a closed breaker.
    static let failuresToOpen = 5
    /// How long the first opening lasts.
    static let baseOpenTime: Duration = .seconds(1)
    /// The longest opening.
    static let maxOpenTime: Duration = .seconds(30)

    enum Phase: Sendable, Hashable {
        case closed
        case open(retryAt: Duration)
        /// The trial call is out.
        case halfOpen
    }

    private(set) var phase: Phase = .closed
    private(set) var failuresInARow = 0
    /// Openings since the breaker last closed (the open time's step).
    private(set) var openingsInARow = 0
    /// Openings in all.
    private(set) var openings = 0

    /// Whether a call may go now (taking the trial when the open time is over).
    mutating func admit(now: Duration) -> Bool {
        switch phase {
        case .closed: return true
        case .halfOpen: return false
        case .open(let retryAt):
            guard now >= retryAt else { return false }
            phase = .halfOpen
            return true
        }
    }

    /// A call admitted by ``admit(now:)`` succeeded.
    mutating func succeeded() {
        phase = .closed
        failuresInARow = 0
        openingsInARow = 0
    }

    /// A call admitted by ``admit(now:)`` failed (deadline, connection, error reply).
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
