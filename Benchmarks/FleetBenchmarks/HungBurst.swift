import Foundation
import Halyard
import HalyardTesting

/// `halyard-bench-fleet --hung-burst`: what a burst of cold contexts costs one service whose
/// Redis hangs (docs/benchmarks-fleet.md, "L2 calls per second, and a hung Redis under a burst"). A `FlagService` with
/// the shared cache at its defaults (25 ms call deadline, one connection) and
/// `coldFetchTimeout` 2 s, over an in-memory control plane that answers after 20 ms. Three
/// bursts of 150 new contexts asked at once (`flags(for:)`): Redis healthy, Redis stopped
/// (`SIGSTOP`: it stops reading, the kernel still accepts), and Redis healthy again after
/// `SIGCONT`. Prints, per burst: contexts served the plane's value and those served defaults,
/// the wait of `flags(for:)` (p50, p99, max) and the shared cache's counters.
enum HungBurst {
    static let burst = 150

    static func run() async {
        let server: RedisServer
        switch RedisServer.start() {
        case .success(let started): server = started
        case .failure(let error):
            print("hung-burst: \(error) (apt-get install -y redis-server)")
            exit(1)
        }
        defer { server.stop() }
        let plane = InMemoryControlPlane(values: ["version": .int(1)])
        plane.setLatency(.milliseconds(20))
        var options = plane.makeServiceOptions(key: "bench-hung-burst")
        options.sharedCache = .redis(url: server.url)
        options.changeDetection = .polling
        options.exposures.enabled = false
        options.coldFetchTimeout = .seconds(2)
        let service: FlagService
        do { service = try FlagService(options: options) } catch {
            print("hung-burst: \(error)")
            exit(1)
        }
        defer { service.close() }
        _ = await service.flags(for: context(0))  // connected, breaker closed
        print(
            "hung-burst: \(burst) new contexts at once, control plane 20 ms, coldFetchTimeout 2 s, callDeadline 25 ms (default)"
        )
        await measure("Redis healthy", service: service, first: 1)
        server.setPaused(true)
        await measure("Redis hung (SIGSTOP)", service: service, first: 1 + burst)
        server.setPaused(false)
        // The breaker's trial comes 1 s after it opened: wait for it before the last burst.
        try? await Task.sleep(for: .seconds(2))
        _ = await service.flags(for: context(0))
        await measure("Redis back (SIGCONT)", service: service, first: 1 + 2 * burst)
    }

    /// One burst of contexts `first ..< first + burst`; prints one line.
    static func measure(_ label: String, service: FlagService, first: Int) async {
        let before = service.stats.sharedCache
        let results = await withTaskGroup(of: (served: Bool, wait: Duration).self) { group in
            for id in first..<(first + burst) {
                group.addTask {
                    let start = ContinuousClock.now
                    let value = await service.flags(for: context(id)).int("version", default: 0)
                    return (value == 1, start.duration(to: .now))
                }
            }
            var all: [(served: Bool, wait: Duration)] = []
            for await result in group { all.append(result) }
            return all
        }
        let waits = results.map(\.wait).sorted()
        func ms(_ fraction: Double) -> String {
            guard !waits.isEmpty else { return "-" }
            let value = waits[min(waits.count - 1, Int(Double(waits.count) * fraction))]
            let (seconds, attoseconds) = value.components
            return String(format: "%.1f", Double(seconds) * 1e3 + Double(attoseconds) / 1e15)
        }
        let served = results.filter(\.served).count
        let after = service.stats.sharedCache
        func delta(_ path: KeyPath<SharedCacheStats, Int>) -> Int {
            guard let after else { return 0 }
            return after[keyPath: path] - (before?[keyPath: path] ?? 0)
        }
        print(
            "  \(label): \(served) of \(burst) served the plane's value, \(burst - served) defaults; wait p50 \(ms(0.5)) ms, p99 \(ms(0.99)) ms, max \(ms(1.0)) ms; shared cache: \(delta(\.hits)) hits, \(delta(\.misses)) misses, \(delta(\.timeoutErrors)) timeouts, \(delta(\.droppedInQueue)) dropped in queue, \(delta(\.skippedCalls)) skipped, \(delta(\.exchanges)) exchanges for \(delta(\.calls)) calls, breaker opened \(delta(\.breakerOpenings))x"
        )
    }

    static func context(_ id: Int) -> EvaluationContext {
        EvaluationContext(targetingKey: "burst-\(id)", attributes: ["plan": .string(id % 3 == 0 ? "pro" : "free")])
    }
}
