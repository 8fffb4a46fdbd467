import Foundation
import Halyard

/// `halyard-bench-fleet --l2-calls`, the pod's view: how many L2 calls a second one pod's
/// shared tier sustains against a local `redis-server` (target ≥ 20,000/s; docs/benchmarks-fleet.md)
/// with 1, 2 and 4 connections (`SharedCache.connections`). `tasks` tasks (a pod's fetch
/// flights) make calls back to back through the tier, as a service's fetches do: the tier
/// admits each, and calls that queue while a connection is busy share its next exchange. The
/// calls are those of ``ClientThroughput`` (a `GET` of a ~5 KB entry, two `GET`s, in turn),
/// each with the default 25 ms deadline. Prints calls/s, calls that got no answer, exchanges
/// (round trips) per second and calls per exchange, and the tier's call latency.
enum TierThroughput {
    static func run(seconds: Double, tasks: Int, endpoint: RedisEndpoint, keys: [[UInt8]]) async {
        print("l2-calls through the shared tier: \(tasks) tasks, \(seconds) s per row")
        for connections in [1, 2, 4] {
            // 1: each call alone on its connection, as the tier sent them before (the baseline).
            for perExchange in [1, SharedTier.defaultMaxCallsPerExchange] {
                await measure(
                    connections: connections, perExchange: perExchange, seconds: seconds, tasks: tasks,
                    endpoint: endpoint, keys: keys)
            }
        }
    }

    /// `tasks` tasks through one tier of `connections` connections for `seconds`; prints one line.
    static func measure(
        connections: Int, perExchange: Int, seconds: Double, tasks: Int, endpoint: RedisEndpoint, keys: [[UInt8]]
    ) async {
        do {
            let tier = SharedTier(
                clients: (0..<connections).map { _ in RedisClient(endpoint: endpoint) },
                keys: SharedTier.Keys(baseURL: URL(fileURLWithPath: "/bench"), key: "bench", appID: nil),
                leaseDuration: .seconds(10), entryLifetime: .seconds(600), clock: SystemClock(), logHandler: nil,
                maxCallsPerExchange: perExchange)
            let stop = Locked(false)
            let started = ContinuousClock.now
            let (calls, failures) = await withTaskGroup(of: (Int, Int).self) { group in
                for task in 0..<tasks {
                    group.addTask {
                        var calls = 0
                        var failures = 0
                        var index = task
                        while !stop.withLock({ $0 }) {
                            index = (index &+ 7) % keys.count
                            let commands: [RedisCommand] =
                                index % 2 == 0
                                ? [.get(keys[index])] : [.get(keys[index]), .get(keys[(index + 1) % keys.count])]
                            if await tier.call(commands, writes: false) != nil { calls += 1 } else { failures += 1 }
                        }
                        return (calls, failures)
                    }
                }
                group.addTask {
                    try? await Task.sleep(for: .seconds(seconds))
                    stop.withLock { $0 = true }
                    return (0, 0)
                }
                var total = (0, 0)
                for await (calls, failures) in group {
                    total.0 += calls
                    total.1 += failures
                }
                return total
            }
            let elapsed = started.duration(to: .now)
            let wall = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            let stats = tier.stats
            tier.close()
            func ms(_ value: Duration?) -> String {
                guard let value else { return ">1000" }
                let (seconds, attoseconds) = value.components
                return String(format: "%.2f", Double(seconds) * 1e3 + Double(attoseconds) / 1e15)
            }
            let depth = stats.exchanges == 0 ? 0 : Double(stats.calls) / Double(stats.exchanges)
            print(
                "  connections \(connections), at most \(perExchange) per exchange: \(Int(Double(calls) / wall)) calls/s, \(failures) unanswered (skipped \(stats.skippedCalls), dropped in queue \(stats.droppedInQueue), errors \(stats.errors)); \(Int(Double(stats.exchanges) / wall)) exchanges/s, \(String(format: "%.1f", depth)) calls per exchange; call latency p50 \(ms(stats.callLatencyP50)) ms, p99 \(ms(stats.callLatencyP99)) ms"
            )
        }
    }
}
