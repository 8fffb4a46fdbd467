/// What the fleet's shared cache did for one service (``FlagServiceStats/sharedCache``;
/// docs/fleet.md, "What an operator sees").
///
/// ```swift
/// if let l2 = service.stats.sharedCache {
///     print(l2.hits, l2.misses, l2.leaseWaits, l2.errors, l2.breakerOpen)
/// }
/// ```
public struct SharedCacheStats: Sendable, Hashable {
    /// Fetches answered by an entry another pod (or this one) wrote: no control-plane request.
    public var hits = 0
    /// Lookups that found no usable entry (none, too old, or for an older flag set).
    public var misses = 0
    /// Entries written back after a control-plane answer.
    public var writes = 0
    /// Entries not written because they were larger than the entry limit (256 KiB).
    public var oversizedEntries = 0
    /// Fetches that found another pod's lease and waited for its entry.
    public var leaseWaits = 0
    /// Lease waits that ended with the other pod's entry (the rest fetched themselves).
    public var leaseWaitHits = 0
    /// Leases this service took (it fetched for the fleet).
    public var leasesTaken = 0
    /// Entries that were corrupt, foreign (another namespace or key) or unauthenticated:
    /// ignored and overwritten.
    public var rejectedEntries = 0
    /// Calls that failed (deadline, connection refused or lost, an error reply).
    public var errors = 0
    /// Calls not made because the breaker was open.
    public var skippedCalls = 0
    /// Whether the breaker is open (or trying one call) now: the service runs on its own cache.
    public var breakerOpen = false
    /// Times the breaker opened.
    public var breakerOpenings = 0

    /// Writes Redis refused because it held a newer entry (a later sent-time stamp), or because
    /// the entry's stamp was more than 1 s ahead of Redis's clock (docs/fleet.md, "Ordered writes").
    public var writesRefused = 0
    /// Entries read with a stamp more than 1 s ahead of this service's clock: not served (a
    /// writer's clock, or this one's, is off).
    public var entriesAhead = 0
    /// Calls dropped unsent because their deadline (counted from their admission) passed while
    /// they waited for their turn: Redis is slower than the calls arrive. A failure for the breaker.
    public var droppedInQueue = 0
    /// Calls that succeeded slower than the slow-call threshold (*default* half the call
    /// deadline): a failure for the breaker, so a slow Redis opens it.
    public var slowCalls = 0
    /// Calls sent to Redis (not those skipped or dropped unsent).
    public var calls = 0
    /// The exchanges (round trips) those calls took: calls that queued while their connection
    /// was busy go out together at its next exchange, up to 32 at a time. `calls / exchanges`
    /// near 1 means Redis keeps up; well above 1, the pod's calls come faster than one round
    /// trip each (docs/fleet.md, "Deadlines and threads").
    public var exchanges = 0
    /// Calls waiting for their turn now.
    public var queueDepth = 0
    /// The most calls that waited at once.
    public var peakQueueDepth = 0
    /// Leases this service holds now (taken and not released, or whose release is pending).
    public var leasesHeld = 0
    /// Leases released (after the fetch, on an error path, by token after a failed call, or by
    /// `close()`).
    public var leasesReleased = 0

    /// The median time of a Redis call on its connection over the last minute (between the
    /// last 50 and 60 s of the service's clock: six 10-s sets of latency buckets, rotated as it
    /// advances; a percentile is its bucket's upper bound, so never understated), the connect
    /// included, the wait for its turn in the queue not (that is ``queueDepth``). Nil when no
    /// call ended in that window, or over 1 s.
    public var callLatencyP50: Duration? = nil
    /// The 99th percentile of the same (``callLatencyP50``): over the last minute, so a Redis
    /// that got slow shows within it, and one that recovered stops showing after it.
    public var callLatencyP99: Duration? = nil
    /// Connections opened again after one was dropped (a failure, a deadline, a failover reply).
    public var reconnects = 0
    /// Calls that failed with a failover reply (`-READONLY`, `-LOADING`, `-MASTERDOWN`): the
    /// connection was dropped and the next call connects again, to where the name points now.
    /// Logged once per episode (the first such reply since Redis last took a write).
    public var failoverErrors = 0
    /// Calls refused for the configuration (`-NOAUTH`, `-WRONGPASS`, `-NOPERM`, `AUTH` or
    /// `SELECT` refused on connect): logged once; retrying does not help.
    public var authErrors = 0
    /// Calls answered as by a Redis Cluster (`-MOVED`, `-ASK`, `-CROSSSLOT`, `-CLUSTERDOWN`,
    /// `-TRYAGAIN`): Cluster is not supported; logged once.
    public var clusterErrors = 0
    /// Calls whose deadline passed on the connection (connecting, sending or waiting for the
    /// reply); calls dropped before they were sent are ``droppedInQueue``.
    public var timeoutErrors = 0
    /// Writes Redis refused with `-OOM` (it is full: `maxmemory` with `noeviction`). Reads go on.
    /// Logged once per episode (the first `-OOM` since Redis last took a write).
    public var outOfMemoryErrors = 0

    /// Creates empty stats.
    public init() {}
}
