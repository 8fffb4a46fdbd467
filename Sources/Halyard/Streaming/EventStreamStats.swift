/// Counters of the event stream (SPEC §14). Never carries the stream's URL or any payload.
public struct EventStreamStats: Sendable, Hashable {
    /// Whether a stream is advertised by the control plane and followed.
    public var advertised = false
    /// Whether the stream is connected now.
    public var connected = false
    /// Whether the stream counts as healthy (polling then runs at the safety interval).
    public var healthy = false
    /// Connection attempts.
    public var connects = 0
    /// Attempts that reached a 2xx `text/event-stream` head.
    public var connections = 0
    /// Failures: refused, non-2xx, dropped, silent too long, unparseable.
    public var failures = 0
    /// `refetchEvaluation` events received.
    public var refetchEvents = 0
    /// Events of another `type` (or not JSON), ignored.
    public var ignoredEvents = 0
    /// Events folded into the one pending fetch (coalesced).
    public var coalescedEvents = 0
    /// Connections closed by a timeout: no response head within the connect timeout, or no
    /// byte within the read-inactivity timeout after it.
    public var inactivityCloses = 0

    /// Creates empty counters.
    public init() {}
}
