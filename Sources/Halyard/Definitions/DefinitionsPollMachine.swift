/// When a definitions source is checked, as a pure value-type state machine (docs/definitions.md,
/// "Sources"): no clock, no I/O; every input carries `now` (monotonic) and, where a delay is
/// drawn, a `unit` uniform in [0, 1) from the owner's random source. `DefinitionsFeed` performs
/// the checks it asks for.
///
/// - A check that loads, finds nothing new or refuses a document waits the poll interval
///   (jittered by ``Configuration/pollJitter``) and resets the failure count: a refused
///   document will not fix itself sooner, and its validator is kept so it is not fetched and
///   refused again until it changes.
/// - A failed check waits the backoff (``Configuration/backoff``, growing with consecutive
///   failures) or, without one (a file: a `stat` is cheap and there is no server to spare), the
///   poll interval; a `Retry-After` is a floor over either (``Backoff/delay(failures:retryAfter:unit:)``)
///   and no check goes before it, an explicit refresh included.
/// - One check at a time; none after ``close()``.
struct DefinitionsPollMachine: Sendable, Hashable {
    struct Configuration: Sendable, Hashable {
        /// The interval between checks while healthy.
        var pollInterval: Duration = .seconds(30)
        /// Each interval is drawn from `[interval × (1 - jitter), interval × (1 + jitter)]`.
        var pollJitter: Double = 0.1
        /// The backoff after failures (nil: the poll interval).
        var backoff: Backoff? = Backoff(initial: .seconds(1), maximum: .seconds(300))
    }

    /// How one check ended.
    enum Outcome: Sendable, Hashable {
        /// A new document was loaded and published; `validator` identifies it (an ETag, a
        /// content hash).
        case loaded(validator: String?)
        /// Nothing new: a 304, or the same content.
        case notModified
        /// A document was read and refused; `validator` identifies it, so it is not refused again
        /// until it changes.
        case refused(validator: String?)
        /// No document: an error status, a transport error, an unreadable file.
        case failed(retryAfter: Duration?)
    }

    /// What the owner should do when a check is due or asked for.
    enum Decision: Sendable, Hashable {
        /// Check now, sending `validator` (`If-None-Match`, or the last content hash).
        case check(validator: String?)
        /// A check is already running: join it or skip.
        case busy
        /// A `Retry-After` forbids a check before `until` (monotonic).
        case deferred(until: Duration)
        /// Closed: no more checks.
        case closed
    }

    let configuration: Configuration
    /// The validator of the last document handled (loaded or refused).
    private(set) var validator: String?
    /// Consecutive failed checks.
    private(set) var failures = 0
    /// No check before this (the end of the last `Retry-After`'s jittered window).
    private(set) var retryNotBefore: Duration?
    /// When the next scheduled check is due (nil: at once).
    private(set) var nextCheck: Duration?
    /// Whether a check is running.
    private(set) var checking = false
    /// Whether ``close()`` was called.
    private(set) var isClosed = false

    init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// A check is wanted at `now` (its time came, or an explicit refresh).
    mutating func begin(now: Duration) -> Decision {
        if isClosed { return .closed }
        if checking { return .busy }
        if let retryNotBefore, now < retryNotBefore { return .deferred(until: retryNotBefore) }
        checking = true
        return .check(validator: validator)
    }

    /// The check begun last ended with `outcome` at `now`; returns the delay until the next one.
    @discardableResult
    mutating func finish(_ outcome: Outcome, now: Duration, unit: Double) -> Duration {
        checking = false
        let delay: Duration
        switch outcome {
        case .loaded(let validator), .refused(let validator):
            self.validator = validator
            failures = 0
            delay = pollDelay(unit)
        case .notModified:
            failures = 0
            delay = pollDelay(unit)
        case .failed(let retryAfter):
            failures += 1
            if let backoff = configuration.backoff {
                delay = backoff.delay(failures: failures, retryAfter: retryAfter, unit: unit)
            } else {
                delay = max(pollDelay(unit), RetryAfter.jitteredFloor(retryAfter, unit: unit) ?? .zero)
            }
            retryNotBefore = RetryAfter.jitteredFloor(retryAfter, unit: unit).map { now + $0 }
        }
        if case .failed = outcome {} else { retryNotBefore = nil }
        nextCheck = isClosed ? nil : now + delay
        return delay
    }

    /// No check after this one.
    mutating func close() {
        isClosed = true
        nextCheck = nil
    }

    /// The poll interval, jittered by `unit`.
    private func pollDelay(_ unit: Double) -> Duration {
        let jitter = min(max(configuration.pollJitter, 0), 1)
        let u = unit.isNaN ? 0.5 : min(max(unit, 0), 1)
        let factor = 1 + jitter * (2 * u - 1)
        return max(configuration.pollInterval * factor, .milliseconds(1))
    }
}
