import Foundation
import Testing

@testable import Halyard

/// `RedisClient` shared by many threads against a real `redis-server`, which is stopped
/// (`SIGSTOP`) and continued twice mid-run (docs/fleet.md, "Deadlines and threads"): every reply a
/// caller gets is the one to what that caller sent (no cross-talk between pipelined exchanges,
/// no stale reply after a dropped connection), every call ends within its deadline plus a bounded
/// slack, the only failures are deadlines and dropped connections, and the client answers again
/// once the server runs. Skipped, with a message, where `redis-server` is absent.
@Suite struct RedisClientStressTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// What one worker saw.
    struct Tally: Sendable {
        var exact = 0
        /// Its own key read back with an older value of its own, only after a failed call (a
        /// SET sent on a dropped connection that the server ran after the worker's next one).
        var staleOwn = 0
        var crossTalk: [String] = []
        var timeouts = 0
        var dropped = 0
        var otherErrors: [String] = []
        var slowestCall: Duration = .zero
    }

    @Test(.needsRedisServer) func manyThreadsThroughStopAndContinueGetTheirOwnReplies() throws {
        let server = try RedisTestServer()
        let client = server.client(timeout: .milliseconds(100))
        defer { client.close() }
        let workers = 12
        // A constant value per worker, read in every exchange: a reply meant for another
        // exchange cannot match it.
        for worker in 0..<workers {
            try client.set(
                Self.bytes("const:\(worker)"), Self.bytes("const-\(worker)"), expiry: .seconds(120),
                timeout: .seconds(5))
        }
        let stop = Locked(false)
        let tallies = Locked([Tally](repeating: Tally(), count: workers))
        let group = DispatchGroup()
        for worker in 0..<workers {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                let tally = Self.work(worker, client: client, stop: stop)
                tallies.withLock { $0[worker] = tally }
            }
        }
        // Two stops of 300 ms, each after the workers have run for 300 ms.
        for _ in 0..<2 {
            Thread.sleep(forTimeInterval: 0.3)
            server.pause()
            Thread.sleep(forTimeInterval: 0.3)
            server.resume()
        }
        Thread.sleep(forTimeInterval: 0.5)
        stop.withLock { $0 = true }
        try Wait.blocking(group, "\(workers) worker threads to stop", seconds: 30)

        let all = tallies.withLock { $0 }
        let crossTalk = all.flatMap(\.crossTalk)
        #expect(crossTalk.isEmpty, "\(crossTalk.prefix(5))")
        let otherErrors = all.flatMap(\.otherErrors)
        #expect(otherErrors.isEmpty, "\(otherErrors.prefix(5))")
        #expect(all.map(\.exact).reduce(0, +) > workers * 10, "\(all.map(\.exact))")
        #expect(all.map(\.timeouts).reduce(0, +) > 0, "no call timed out while the server was stopped")
        let slowest = all.map(\.slowestCall).max() ?? .zero
        // The deadline is 100 ms; the slack allows for a loaded machine and sanitizers.
        #expect(slowest < .seconds(2), "a call took \(slowest)")
        // And the client answers again, on one more connection at most.
        let before = client.connectionsOpened
        for worker in 0..<workers {
            let replies = try client.pipeline([.get(Self.bytes("const:\(worker)"))], timeout: .seconds(5))
            #expect(replies == [.bulk(Self.bytes("const-\(worker)"))])
        }
        #expect(client.connectionsOpened <= before + 1)
    }

    /// One worker: SET its key to a new value, GET its constant and GET its key back in one
    /// pipeline; every fourth round as three separate calls instead, so that exchanges of one
    /// and three commands interleave on the connection.
    static func work(_ worker: Int, client: RedisClient, stop: Locked<Bool>) -> Tally {
        var tally = Tally()
        let key = bytes("key:\(worker)")
        let constant = bytes("const-\(worker)")
        var failedSince: Int?
        var round = 0
        while !stop.withLock({ $0 }) && round < 100_000 {
            round += 1
            let value = bytes("w\(worker)-r\(round)")
            let started = ContinuousClock.now
            do throws(RedisError) {
                let replies: [RedisValue]
                if round % 4 == 0 {
                    let set = try client.send(.set(key, value, expiry: .seconds(120)))
                    let other = try client.send(.get(bytes("const:\(worker)")))
                    let own = try client.send(.get(key))
                    replies = [set, other, own]
                } else {
                    replies = try client.pipeline([
                        .set(key, value, expiry: .seconds(120)), .get(bytes("const:\(worker)")), .get(key),
                    ])
                }
                if replies == [.simple("OK"), .bulk(constant), .bulk(value)] {
                    tally.exact += 1
                    failedSince = nil
                } else if let failedSince, replies.count == 3, replies[0] == .simple("OK"),
                    replies[1] == .bulk(constant), let own = replies[2].bytes,
                    Self.isOwnValue(own, worker: worker, from: failedSince, before: round)
                {
                    tally.staleOwn += 1
                } else {
                    tally.crossTalk.append("worker \(worker) round \(round): \(replies)")
                }
            } catch {
                switch error {
                case .timeout: tally.timeouts += 1
                case .connectionClosed, .connectionFailed: tally.dropped += 1
                default: tally.otherErrors.append("worker \(worker) round \(round): \(error)")
                }
                if failedSince == nil { failedSince = round }
            }
            // Three calls each have their own deadline.
            tally.slowestCall = max(tally.slowestCall, (ContinuousClock.now - started) / (round % 4 == 0 ? 3 : 1))
        }
        return tally
    }

    /// Whether `bytes` is `w<worker>-r<n>` with `from <= n < before`.
    static func isOwnValue(_ bytes: [UInt8], worker: Int, from: Int, before: Int) -> Bool {
        let text = String(decoding: bytes, as: UTF8.self)
        let prefix = "w\(worker)-r"
        guard text.hasPrefix(prefix), let round = Int(text.dropFirst(prefix.count)) else { return false }
        return round >= from && round < before
    }
}
