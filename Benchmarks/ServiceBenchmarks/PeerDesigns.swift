import Foundation
import Halyard

// The two designs other SDKs give services, built in the harness over the same transport as
// FlagService (docs/benchmarks-service.md):
//   remote-per-read  one OFREP single-flag request per read (the OFREP server providers)
//   flag-ctx-cache   a cache keyed by (flag, context hash), 100,000 entries (10 flags x 10,000
//                    contexts), 30 s TTL, single-flight per entry: one request per flag per user

/// An async semaphore: at most `limit` holders (the peers get the same 32-fetch bound).
final class AsyncLimit: Sendable {
    /// The free slots and the tasks waiting for one.
    private struct State {
        /// Slots free now.
        var available: Int
        /// The waiting tasks, first come first served.
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    /// The slots, under a lock.
    private let state: Locked<State>
    /// A semaphore with `limit` slots.
    init(_ limit: Int) { state = Locked(State(available: limit)) }
    /// Takes a slot, waiting for one when none is free.
    func acquire() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.available > 0 {
                    s.available -= 1
                    return true
                }
                s.waiters.append(c)
                return false
            }
            if now { c.resume() }
        }
    }
    /// Gives a slot back (to the first waiter, if any).
    func release() {
        let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if s.waiters.isEmpty {
                s.available += 1
                return nil
            }
            return s.waiters.removeFirst()
        }
        next?.resume()
    }
}

/// The remote-per-read design: one OFREP single-flag request per read, at most 32 in flight
/// (FlagService's fetch bound).
struct RemotePerRead: Sendable {
    /// Where the requests go.
    let transport: any FlagTransport
    /// The control plane's base URL.
    let baseURL: URL
    /// The bound on requests in flight.
    let limit = AsyncLimit(32)

    /// One request of the workload: user `id`'s context fitted (canonical JSON), then one
    /// remote read per flag of `route`.
    func request(_ id: Int, _ route: Int) async {
        guard let fitted = try? context(id).fitted() else { return }
        for key in routes[route] {
            await limit.acquire()
            _ = await remoteRead(transport, baseURL: baseURL, key: key, contextJSON: fitted.canonicalJSON)
            limit.release()
        }
    }
}

/// The OFREP single-flag request the per-read designs send.
func singleFlagRequest(baseURL: URL, key: String, contextJSON: String) -> TransportRequest {
    TransportRequest(
        method: "POST", url: baseURL.appendingPathComponent("ofrep/v1/evaluate/flags/\(key)"),
        headers: [
            "Authorization": "Bearer srv-bench", "Content-Type": "application/json", "Accept": "application/json",
        ],
        body: Data(("{\"context\":" + contextJSON + "}").utf8))
}

/// Reads one flag remotely: its value, or nil.
func remoteRead(_ transport: any FlagTransport, baseURL: URL, key: String, contextJSON: String) async -> JSONValue? {
    guard
        let response = try? await transport.send(
            singleFlagRequest(baseURL: baseURL, key: key, contextJSON: contextJSON)),
        response.status == 200, case .object(let item)? = try? JSONValue(parsing: response.body)
    else { return nil }
    return item["value"]
}

/// The per-(flag, context-hash) cache of the OFREP providers that cache: an LRU of
/// `capacity` entries under one lock, a TTL, single-flight per entry.
final class FlagContextCache: Sendable {
    /// One cached flag value of one context.
    private struct Entry {
        /// The value read, nil when the read failed.
        var value: JSONValue?
        /// When it was read (``clock``'s monotonic time).
        var fetchedAt: Duration
    }
    /// The cache, its recency order and the fetches in flight.
    private struct State {
        /// The entries by `key|fingerprint`.
        var entries: [String: Entry] = [:]
        /// The tick of each entry's last use (the LRU order).
        var order: [String: UInt64] = [:]
        /// A counter advanced on every use.
        var tick: UInt64 = 0
        /// The fetch of each entry being read (single flight).
        var inFlight: [String: Task<JSONValue?, Never>] = [:]
    }
    /// Where the single-flag requests go.
    let transport: any FlagTransport
    /// The control plane's base URL.
    let baseURL: URL
    /// The most entries held.
    let capacity: Int
    /// How long an entry answers without a new request.
    let ttl: Duration
    /// The clock the TTL is measured on.
    let clock: any HalyardClock
    /// The fetch bound: 32 at a time, as FlagService's.
    let limit = AsyncLimit(32)
    /// The cache, under one lock.
    private let state = Locked(State())

    /// A cache of `capacity` entries answering for `ttl`, reading through `transport`.
    init(transport: any FlagTransport, baseURL: URL, capacity: Int, ttl: Duration, clock: any HalyardClock) {
        self.transport = transport
        self.baseURL = baseURL
        self.capacity = capacity
        self.ttl = ttl
        self.clock = clock
    }

    /// The value of flag `key` for the context with `fingerprint`: the cached one, or read
    /// (once for all concurrent readers) with `contextJSON`.
    func read(_ key: String, fingerprint: String, contextJSON: String) async -> JSONValue? {
        switch step(key, fingerprint: fingerprint, contextJSON: contextJSON) {
        case .hit(let value): return value
        case .wait(let task): return await task.value
        }
    }

    /// Whether a read would answer at once (a fresh entry); otherwise starts its fetch (single
    /// flight) and answers false. The brownout section asks this: a request that would wait
    /// for a 2 s plane is not served within its deadline.
    func servesAtOnce(_ key: String, fingerprint: String, contextJSON: String) -> Bool {
        if case .hit = step(key, fingerprint: fingerprint, contextJSON: contextJSON) { return true }
        return false
    }

    /// Whether a read would answer a value at once (a fresh entry that holds one); otherwise
    /// starts its fetch (single flight) when no entry is fresh, and answers false. A failed
    /// read is cached for the TTL like a value, as the design does: it answers false until it
    /// expires. The recovery section asks this.
    func servesValueAtOnce(_ key: String, fingerprint: String, contextJSON: String) -> Bool {
        if case .hit(let value) = step(key, fingerprint: fingerprint, contextJSON: contextJSON) { return value != nil }
        return false
    }

    /// What a read does: answer at once, or wait for a fetch.
    private enum Step {
        /// A fresh entry: its value.
        case hit(JSONValue?)
        /// The fetch to wait for (started by this read or by an earlier one).
        case wait(Task<JSONValue?, Never>)
    }

    /// Looks `key` up for `fingerprint`; on a miss starts the fetch unless one is in flight.
    private func step(_ key: String, fingerprint: String, contextJSON: String) -> Step {
        let cacheKey = key + "|" + fingerprint
        let now = clock.monotonicNow
        return state.withLock { s -> Step in
            s.tick += 1
            if let entry = s.entries[cacheKey], now - entry.fetchedAt <= ttl {
                s.order[cacheKey] = s.tick
                return .hit(entry.value)
            }
            if let task = s.inFlight[cacheKey] { return .wait(task) }
            let task = Task { [self] in
                await limit.acquire()
                let value = await remoteRead(transport, baseURL: baseURL, key: key, contextJSON: contextJSON)
                limit.release()
                state.withLock { s in
                    s.inFlight[cacheKey] = nil
                    s.tick += 1
                    s.entries[cacheKey] = Entry(value: value, fetchedAt: clock.monotonicNow)
                    s.order[cacheKey] = s.tick
                    if s.entries.count > capacity {
                        // Evict the least recently used eighth at once (amortised LRU).
                        let victims = s.order.sorted { $0.value < $1.value }.prefix(capacity / 8)
                        for (victim, _) in victims {
                            s.entries[victim] = nil
                            s.order[victim] = nil
                        }
                    }
                }
                return value
            }
            s.inFlight[cacheKey] = task
            return .wait(task)
        }
    }
}

extension FlagContextCache {
    /// One request of the workload on this design: user `id`'s context fitted (its fingerprint
    /// keys the cache), then the 10 reads of `route` through the cache.
    func request(_ id: Int, _ route: Int) async {
        guard let fitted = try? context(id).fitted() else { return }
        for key in routes[route] {
            _ = await read(key, fingerprint: fitted.fingerprint, contextJSON: fitted.canonicalJSON)
        }
    }
}
