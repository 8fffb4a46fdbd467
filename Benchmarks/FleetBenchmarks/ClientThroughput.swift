import Foundation
import Halyard

/// `halyard-bench-fleet --l2-calls`, the client alone: how many L2 calls a second single-
/// connection `RedisClient`s sustain against a local `redis-server` with 1, 2, 4 and 8
/// connections, thread `t` calling client `t % connections`: one call per exchange, the
/// threads taking turns on each connection. Then ``TierThroughput``, what a pod does (the
/// shared tier sends the calls queued on a connection together). Each of `threads` threads makes calls
/// back to back for `seconds`: a lookup-shaped call (`GET` of a ~5 KB entry) and a poll-shaped
/// one (two `GET`s) in turn, each with the default 25 ms deadline. Prints calls/s, failures and
/// the clients' latency percentiles (their fixed buckets, merged) per connection count.
enum ClientThroughput {
    static func run(seconds: Double, threads: Int) async {
        let server: RedisServer
        switch RedisServer.start() {
        case .success(let started): server = started
        case .failure(let error):
            print("l2-calls: \(error) (apt-get install -y redis-server)")
            exit(1)
        }
        defer { server.stop() }
        let endpoint = RedisEndpoint(address: .tcp(host: "127.0.0.1", port: server.port))
        let entry = [UInt8](repeating: 0x61, count: 5 << 10)
        let keys = (0..<1_000).map { Array("halyard:bench:\($0)".utf8) }
        let setup = RedisClient(endpoint: endpoint, timeout: .seconds(5))
        for key in keys { _ = try? setup.set(key, entry, expiry: .seconds(600)) }
        setup.close()
        print(
            "l2-calls: \(threads) threads, \(seconds) s per connection count, redis-server on 127.0.0.1:\(server.port)"
        )
        for connections in [1, 2, 4, 8] {
            measureClients(connections: connections, seconds: seconds, threads: threads, endpoint: endpoint, keys: keys)
        }
        for tasks in [threads, threads * 4] {
            await TierThroughput.run(seconds: seconds, tasks: tasks, endpoint: endpoint, keys: keys)
        }
    }

    /// `threads` threads on `connections` clients for `seconds`; prints one line.
    static func measureClients(
        connections: Int, seconds: Double, threads: Int, endpoint: RedisEndpoint, keys: [[UInt8]]
    ) {
        do {
            let clients = (0..<connections).map { _ in RedisClient(endpoint: endpoint) }
            let stop = Locked(false)
            let counts = Locked((calls: 0, failures: 0))
            let group = DispatchGroup()
            for thread in 0..<threads {
                group.enter()
                let client = clients[thread % connections]
                Thread.detachNewThread {
                    var calls = 0
                    var failures = 0
                    var index = thread
                    while !stop.withLock({ $0 }) {
                        index = (index &+ 7) % keys.count
                        let commands: [RedisCommand] =
                            index % 2 == 0
                            ? [.get(keys[index])] : [.get(keys[index]), .get(keys[(index + 1) % keys.count])]
                        if (try? client.pipeline(commands)) != nil { calls += 1 } else { failures += 1 }
                    }
                    counts.withLock {
                        $0.calls += calls
                        $0.failures += failures
                    }
                    group.leave()
                }
            }
            Thread.sleep(forTimeInterval: seconds)
            stop.withLock { $0 = true }
            group.wait()
            for client in clients { client.close() }
            let (calls, failures) = counts.withLock { $0 }
            var latency = RedisClientStats.LatencyHistogram()
            var mostWaiting = 0
            for client in clients {
                latency.merge(client.stats.latency)
                mostWaiting = max(mostWaiting, client.stats.mostWaiting)
            }
            func ms(_ fraction: Double) -> String {
                guard let value = latency.percentile(fraction) else { return ">1000" }
                let (seconds, attoseconds) = value.components
                return String(format: "%.2f", Double(seconds) * 1e3 + Double(attoseconds) / 1e15)
            }
            print(
                "  connections \(connections): \(Int(Double(calls) / seconds)) calls/s, \(failures) failed; latency p50 \(ms(0.5)) ms, p99 \(ms(0.99)) ms, p99.9 \(ms(0.999)) ms; most waiting per connection \(mostWaiting)"
            )
        }
    }
}
