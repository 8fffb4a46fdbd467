import Dispatch
import Foundation
import Testing

@testable import Halyard

/// `RedisClient`'s turns on its one connection, name lookups and `close()` against a real
/// `redis-server` (docs/fleet.md, "Deadlines and threads"): one call in flight, the others
/// counted as waiting; a name lookup that hangs costs a call its deadline and blocks nobody
/// else; `close()` returns at once and wakes the call in flight and those waiting; TCP
/// keepalive is on. Skipped, with a message, where `redis-server` is absent.
///
/// Run alone (`HALYARD_REDIS_CLOSE_TESTS=1`, a step of `.ci/run`): in a full parallel run on a
/// 2-core machine the process stalled for ~30 s with this suite in it (every async suite gave
/// up its real-time waits at once) and never without it; alone, and beside any one other
/// suite, it passes in under a second. The cause is not found yet (docs/testing.md); it is not
/// the architecture map's 29 s test (fixed 2026-12-07): a full run with this suite in failed
/// `callsTakeTurnsOnTheOneConnection` and `closeWakesTheCallInFlightAndTheCallWaiting` after
/// that fix, each wait for the calls' turns giving up after 20 s.
@Suite(
    .enabled(
        if: ProcessInfo.processInfo.environment["HALYARD_REDIS_CLOSE_TESTS"] == "1",
        "run alone: HALYARD_REDIS_CLOSE_TESTS=1 swift test --filter RedisClientCloseTests (a step of .ci/run)"))
struct RedisClientCloseTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// Runs `body` on a thread of its own; its outcome lands in the returned box.
    static func inThread<T: Sendable>(
        _ group: DispatchGroup, _ body: @escaping @Sendable () throws(RedisError) -> T
    ) -> Locked<Result<T, RedisError>?> {
        let box = Locked<Result<T, RedisError>?>(nil)
        group.enter()
        Thread.detachNewThread {
            let outcome = Result { () throws(RedisError) in try body() }
            box.withLock { $0 = outcome }
            group.leave()
        }
        return box
    }

    /// One call blocked in Redis (`BLPOP`) holds the connection, two more wait for their turn;
    /// one push each releases them, in turn, on the one connection.
    @Test(.needsRedisServer) func callsTakeTurnsOnTheOneConnection() async throws {
        let server = try RedisTestServer()
        let client = RedisClient(endpoint: server.endpoint(), timeout: .seconds(20))
        defer { client.close() }
        let group = DispatchGroup()
        let list = Self.bytes("queue")
        let boxes = (0..<3).map { _ in
            Self.inThread(group) { () throws(RedisError) in
                try client.send(RedisCommand("BLPOP", [list, Self.bytes("15")]))
            }
        }
        try await Wait.until("one call in flight and two waiting", seconds: 20) {
            let stats = client.stats
            return stats.inFlight == 1 && stats.waiting == 2
        }
        let pusher = server.client()
        defer { pusher.close() }
        _ = try pusher.send(RedisCommand("RPUSH", [list] + (0..<3).map { Self.bytes("item\($0)") }))
        try await Wait.until(group, "the three calls to end", seconds: 20)
        let popped = boxes.compactMap { box -> String? in
            guard case .success(.array(let pair?))? = box.withLock({ $0 }), let value = pair.last?.bytes else {
                return nil
            }
            return String(decoding: value, as: UTF8.self)
        }
        #expect(popped.sorted() == (0..<3).map { "item\($0)" })
        let stats = client.stats
        #expect(stats.calls == 3 && stats.mostWaiting == 2 && stats.inFlight == 0 && stats.open == 1)
        #expect(stats.latency.count == 3 && client.connectionsOpened == 1)
    }

    /// A stopped Redis holds one call in flight and one waiting for the only connection, both
    /// with a 20 s deadline: `close()` returns at once and both end with `.closed` right away.
    @Test(.needsRedisServer) func closeWakesTheCallInFlightAndTheCallWaiting() async throws {
        let server = try RedisTestServer()
        let client = RedisClient(endpoint: server.endpoint(), timeout: .seconds(20))
        try client.ping()
        server.pause()
        defer { server.resume() }
        let group = DispatchGroup()
        let inFlight = Self.inThread(group) { () throws(RedisError) in try client.get(Self.bytes("k")) }
        try await Wait.until("a call in flight", seconds: 20) { client.stats.inFlight == 1 }
        let waiting = Self.inThread(group) { () throws(RedisError) in try client.get(Self.bytes("k")) }
        try await Wait.until("a call waiting", seconds: 20) { client.stats.waiting == 1 }
        let start = ContinuousClock.now
        client.close()
        let took = start.duration(to: .now)
        #expect(took < .seconds(2), "close() took \(took)")
        // Well under the calls' 20 s deadline: they were woken, not timed out.
        try await Wait.until(group, "the calls to end after close()", seconds: 10)
        #expect(inFlight.withLock { $0.map { if case .failure(.closed) = $0 { true } else { false } } } == true)
        #expect(waiting.withLock { $0.map { if case .failure(.closed) = $0 { true } else { false } } } == true)
        #expect(throws: RedisError.closed) { try client.ping() }
    }

    /// A name lookup that hangs (a DNS server that does not answer): each call fails by its own
    /// deadline, two at once both do (the second waits for its turn no longer than its own
    /// deadline), `close()` does not wait
    /// for it; once the lookup answers, calls connect to the address it gave.
    @Test(.needsRedisServer) func aHungNameLookupCostsEachCallItsDeadlineOnly() async throws {
        let server = try RedisTestServer()
        let release = DispatchSemaphore(value: 0)
        let released = Locked(false)
        let lookups = Locked(0)
        let port = server.port
        let client = RedisClient(
            endpoint: RedisEndpoint(address: .tcp(host: "redis.fleet.test", port: 6379)),
            timeout: .milliseconds(200), limits: .init(),
            lookup: { _, _ in
                lookups.withLock { $0 += 1 }
                if !released.withLock({ $0 }) { release.wait() }
                return .success(RedisResolver.numeric("127.0.0.1", port) ?? [])
            })
        defer { client.close() }
        let group = DispatchGroup()
        let first = Self.inThread(group) { () throws(RedisError) in try client.ping() }
        let second = Self.inThread(group) { () throws(RedisError) in try client.ping() }
        try await Wait.until(group, "two calls whose lookup hangs", seconds: 10)
        #expect(first.withLock { $0.map { if case .failure(.timeout) = $0 { true } else { false } } } == true)
        #expect(second.withLock { $0.map { if case .failure(.timeout) = $0 { true } else { false } } } == true)
        #expect(lookups.withLock { $0 } == 1, "one lookup at a time")
        released.withLock { $0 = true }
        release.signal()
        try await Wait.until("a call once the lookup answered", seconds: 20) { (try? client.ping()) != nil }
        #expect(client.stats.errors[.timeout] == 2)
    }

    /// `close()` while a call waits for a name lookup: it returns at once, and the call ends
    /// with `.closed` long before its deadline (20 s) while the lookup still hangs.
    @Test func closeDoesNotWaitForANameLookup() async throws {
        let release = DispatchSemaphore(value: 0)
        let client = RedisClient(
            endpoint: RedisEndpoint(address: .tcp(host: "redis.fleet.test", port: 6379)),
            timeout: .seconds(20), limits: .init(),
            lookup: { host, _ in
                release.wait()
                return .failure(.resolutionFailed(host))
            })
        defer { release.signal() }
        let group = DispatchGroup()
        let pending = Self.inThread(group) { () throws(RedisError) in try client.ping() }
        try await Wait.until("a call in flight", seconds: 20) { client.stats.inFlight == 1 }
        let start = ContinuousClock.now
        client.close()
        #expect(start.duration(to: .now) < .seconds(2))
        try await Wait.until(group, "the call to end after close()", seconds: 10)
        #expect(pending.withLock { $0.map { if case .failure(.closed) = $0 { true } else { false } } } == true)
    }

    @Test(.needsRedisServer) func tcpConnectionsKeepAlive() throws {
        let server = try RedisTestServer()
        let connection = try RedisConnection(
            endpoint: server.endpoint(), resolver: nil, limits: .init(), deadline: .now + .seconds(5))
        #expect(connection.keepAlive)
    }

    @Test func latencyPercentilesComeFromFixedBuckets() {
        var histogram = RedisClientStats.LatencyHistogram()
        #expect(histogram.percentile(0.5) == nil)
        for _ in 0..<90 { histogram.record(.microseconds(180)) }
        for _ in 0..<9 { histogram.record(.milliseconds(4)) }
        histogram.record(.seconds(3))
        #expect(histogram.count == 100)
        #expect(histogram.percentile(0.5) == .microseconds(200))
        #expect(histogram.percentile(0.9) == .microseconds(200))
        #expect(histogram.percentile(0.99) == .milliseconds(5))
        #expect(histogram.percentile(1) == nil)  // over the last bound
        #expect(histogram.percentile(0) == .microseconds(200))
    }
}
