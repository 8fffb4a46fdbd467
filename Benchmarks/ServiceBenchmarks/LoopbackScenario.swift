import BenchmarkSupport
import Foundation
import Halyard
import HalyardTesting

// Section 6: the loopback Python control plane (Tests/ControlPlaneServer/server.py) through the
// default transport, 64 tasks (skipped with `--skip-loopback`).

extension ServiceBench {
    /// Section 6: FlagService, the per-(flag, context) cache and one request per read against a
    /// real HTTP server, each through the transport a service uses by default.
    func loopback() async throws -> Loopback {
        let items: [[String: Any]] = flagValues(targetingKey: "loopback").sorted { $0.key < $1.key }.map {
            key, value in
            var item: [String: Any] = ["key": key, "reason": "TARGETING_MATCH"]
            switch value {
            case .bool(let b): item["value"] = b
            case .int(let i): item["value"] = i
            case .string(let s): item["value"] = s
            case .object: item["value"] = ["enabled": true]
            default: break
            }
            return item
        }
        let server = try LoopbackServerProcess(document: ["default": items], label: "halyard-bench-service")
        defer { server.stop() }
        print("\n## 6. loopback Python control plane (default transport), 64 tasks")
        let requests = quick ? 2_000 : 10_000
        let halyard: LoadFigures
        do {
            let clock = ManualClock()
            let counter = CountingTransport(makeDefaultTransport())
            let service = try makeService(
                transport: counter, baseURL: server.baseURL, clock: clock, coldFetchTimeout: .seconds(5))
            halyard = await load(
                name: "halyard", warmup: requests / 2, measured: requests, clock: clock, counter: counter, seed: 9
            ) { id, route in
                _ = await halyardRequest(service, context(id), route)
            }
            service.close()
        }
        let flagContextCache: LoadFigures
        do {
            let clock = ManualClock()
            let counter = CountingTransport(makeDefaultTransport())
            let cache = FlagContextCache(
                transport: counter, baseURL: server.baseURL, capacity: 100_000, ttl: .seconds(30), clock: clock)
            flagContextCache = await load(
                name: "flag-ctx-cache", warmup: requests / 4, measured: requests / 2, clock: clock, counter: counter,
                seed: 9
            ) { id, route in
                await cache.request(id, route)
            }
        }
        let remotePerRead: LoadFigures
        do {
            let clock = ManualClock()
            let counter = CountingTransport(makeDefaultTransport())
            let design = RemotePerRead(transport: counter, baseURL: server.baseURL)
            remotePerRead = await load(
                name: "remote-per-read", warmup: 0, measured: 256, clock: clock, counter: counter, seed: 9
            ) { id, route in
                await design.request(id, route)
            }
        }
        return Loopback(halyard: halyard, flagContextCache: flagContextCache, remotePerRead: remotePerRead)
    }
}
