import Dispatch
import Foundation

/// The fleet's shared cache as one service uses it (SPEC §15, docs/fleet.md): entry and lease
/// names, the entry format, the breaker and the counters, over one ``RedisClient``.
///
/// Every call is made on a serial queue of the tier's own (one per connection: a connection
/// takes one exchange at a time) and awaited by the fetch task that asked: no call blocks a
/// thread of the Swift concurrency pool and none is made on the read path. Calls that queue
/// while their connection is busy go out together in its next exchange (one pipeline, up to
/// ``maxCallsPerExchange`` calls), each answered and counted on its own. A call's
/// deadline (*default* 25 ms) counts from when the tier admits it, so a call that waited its
/// deadline out in the queue is dropped unsent (counted), and one queued before the breaker
/// opened is skipped when its turn comes: a hung Redis costs a fetch at most one deadline per
/// call, however many calls are queued (docs/fleet.md, "When Redis is slow or gone").
package final class SharedTier: Sendable {
    /// What a lookup found.
    enum Lookup: Sendable {
        /// A usable entry.
        case entry(SharedEntry)
        /// No entry, or one that was rejected (counted).
        case none
        /// Redis could not be asked (breaker open, deadline, connection).
        case unavailable
    }

    /// What asking for a context's lease came to.
    enum Lease: Sendable {
        /// This service holds the lease (`token` releases it); `entry` is the context's entry
        /// read in the same round trip, if any.
        case acquired(token: [UInt8], entry: SharedEntry?)
        /// Another pod holds it.
        case held
        /// Redis could not be asked: fetch alone.
        case unavailable
    }

    struct State {
        var keys: Keys
        /// The fetcher's key generation ``keys`` belong to (``setKeys(_:generation:)``).
        var generation: UInt64 = 0
        var breaker = SharedCacheBreaker()
        var stats = SharedCacheStats()
        /// Whether the unavailability was logged (once per breaker opening).
        var loggedOutage = false
        /// The failure classes already logged (auth, cluster): a configuration problem is
        /// logged once in the tier's life, however often it recurs.
        var loggedClasses: Set<RedisError.Category> = []
        /// The failure classes in an episode now (failover, out of memory): the first reply of
        /// an episode is logged, and the next write Redis takes ends it (``call(_:writes:)``).
        var episodes: Set<RedisError.Category> = []
        /// The calls' latencies over the last minute (``SharedCacheStats/callLatencyP99``).
        var latency = SharedCacheLatencyWindow()
        /// Calls admitted and not yet taken off each lane's queue.
        var queued: [Int]
        /// Whether each lane's last call failed: a call that then waits out its deadline in the
        /// queue is behind a stuck connection (a failure for the breaker), not behind a burst
        /// a healthy Redis is working through.
        var laneFailing: [Bool]
        /// The leases this service may hold, by lease key: taken (or asked for, the `SET NX`
        /// sent) and not yet released. ``close()`` releases them all, and a lease call that
        /// failed (its `SET NX` may have run) is released by its token after the next call
        /// that succeeds.
        var leases: [[UInt8]: HeldLease] = [:]
        var closed = false
    }

    /// A lease this service took or asked for.
    struct HeldLease {
        var token: [UInt8]
        /// Whether the call that asked for it failed: Redis may hold it; release it by token.
        var unsettled: Bool
        /// When it lapses anyway (monotonic).
        var lapsesAt: Duration
    }

    /// One connection, the serial queue its exchanges take turns on, and the calls waiting for
    /// their turn (sent together at the next one: ``SharedTier/drain(_:)``).
    struct Lane: Sendable {
        let client: RedisClient
        let queue: DispatchQueue
        let waiting = Locked(LaneWaiting())
    }

    /// The calls admitted to a lane and not yet taken by its drain.
    struct LaneWaiting: Sendable {
        var calls: [WaitingCall] = []
        /// Whether a drain is queued or running on the lane (it takes every call that arrives
        /// until the list is empty, then clears this under the same lock).
        var draining = false
    }

    /// A call waiting for its lane's next exchange.
    struct WaitingCall: Sendable {
        let commands: [RedisCommand]
        /// Its deadline, counted from its admission.
        let deadline: ContinuousClock.Instant
        let continuation: CheckedContinuation<Outcome<[RedisValue]>, Never>
    }

    /// The most calls one exchange carries by default: a burst is sent in pipelines of this
    /// many calls, so no call waits behind more than this many others' replies on its connection.
    package static let defaultMaxCallsPerExchange = 32

    let lanes: [Lane]
    /// The first connection's client (tests).
    var client: RedisClient { lanes[0].client }
    /// Entries larger than this are not written (*default* 256 KiB).
    let maxEntryBytes: Int
    /// How long a lease lasts: `requestTimeout` + 1 s.
    let leaseDuration: Duration
    /// How long an entry lives in Redis: `maxStaleness`.
    let entryLifetime: Duration
    /// Each call's deadline, from its admission (``SharedCache/callDeadline``).
    let callDeadline: Duration
    /// A successful call slower than this is a failure for the breaker.
    let slowCallThreshold: Duration
    /// The most calls one exchange carries (``defaultMaxCallsPerExchange``; 1 sends each call
    /// alone, as the tier did before, for the benchmark's same-run comparison).
    let maxCallsPerExchange: Int
    let clock: any HalyardClock
    let logHandler: HalyardLogRecordHandler?
    let state: Locked<State>
    /// How much earlier a context served from an entry counts as due on this pod, given the
    /// most (docs/fleet.md, "Herds"): uniform in `0...most`; tests inject a fixed draw.
    let dueDraw = Locked<@Sendable (Int64) -> Int64>({ Int64.random(in: 0...max(0, $0)) })

    /// The default entry limit.
    static let defaultMaxEntryBytes = 256 << 10
    /// How far ahead of a clock an entry's stamp may be (docs/fleet.md, "Ordered writes"):
    /// Redis refuses a write stamped further ahead of its own clock (`TIME`), and a reader
    /// does not serve an entry stamped further ahead of its own.
    static let maxStampLead: Int64 = 1000

    convenience init(
        client: RedisClient, keys: Keys, leaseDuration: Duration, entryLifetime: Duration, clock: any HalyardClock,
        logHandler: HalyardLogRecordHandler?, maxEntryBytes: Int = defaultMaxEntryBytes,
        callDeadline: Duration = RedisClient.defaultTimeout, slowCallThreshold: Duration? = nil
    ) {
        self.init(
            clients: [client], keys: keys, leaseDuration: leaseDuration, entryLifetime: entryLifetime, clock: clock,
            logHandler: logHandler, maxEntryBytes: maxEntryBytes, callDeadline: callDeadline,
            slowCallThreshold: slowCallThreshold)
    }

    /// A tier over `clients` (one connection each; at least one).
    package init(
        clients: [RedisClient], keys: Keys, leaseDuration: Duration, entryLifetime: Duration, clock: any HalyardClock,
        logHandler: HalyardLogRecordHandler?, maxEntryBytes: Int = defaultMaxEntryBytes,
        callDeadline: Duration = RedisClient.defaultTimeout, slowCallThreshold: Duration? = nil,
        maxCallsPerExchange: Int = defaultMaxCallsPerExchange
    ) {
        precondition(!clients.isEmpty, "a shared tier needs a client")
        self.maxCallsPerExchange = max(1, maxCallsPerExchange)
        lanes = clients.enumerated().map { index, client in
            Lane(client: client, queue: DispatchQueue(label: "halyard.shared-cache.\(index)"))
        }
        self.leaseDuration = leaseDuration
        self.entryLifetime = entryLifetime
        self.clock = clock
        self.logHandler = logHandler
        self.maxEntryBytes = maxEntryBytes
        self.callDeadline = callDeadline
        self.slowCallThreshold = slowCallThreshold ?? callDeadline / 2
        state = Locked(
            State(
                keys: keys, queued: Array(repeating: 0, count: clients.count),
                laneFailing: Array(repeating: false, count: clients.count)))
    }

    /// The counters and the breaker's state.
    package var stats: SharedCacheStats {
        let now = clock.monotonicNow
        var stats = state.withLock { s in
            var stats = s.stats
            stats.breakerOpen = s.breaker.isOpen
            stats.breakerOpenings = s.breaker.openings
            stats.queueDepth = s.queued.reduce(0, +)
            stats.leasesHeld = s.leases.count
            let latency = s.latency.histogram(now: now)
            stats.callLatencyP50 = latency.percentile(0.5)
            stats.callLatencyP99 = latency.percentile(0.99)
            return stats
        }
        // The connections' own figures: reconnects, failures by class.
        for lane in lanes {
            let client = lane.client.stats
            stats.reconnects += client.reconnects
            stats.failoverErrors += client.errors[.failover, default: 0]
            stats.authErrors += client.errors[.auth, default: 0]
            stats.clusterErrors += client.errors[.cluster, default: 0]
            stats.timeoutErrors += client.errors[.timeout, default: 0]
            stats.outOfMemoryErrors += client.errors[.outOfMemory, default: 0]
        }
        return stats
    }

    /// Entries are named and MAC'd under the new key from now on: `setKey`, called by the
    /// service's fetcher in the critical section that makes `generation` its key generation.
    /// The key prefix stays this tier's.
    func setKeys(_ keys: Keys, generation: UInt64) {
        state.withLock {
            var keys = keys
            keys.prefix = $0.keys.prefix
            $0.keys = keys
            $0.generation = generation
        }
    }

    /// The names and MAC key in use now, and the key generation they belong to: a fetch takes
    /// them once and makes every call of its own with them.
    var current: (keys: Keys, generation: UInt64) { state.withLock { ($0.keys, $0.generation) } }

    /// Releases every lease this service may hold (by token), then closes the connections: on
    /// each lane after the calls queued there before it (those already past their deadline, or
    /// behind an open breaker, are dropped unsent). Never blocks; no lease is taken after it.
    /// ``FlagService/close()`` calls it before it cancels the fetches.
    package func close() {
        let already = state.withLock { s -> Bool in
            defer { s.closed = true }
            return s.closed
        }
        guard !already else { return }
        for lane in lanes {
            lane.queue.async { [self] in
                let releases = state.withLock { s -> [RedisCommand] in
                    s.leases.map { .compareAndDelete($0.key, token: $0.value.token) }
                }
                if !releases.isEmpty {
                    let released = (try? lane.client.pipeline(releases, timeout: callDeadline)) != nil
                    if released {
                        state.withLock { s in
                            s.stats.leasesReleased += s.leases.count
                            s.leases.removeAll()
                        }
                    }
                }
                lane.client.close()
            }
        }
    }

    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded(.down)) }
}
