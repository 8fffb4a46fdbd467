import Dispatch
import Foundation

/// The fleet's shared cache as one service uses it (SPEC §15, docs/fleet.md): entry and lease
/// names, the entry format, the breaker and the counters, over one ``RedisClient``.
///
/// Every call is made on a serial queue of the tier's own (one per connection: a connection
/// takes one exchange at a time anyway) and awaited by the fetch task that asked: no call
/// blocks a thread of the Swift concurrency pool and none is made on the read path. A call's
/// deadline (*default* 25 ms) counts from when the tier admits it, so a call that waited its
/// deadline out in the queue is dropped unsent (counted), and one queued before the breaker
/// opened is skipped when its turn comes: a hung Redis costs a fetch at most one deadline per
/// call, however many calls are queued (docs/fleet.md, "When Redis is slow or gone").
final class SharedTier: Sendable {
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

    /// The names and the MAC key of one SDK key's entries.
    struct Keys: Sendable {
        /// A digest of the length-prefixed base URL, SDK key and app id (never the key).
        var namespace: String
        /// The MAC key, derived from the SDK key.
        var secret: [UInt8]
        /// The first part of every key (``SharedCache/keyPrefix``).
        var prefix = "halyard"

        init(baseURL: URL, key: String, appID: String?, prefix: String = "halyard") {
            self.prefix = prefix
            func prefixed(_ s: String) -> String { "\(s.utf8.count):\(s)" }
            let material = prefixed(baseURL.absoluteString) + prefixed(key) + prefixed(appID ?? "")
            namespace = SHA1.hexDigest("halyard-l2 namespace\n" + material)
            secret = SharedEntry.hmac(Array(key.utf8), Array("halyard-l2 secret\n\(namespace)".utf8))
        }

        /// The entry id of a context: a MAC of its fingerprint, so that whoever reads Redis
        /// cannot test whether a known context has an entry.
        func id(_ fingerprint: String) -> String {
            SHA1.hex(SharedEntry.hmac(secret, Array("fingerprint\n\(fingerprint)".utf8)))
        }

        /// `<prefix>:v1:<namespace>:{<id>}` (SPEC §15's `halyard:v1:` names): the id is the key's hash tag, so a context's entry and
        /// lease are in one Redis Cluster slot and contexts spread over the slots (a later
        /// Cluster mode needs no migration).
        func entryKey(_ id: String) -> [UInt8] { Array("\(prefix):v1:\(namespace):{\(id)}".utf8) }
        /// The entry's key and `:lease`.
        func leaseKey(_ id: String) -> [UInt8] { Array("\(prefix):v1:\(namespace):{\(id)}:lease".utf8) }
    }

    private struct State {
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
    private struct HeldLease {
        var token: [UInt8]
        /// Whether the call that asked for it failed: Redis may hold it; release it by token.
        var unsettled: Bool
        /// When it lapses anyway (monotonic).
        var lapsesAt: Duration
    }

    /// One connection and the serial queue its calls take turns on.
    private struct Lane: Sendable {
        let client: RedisClient
        let queue: DispatchQueue
    }

    private let lanes: [Lane]
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
    private let clock: any HalyardClock
    private let logHandler: HalyardLogRecordHandler?
    private let state: Locked<State>
    /// How much earlier a context served from an entry counts as due on this pod, given the
    /// most (docs/fleet.md, "Herds"): uniform in `0...most`; tests inject a fixed draw.
    private let dueDraw = Locked<@Sendable (Int64) -> Int64>({ Int64.random(in: 0...max(0, $0)) })

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
    init(
        clients: [RedisClient], keys: Keys, leaseDuration: Duration, entryLifetime: Duration, clock: any HalyardClock,
        logHandler: HalyardLogRecordHandler?, maxEntryBytes: Int = defaultMaxEntryBytes,
        callDeadline: Duration = RedisClient.defaultTimeout, slowCallThreshold: Duration? = nil
    ) {
        precondition(!clients.isEmpty, "a shared tier needs a client")
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
    var stats: SharedCacheStats {
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
    func close() {
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

    // MARK: - Calls

    /// The entry of `fingerprint`, when there is a usable one (under `keys`, *default* the
    /// current ones).
    func lookup(_ fingerprint: String, keys: Keys? = nil) async -> Lookup {
        let keys = keys ?? state.withLock { $0.keys }
        let id = keys.id(fingerprint)
        let replies = await call([.get(keys.entryKey(id))], writes: false)
        guard let replies else { return .unavailable }
        return decode(replies.first, keys: keys, id: id)
    }

    /// Whether `fingerprint`'s lease is still held and, only once it is not, its entry (one
    /// round trip, a script): what a pod waiting for another's fetch looks at. The entry is
    /// not read while the lease is held, so a waiter does not download a stale entry at every
    /// poll.
    func poll(_ fingerprint: String, keys: Keys? = nil) async -> (Lookup, leaseHeld: Bool) {
        let keys = keys ?? state.withLock { $0.keys }
        let id = keys.id(fingerprint)
        let command = RedisCommand.eval(
            Self.pollScript, keys: [keys.leaseKey(id), keys.entryKey(id)], arguments: [])
        let replies = await call([command], writes: false)
        guard let reply = replies?.first else { return (.unavailable, false) }
        if case .integer = reply { return (.none, true) }
        return (decode(reply, keys: keys, id: id, counting: false), false)
    }

    /// Takes `fingerprint`'s lease (`SET … NX PX`) with a random token, and reads the entry in
    /// the same round trip: another pod may have written it and released its lease since this
    /// pod looked (then the lease just taken is given back and the entry used). The token is
    /// recorded before it is sent: should the call fail after Redis ran the `SET`, the lease is
    /// released by its token later (``close()``, or after the next call that succeeds).
    func acquireLease(_ fingerprint: String, keys: Keys? = nil) async -> Lease {
        let keys = keys ?? state.withLock { $0.keys }
        let id = keys.id(fingerprint)
        var generator = SystemRandomNumberGenerator()
        let token = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let leaseKey = keys.leaseKey(id)
        let lapsesAt = clock.monotonicNow + leaseDuration
        let recorded = state.withLock { s -> (ok: Bool, stale: [UInt8]?) in
            if s.closed { return (false, nil) }
            // This pod's own earlier lease of the context, whose call failed: released first,
            // or this pod would wait on it.
            let stale = s.leases[leaseKey].flatMap { $0.unsettled ? $0.token : nil }
            s.leases[leaseKey] = HeldLease(token: token, unsettled: false, lapsesAt: lapsesAt)
            return (true, stale)
        }
        guard recorded.ok else { return .unavailable }
        let commands: [RedisCommand] =
            (recorded.stale.map { [.compareAndDelete(leaseKey, token: $0)] } ?? []) + [
                .set(leaseKey, token, expiry: leaseDuration, onlyIfAbsent: true), .get(keys.entryKey(id)),
            ]
        let answered = await call(commands, writes: true)
        let replies = answered.map { Array($0.suffix(2)) }
        guard let replies, replies.count == 2 else {
            // The `SET NX` may have run: released by its token after the next success.
            state.withLock { s in
                if s.leases[leaseKey]?.token == token { s.leases[leaseKey]?.unsettled = true }
            }
            return .unavailable
        }
        let entry: SharedEntry?
        if case .entry(let e) = decode(replies[1], keys: keys, id: id, counting: false) {
            entry = e
        } else {
            entry = nil
        }
        switch replies[0] {
        case .simple("OK"):
            state.withLock { $0.stats.leasesTaken += 1 }
            return .acquired(token: token, entry: entry)
        case .bulk(nil):
            forget(leaseKey, token: token)
            return .held
        default:
            state.withLock { $0.stats.errors += 1 }
            forget(leaseKey, token: token)
            return .unavailable
        }
    }

    /// Gives back the lease `token` of `fingerprint` (taken under `keys`), without writing.
    func releaseLease(_ token: [UInt8], for fingerprint: String, keys: Keys) async {
        await store(nil, for: fingerprint, releasing: token, leaseKeys: keys)
    }

    /// Writes `entry` for `fingerprint` (unless it is over the entry limit) and releases the
    /// lease `token` when given, in one round trip. The entry is written only when
    /// `generation` (the key generation its request was sent with; nil: the current one) is
    /// still the current one, under that key's names and MAC, never under a newer key's
    /// (SPEC §15). The lease is released under `leaseKeys` (those it was taken with; *default*
    /// the current ones).
    ///
    /// The write is ordered (``orderedSetScript``): Redis keeps the entry it holds when that
    /// one is newer (a later sent-time stamp, or the same stamp and fetched for a named
    /// flag-set version when this one was not), and refuses a stamp more than
    /// ``maxStampLead`` ahead of its own clock; both are counted in
    /// ``SharedCacheStats/writesRefused``.
    func store(
        _ entry: SharedEntry?, for fingerprint: String, sentWith generation: UInt64? = nil,
        releasing token: [UInt8]?, leaseKeys: Keys? = nil
    ) async {
        let (current, currentGeneration) = state.withLock { ($0.keys, $0.generation) }
        let entry = generation == nil || generation == currentGeneration ? entry : nil
        let keys = current
        let id = keys.id(fingerprint)
        var commands: [RedisCommand] = []
        if let entry {
            let bytes = entry.encoded(namespace: keys.namespace, id: id, secret: keys.secret)
            if bytes.count <= maxEntryBytes {
                let age = Duration.milliseconds(max(0, Self.milliseconds(clock.wallNow) - entry.confirmedAt))
                if age < entryLifetime {
                    commands.append(
                        Self.orderedSet(keys.entryKey(id), bytes, entry: entry, expiry: entryLifetime - age))
                }
            } else {
                state.withLock { $0.stats.oversizedEntries += 1 }
            }
        }
        let writes = commands.count
        var leaseKey: [UInt8]?
        if let token {
            let leaseKeys = leaseKeys ?? keys
            let key = leaseKeys.leaseKey(leaseKeys.id(fingerprint))
            leaseKey = key
            commands.append(.compareAndDelete(key, token: token))
        }
        guard !commands.isEmpty else { return }
        let pipeline = commands
        let replies = await call(pipeline, writes: true)
        guard let replies else {
            // Not released: Redis may still hold it. Released by token after the next success.
            if let leaseKey, let token {
                state.withLock { s in
                    if s.leases[leaseKey]?.token == token { s.leases[leaseKey]?.unsettled = true }
                }
            }
            return
        }
        if let leaseKey, let token {
            forget(leaseKey, token: token)
            state.withLock { $0.stats.leasesReleased += 1 }
        }
        guard writes == 1 else { return }
        switch replies.first {
        case .integer(1)?: state.withLock { $0.stats.writes += 1 }
        case .integer(0)?, .integer(-1)?: state.withLock { $0.stats.writesRefused += 1 }
        default: state.withLock { $0.stats.errors += 1 }  // an error reply (e.g. Redis out of memory)
        }
    }

    /// A draw of how many milliseconds earlier than its entry says a context served from the
    /// shared cache counts as due on this pod, at most `most` (docs/fleet.md, "Herds").
    func drawDueEarlier(most: Int64) -> Int64 {
        let draw = dueDraw.withLock { $0 }
        return min(max(0, draw(most)), max(0, most))
    }

    /// Replaces the due-early draw (tests: a fixed value instead of a random one).
    func setDueDraw(_ draw: @escaping @Sendable (Int64) -> Int64) { dueDraw.withLock { $0 = draw } }

    /// Counts a lease wait and how it ended.
    func noteLeaseWait(served: Bool) {
        state.withLock {
            $0.stats.leaseWaits += 1
            if served { $0.stats.leaseWaitHits += 1 }
        }
    }

    /// Counts a lookup that found an entry too old (or of an older flag set) to use.
    func noteUnusable() { state.withLock { $0.stats.misses += 1 } }

    /// Counts a fetch answered by an entry.
    func noteHit() { state.withLock { $0.stats.hits += 1 } }

    // MARK: - Scripts

    /// The waiter's poll: `1` while the lease (`KEYS[1]`) is held, else the entry (`KEYS[2]`,
    /// or nil).
    static let pollScript = "if redis.call('exists',KEYS[1])==1 then return 1 end return redis.call('get',KEYS[2])"

    /// The ordered write (docs/fleet.md, "Ordered writes"): `SET KEYS[1] ARGV[1] PX ARGV[2]`
    /// unless the entry there is newer. `ARGV[3]`: the new entry's stamp (wall milliseconds its
    /// request was sent), `ARGV[4]`: 1 when fetched for a named flag-set version, `ARGV[5]`: the
    /// largest lead of a stamp over Redis's clock. Returns 1 (written), 0 (a newer entry kept)
    /// or -1 (the stamp is too far ahead of Redis's clock). An entry held whose own stamp is
    /// too far ahead never blocks a write.
    static let orderedSetScript = """
        local t = redis.call('time')
        local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
        local stamp, lead = tonumber(ARGV[3]), tonumber(ARGV[5])
        if stamp > now + lead then return -1 end
        local old = redis.call('get', KEYS[1])
        if old then
          local s, v = string.match(old, '^halyard%-shared 2 (%d+) (%d) ')
          s = tonumber(s)
          if s and s <= now + lead and (s > stamp or (s == stamp and tonumber(v) > tonumber(ARGV[4]))) then
            return 0
          end
        end
        redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
        return 1
        """

    /// The ordered write of `bytes` (the encoding of `entry`) at `key`.
    static func orderedSet(_ key: [UInt8], _ bytes: [UInt8], entry: SharedEntry, expiry: Duration) -> RedisCommand {
        .eval(
            orderedSetScript, keys: [key],
            arguments: [
                bytes, Array(String(RedisCommand.milliseconds(expiry)).utf8), Array(String(entry.confirmedAt).utf8),
                Array((entry.flagConfig == nil ? "0" : "1").utf8), Array(String(maxStampLead).utf8),
            ])
    }

    // MARK: - Internals

    /// Drops the record of a lease that is released (or was never taken).
    private func forget(_ leaseKey: [UInt8], token: [UInt8]) {
        state.withLock { s in
            if s.leases[leaseKey]?.token == token { s.leases.removeValue(forKey: leaseKey) }
        }
    }

    /// The entry in `reply`; a miss or a rejected entry is counted when `counting` (a lease's
    /// read and a lease wait's polls look again at what the lookup counted). An entry stamped
    /// more than ``maxStampLead`` ahead of this pod's clock is not used (``SharedCacheStats/entriesAhead``).
    private func decode(_ reply: RedisValue?, keys: Keys, id: String, counting: Bool = true) -> Lookup {
        guard case .bulk(let bytes)? = reply, let bytes else {
            if counting { state.withLock { $0.stats.misses += 1 } }
            return .none
        }
        do {
            let entry = try SharedEntry.decode(
                bytes, namespace: keys.namespace, id: id, secret: keys.secret, limit: maxEntryBytes)
            if entry.confirmedAt > Self.milliseconds(clock.wallNow) + Self.maxStampLead {
                if counting {
                    state.withLock {
                        $0.stats.entriesAhead += 1
                        $0.stats.misses += 1
                    }
                }
                return .none
            }
            return .entry(entry)
        } catch {
            // Corrupt, foreign or unauthenticated: ignored; the fetch that follows overwrites it.
            if counting {
                state.withLock {
                    $0.stats.rejectedEntries += 1
                    $0.stats.misses += 1
                }
            }
            return .none
        }
    }

    /// What became of one call.
    private enum Outcome<T: Sendable>: Sendable {
        case done(T, elapsed: Duration)
        case failed(RedisError)
        /// Its deadline passed while it waited in the queue: not sent. `stuck`: the call before
        /// it on its connection failed too.
        case expired(stuck: Bool)
        /// The breaker opened while it waited in the queue: not sent.
        case skipped
    }

    /// Sends `commands` in one pipeline through ``perform(_:)``; nil when the call was not
    /// answered. Marks the episodes (docs/fleet.md, "Each failure, as an operator sees it"):
    /// the first `-OOM` reply since the last write Redis took is logged once (a failover reply
    /// fails its call and is logged by ``perform(_:)`` the same way), and a call of `writes`
    /// answered without an error reply ends every episode. A read does not end one: a replica
    /// keeps answering reads, a full Redis too.
    private func call(_ commands: [RedisCommand], writes: Bool) async -> [RedisValue]? {
        let replies = await perform { (client, timeout) throws(RedisError) in
            try client.pipeline(commands, timeout: timeout)
        }
        guard let replies else { return nil }
        var refused = false
        var full: RedisError?
        for case .error(let message) in replies {
            refused = true
            if full == nil && RedisError.category(ofReply: message) == .outOfMemory { full = .server(message) }
        }
        let record = state.withLock { s -> HalyardLogRecord? in
            if let full, s.episodes.insert(.outOfMemory).inserted {
                return Self.episodeRecord(full, facts: logFacts)
            }
            if writes && !refused { s.episodes.removeAll() }
            return nil
        }
        if let record { logHandler?(record) }
        return replies
    }

    /// The record of an episode's first reply (logged again only after Redis took a write):
    /// a failover reply (`reason` `failover`) or `-OOM` (`reason` `out_of_memory`); nil for
    /// other failures. It names the reply's code only, never a key or a value.
    static func episodeRecord(_ error: RedisError, facts: [String: String]) -> HalyardLogRecord? {
        let code: String
        switch error {
        case .server(let message), .handshakeFailed(let message): code = String(message.prefix { $0 != " " })
        default: return nil
        }
        switch error.category {
        case .failover:
            return HalyardLogRecord(
                .warning,
                "the shared cache answered \(code): it is not a primary that takes writes (a failover, or a node loading its data); the connection was dropped and the next call connects again, to where the name points now; meanwhile contexts are fetched from the control plane and not written back (logged again only after Redis takes a write)",
                .sharedCache, facts.merging([HalyardLogRecord.Key.reason: "failover"]) { $1 })
        case .outOfMemory:
            return HalyardLogRecord(
                .warning,
                "the shared cache is full (\(code): maxmemory reached with the noeviction policy): it refuses leases and entry writes, reads go on; contexts it does not hold are fetched from the control plane and not written back until it has room (maxmemory-policy allkeys-lru evicts old entries instead; logged again only after Redis takes a write)",
                .sharedCache, facts.merging([HalyardLogRecord.Key.reason: "out_of_memory"]) { $1 })
        default:
            return nil
        }
    }

    /// Runs `body` (with the time left of the call's deadline) on the least busy lane unless
    /// the breaker is open; nil when it was skipped, dropped or failed (an error reply
    /// included: counted, and a failure for the breaker). The deadline counts from now (the
    /// admission): a call whose deadline passed in the queue is dropped unsent, one whose
    /// breaker opened meanwhile is skipped. Every call admitted and run reports its outcome to
    /// the breaker (the closed client's included), a call dropped in the queue behind a failed
    /// call reports a failure (behind calls that succeed it does not: a burst is not an
    /// outage), and a call that succeeded slower than ``slowCallThreshold`` reports one too.
    private func perform<T: Sendable>(
        _ body: @escaping @Sendable (RedisClient, Duration) throws(RedisError) -> T
    ) async -> T? {
        let now = clock.monotonicNow
        let deadline = ContinuousClock.now + callDeadline
        let lane = state.withLock { s -> Int? in
            guard s.breaker.admit(now: now) else {
                s.stats.skippedCalls += 1
                return nil
            }
            var best = 0
            for index in s.queued.indices where s.queued[index] < s.queued[best] { best = index }
            s.queued[best] += 1
            s.stats.peakQueueDepth = max(s.stats.peakQueueDepth, s.queued.reduce(0, +))
            return best
        }
        guard let lane else { return nil }
        let (client, queue) = (lanes[lane].client, lanes[lane].queue)
        let clock = self.clock
        let outcome: Outcome<T> = await withCheckedContinuation { continuation in
            queue.async { [state] in
                let start = ContinuousClock.now
                let left = start.duration(to: deadline)
                let (go, stuck) = state.withLock { s -> (Bool, Bool) in
                    s.queued[lane] -= 1
                    return (s.breaker.stillAdmits(now: clock.monotonicNow), s.laneFailing[lane])
                }
                guard go else { return continuation.resume(returning: .skipped) }
                guard left > .zero else { return continuation.resume(returning: .expired(stuck: stuck)) }
                do throws(RedisError) {
                    let value = try body(client, left)
                    let elapsed = start.duration(to: .now)
                    state.withLock { s in
                        s.laneFailing[lane] = false
                        s.latency.record(elapsed, now: clock.monotonicNow)
                    }
                    continuation.resume(returning: .done(value, elapsed: elapsed))
                } catch {
                    let elapsed = start.duration(to: .now)
                    state.withLock { s in
                        s.laneFailing[lane] = error != .closed
                        if error != .closed { s.latency.record(elapsed, now: clock.monotonicNow) }
                    }
                    continuation.resume(returning: .failed(error))
                }
            }
        }
        let end = clock.monotonicNow
        var log: (HalyardLogLevel, String)?
        switch outcome {
        case .done(let value, let elapsed) where elapsed > slowCallThreshold:
            // Answered, but slower than the threshold: used, and a failure for the breaker.
            state.withLock { s in
                s.stats.slowCalls += 1
                s.breaker.failed(now: end)
                if s.breaker.isOpen && !s.loggedOutage {
                    s.loggedOutage = true
                    log = (
                        .warning,
                        "the shared cache is slow (calls over \(slowCallThreshold)); the service runs on its own cache and retries"
                    )
                }
            }
            if let log { logHandler?(HalyardLogRecord(log.0, log.1, .sharedCache, logFacts)) }
            return value
        case .done(let value, _):
            let orphans = state.withLock { s -> [RedisCommand] in
                if s.breaker.isOpen && s.loggedOutage { log = (.info, "the shared cache answers again") }
                s.breaker.succeeded()
                s.loggedOutage = false
                return orphanReleases(&s, now: end)
            }
            if let log { logHandler?(HalyardLogRecord(log.0, log.1, .sharedCache, logFacts)) }
            if !orphans.isEmpty { releaseOrphans(orphans) }
            return value
        case .skipped:
            state.withLock { $0.stats.skippedCalls += 1 }
            return nil
        case .failed(.closed):
            // The tier was closed (the service is shutting down): a failure for the breaker, so
            // that a trial ends and no phase outlives its call; not an error of Redis's, so
            // neither counted nor logged.
            state.withLock { $0.breaker.failed(now: end) }
            return nil
        case .expired(stuck: false):
            // Behind a burst a healthy Redis is working through: counted, not a failure.
            state.withLock { $0.stats.droppedInQueue += 1 }
            return nil
        case .expired, .failed:
            var once: HalyardLogRecord?
            state.withLock { s in
                if case .failed(let error) = outcome {
                    s.stats.errors += 1
                    log = (.warning, "\(error)")
                    if let record = Self.configurationRecord(error, facts: logFacts),
                        s.loggedClasses.insert(error.category).inserted
                    {
                        once = record
                    } else if error.category == .failover, s.episodes.insert(.failover).inserted {
                        once = Self.episodeRecord(error, facts: logFacts)
                    }
                } else {
                    s.stats.droppedInQueue += 1
                    log = (.warning, "calls waited out their \(callDeadline) deadline in the queue")
                }
                s.breaker.failed(now: end)
                if s.breaker.isOpen && !s.loggedOutage, let reason = log?.1 {
                    s.loggedOutage = true
                    log = (
                        .warning,
                        "the shared cache is unavailable (\(reason)); the service runs on its own cache and retries"
                    )
                } else {
                    log = nil
                }
            }
            if let once { logHandler?(once) }
            if let log { logHandler?(HalyardLogRecord(log.0, log.1, .sharedCache, logFacts)) }
            return nil
        }
    }

    /// The record of a failure that retrying does not mend (logged once per tier): refused
    /// credentials or permissions (`reason` `configuration`), a Redis Cluster (`reason`
    /// `cluster_unsupported`); nil for other failures. It names the reply's code only (an ACL
    /// refusal's message names the user).
    static func configurationRecord(_ error: RedisError, facts: [String: String]) -> HalyardLogRecord? {
        let code: String
        switch error {
        case .server(let message), .handshakeFailed(let message): code = String(message.prefix { $0 != " " })
        default: return nil
        }
        switch error.category {
        case .auth:
            return HalyardLogRecord(
                .error,
                "the shared cache refused this service (\(code)): a configuration problem (the URL's user and password, or the user's ACL permissions); the service runs on its own cache until it is fixed",
                .sharedCache, facts.merging([HalyardLogRecord.Key.reason: "configuration"]) { $1 })
        case .cluster:
            return HalyardLogRecord(
                .error,
                "the shared cache answered as a Redis Cluster (\(code)), which is not supported: point sharedCache at one primary (or a proxy in front of the cluster); the service runs on its own cache",
                .sharedCache, facts.merging([HalyardLogRecord.Key.reason: "cluster_unsupported"]) { $1 })
        default:
            return nil
        }
    }

    /// The metadata of the tier's log lines: the server's origin (never its login).
    private var logFacts: [String: String] { [HalyardLogRecord.Key.origin: Self.origin(of: client.endpoint)] }

    /// Takes the leases whose lease call or release failed (Redis may hold them) and have not
    /// lapsed yet: released by token now that Redis answers. Lapsed ones are forgotten.
    private func orphanReleases(_ s: inout State, now: Duration) -> [RedisCommand] {
        guard s.leases.values.contains(where: \.unsettled) else { return [] }
        var commands: [RedisCommand] = []
        for (key, lease) in s.leases where lease.unsettled {
            s.leases.removeValue(forKey: key)
            if lease.lapsesAt > now { commands.append(.compareAndDelete(key, token: lease.token)) }
        }
        return commands
    }

    /// Releases leases by token in the background (one pipeline, one call deadline).
    private func releaseOrphans(_ commands: [RedisCommand]) {
        Task { [self] in
            let done = await call(commands, writes: true)
            if done != nil { state.withLock { $0.stats.leasesReleased += commands.count } }
        }
    }

    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded(.down)) }
}
