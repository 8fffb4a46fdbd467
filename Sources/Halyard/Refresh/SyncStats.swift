public import Foundation

/// Counters of the control-plane sync (part of the client's stats).
public struct SyncStats: Sendable, Hashable {
    /// Requests handed to the transport.
    public var requestsSent = 0
    /// Responses received, by HTTP status (200, 304, 429, 503, ...).
    public var responsesByStatus: [Int: Int] = [:]
    /// 304 answers (held values confirmed).
    public var notModified = 0
    /// Fetches that timed out.
    public var timeouts = 0
    /// Fetches that failed without an HTTP response (reset, refused, ...).
    public var networkErrors = 0
    /// Responses refused because the body exceeded the size limit.
    public var oversizedResponses = 0
    /// 200 responses whose body could not be parsed (never applied).
    public var invalidBodies = 0
    /// Flag items skipped because they had no string `key`.
    public var skippedItems = 0
    /// New snapshots published from 200 responses.
    public var snapshotsApplied = 0
    /// `refresh()` / `refreshIfStale()` calls that joined a request already in flight.
    public var coalescedRefreshes = 0
    /// `refresh()` calls that sent nothing: `Retry-After` or backoff in force, or values fresh.
    public var deferredRefreshes = 0
    /// Consecutive failed fetches right now (0 after a success).
    public var consecutiveFailures = 0
    /// When the control plane last confirmed the served values (200 or 304).
    public var lastConfirmation: Date?
    /// Contexts that had to be trimmed to fit the size cap.
    public var contextTrims = 0
    /// The attribute names dropped from the current context by fitting.
    public var droppedAttributes: [String] = []
    /// Fetches sent because the event stream asked (after a connect, a `refetchEvaluation`
    /// event, or `setActive(true)`); also counted in ``requestsSent``.
    public var streamFetches = 0
    /// Answers to requests sent with a key `setKey(_:)` has replaced, ignored whatever their
    /// status (never applied, cached, or allowed to pause or fail anything).
    public var staleKeyAnswers = 0

    /// Creates empty counters.
    public init() {}
}
