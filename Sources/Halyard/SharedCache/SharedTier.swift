import Dispatch
import Foundation

/// The fleet's shared cache as one service uses it (SPEC §15, docs/fleet.md): entry and lease
/// names, the entry format, the breaker and the counters, over one ``RedisClient``.
///
/// Every call is made on one serial queue of its own (the client is one connection, so calls
/// take turns anyway) and awaited by the fetch task that asked: no call blocks a thread of the
/// Swift concurrency pool, none is made on the read path, each ends by the client's deadline
/// (*default* 25 ms), and none is made while the breaker is open.
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

        init(baseURL: URL, key: String, appID: String?) {
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

        func entryKey(_ id: String) -> [UInt8] { Array("halyard:v1:\(namespace):\(id)".utf8) }
        func leaseKey(_ id: String) -> [UInt8] { Array("halyard:v1:\(namespace):\(id):lease".utf8) }
    }

    private struct State {
        var keys: Keys
        /// The fetcher's key generation ``keys`` belong to (``setKeys(_:generation:)``).
        var generation: UInt64 = 0
        var breaker = SharedCacheBreaker()
        var stats = SharedCacheStats()
        /// Whether the unavailability was logged (once per breaker opening).
        var loggedOutage = false
    }

    let client: RedisClient
    /// Entries larger than this are not written (*default* 256 KiB).
    let maxEntryBytes: Int
    /// How long a lease lasts: `requestTimeout` + 1 s.
    let leaseDuration: Duration
    /// How long an entry lives in Redis: `maxStaleness`.
    let entryLifetime: Duration
    private let clock: any HalyardClock
    private let logHandler: HalyardLogRecordHandler?
    private let queue = DispatchQueue(label: "halyard.shared-cache")
    private let state: Locked<State>

    /// The default entry limit.
    static let defaultMaxEntryBytes = 256 << 10

    init(
        client: RedisClient, keys: Keys, leaseDuration: Duration, entryLifetime: Duration, clock: any HalyardClock,
        logHandler: HalyardLogRecordHandler?, maxEntryBytes: Int = defaultMaxEntryBytes
    ) {
        self.client = client
        self.leaseDuration = leaseDuration
        self.entryLifetime = entryLifetime
        self.clock = clock
        self.logHandler = logHandler
        self.maxEntryBytes = maxEntryBytes
        state = Locked(State(keys: keys))
    }

    /// The counters and the breaker's state.
    var stats: SharedCacheStats {
        state.withLock { s in
            var stats = s.stats
            stats.breakerOpen = s.breaker.isOpen
            stats.breakerOpenings = s.breaker.openings
            return stats
        }
    }

    /// Entries are named and MAC'd under the new key from now on: `setKey`, called by the
    /// service's fetcher in the critical section that makes `generation` its key generation.
    func setKeys(_ keys: Keys, generation: UInt64) {
        state.withLock {
            $0.keys = keys
            $0.generation = generation
        }
    }

    /// The names and MAC key in use now, and the key generation they belong to: a fetch takes
    /// them once and makes every call of its own with them.
    var current: (keys: Keys, generation: UInt64) { state.withLock { ($0.keys, $0.generation) } }

    func close() { client.close() }

    // MARK: - Calls

    /// The entry of `fingerprint`, when there is a usable one (under `keys`, *default* the
    /// current ones).
    func lookup(_ fingerprint: String, keys: Keys? = nil) async -> Lookup {
        let keys = keys ?? state.withLock { $0.keys }
        let id = keys.id(fingerprint)
        let replies = await perform { (client) throws(RedisError) in try client.pipeline([.get(keys.entryKey(id))]) }
        guard let replies else { return .unavailable }
        return decode(replies.first, keys: keys, id: id)
    }

    /// The entry of `fingerprint` and whether its lease is still held (one round trip): what a
    /// pod waiting for another's fetch looks at.
    func poll(_ fingerprint: String, keys: Keys? = nil) async -> (Lookup, leaseHeld: Bool) {
        let keys = keys ?? state.withLock { $0.keys }
        let id = keys.id(fingerprint)
        let replies = await perform { (client) throws(RedisError) in
            try client.pipeline([.get(keys.entryKey(id)), .get(keys.leaseKey(id))])
        }
        guard let replies, replies.count == 2 else { return (.unavailable, false) }
        let held: Bool
        if case .bulk(let bytes) = replies[1] { held = bytes != nil } else { held = false }
        return (decode(replies[0], keys: keys, id: id, counting: false), held)
    }

    /// Takes `fingerprint`'s lease (`SET … NX PX`) with a random token, and reads the entry in
    /// the same round trip: another pod may have written it and released its lease since this
    /// pod looked (then the lease just taken is given back and the entry used).
    func acquireLease(_ fingerprint: String, keys: Keys? = nil) async -> Lease {
        let keys = keys ?? state.withLock { $0.keys }
        let id = keys.id(fingerprint)
        var generator = SystemRandomNumberGenerator()
        let token = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let commands: [RedisCommand] = [
            .set(keys.leaseKey(id), token, expiry: leaseDuration, onlyIfAbsent: true), .get(keys.entryKey(id)),
        ]
        let replies = await perform { (client) throws(RedisError) in try client.pipeline(commands) }
        guard let replies, replies.count == 2 else { return .unavailable }
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
            return .held
        default:
            state.withLock { $0.stats.errors += 1 }
            return .unavailable
        }
    }

    /// Writes `entry` for `fingerprint` (unless it is over the entry limit) and releases the
    /// lease `token` when given, in one round trip. The entry is written only when
    /// `generation` (the key generation its request was sent with; nil: the current one) is
    /// still the current one, under that key's names and MAC, never under a newer key's
    /// (SPEC §15). The lease is released under `leaseKeys` (those it was taken with; *default*
    /// the current ones).
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
                    commands.append(.set(keys.entryKey(id), bytes, expiry: entryLifetime - age))
                }
            } else {
                state.withLock { $0.stats.oversizedEntries += 1 }
            }
        }
        let writes = commands.count
        if let token {
            let leaseKeys = leaseKeys ?? keys
            commands.append(.compareAndDelete(leaseKeys.leaseKey(leaseKeys.id(fingerprint)), token: token))
        }
        guard !commands.isEmpty else { return }
        let pipeline = commands
        let replies = await perform { (client) throws(RedisError) in try client.pipeline(pipeline) }
        guard let replies, writes == 1 else { return }
        switch replies.first {
        case .simple("OK")?: state.withLock { $0.stats.writes += 1 }
        default: state.withLock { $0.stats.errors += 1 }  // an error reply (e.g. Redis out of memory)
        }
    }

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

    // MARK: - Internals

    /// The entry in `reply`; a miss or a rejected entry is counted when `counting` (a lease's
    /// read and a lease wait's polls look again at what the lookup counted).
    private func decode(_ reply: RedisValue?, keys: Keys, id: String, counting: Bool = true) -> Lookup {
        guard case .bulk(let bytes)? = reply, let bytes else {
            if counting { state.withLock { $0.stats.misses += 1 } }
            return .none
        }
        do {
            let entry = try SharedEntry.decode(
                bytes, namespace: keys.namespace, id: id, secret: keys.secret, limit: maxEntryBytes)
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

    /// Runs `body` on the tier's queue unless the breaker is open; nil when it was skipped or
    /// failed (an error reply included: counted, and a failure for the breaker). Every call
    /// admitted reports its outcome to the breaker, the closed client's included.
    private func perform<T: Sendable>(
        _ body: @escaping @Sendable (RedisClient) throws(RedisError) -> T
    ) async -> T? {
        let now = clock.monotonicNow
        let admitted = state.withLock { s -> Bool in
            if s.breaker.admit(now: now) { return true }
            s.stats.skippedCalls += 1
            return false
        }
        guard admitted else { return nil }
        let client = self.client
        let outcome: Result<T, RedisError> = await withCheckedContinuation { continuation in
            queue.async {
                do throws(RedisError) {
                    continuation.resume(returning: .success(try body(client)))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        let end = clock.monotonicNow
        var log: String?
        switch outcome {
        case .success(let value):
            state.withLock { s in
                if s.breaker.isOpen && s.loggedOutage { log = "the shared cache answers again" }
                s.breaker.succeeded()
                s.loggedOutage = false
            }
            if let log { logHandler?(HalyardLogRecord(.info, log, .sharedCache, logFacts)) }
            return value
        case .failure(.closed):
            // The tier was closed (the service is shutting down): a failure for the breaker, so
            // that a trial ends and no phase outlives its call; not an error of Redis's, so
            // neither counted nor logged.
            state.withLock { $0.breaker.failed(now: end) }
            return nil
        case .failure(let error):
            state.withLock { s in
                s.stats.errors += 1
                s.breaker.failed(now: end)
                if s.breaker.isOpen && !s.loggedOutage {
                    s.loggedOutage = true
                    log = "the shared cache is unavailable (\(error)); the service runs on its own cache and retries"
                }
            }
            if let log { logHandler?(HalyardLogRecord(.warning, log, .sharedCache, logFacts)) }
            return nil
        }
    }

    /// The metadata of the tier's log lines: the server's origin (never its login).
    private var logFacts: [String: String] { [HalyardLogRecord.Key.origin: Self.origin(of: client.endpoint)] }

    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded(.down)) }
}
