import BenchmarkSupport
import Foundation
import Halyard
import HalyardTesting

// Section 3: control-plane requests per 1,000 requests at steady state, each design on the
// in-memory plane with a 2 ms latency. The simulated clock moves 1 ms per request (1,000
// requests/s per instance), so refreshes after 30 s are part of it.

extension ServiceBench {
    /// Section 3: FlagService (as configured for the workload, with TinyLFU admission, with the
    /// default 64 MiB bound), the per-(flag, context) cache and one request per read.
    func steadyState() async throws -> SteadyState {
        let warmup = quick ? 10_000 : 60_000
        let measured = quick ? 20_000 : 120_000
        print(
            "\n## 3. steady state: \(warmup) warm-up then \(measured) measured requests, 64 tasks, in-memory plane with 2 ms latency, simulated 1,000 requests/s"
        )
        let halyard: LoadFigures
        let halyardPeak: Int
        let halyardBound = 256 << 20
        do {
            let clock = ManualClock()
            let counter = CountingTransport(makePlane(latency: .milliseconds(2)))
            let service = try makeService(
                transport: counter, baseURL: InMemoryControlPlane.baseURL, clock: clock, coldFetchTimeout: .seconds(5))
            halyard = await load(
                name: "halyard", warmup: warmup, measured: measured, clock: clock, counter: counter, seed: 7
            ) { id, route in
                _ = await halyardRequest(service, context(id), route)
            }
            let stats = service.stats
            halyardPeak = stats.cache.peakBytesHeld
            print(
                "    hits \(stats.cache.hits), misses \(stats.cache.misses), background refreshes \(stats.fetching.backgroundRefreshes), 304s \(stats.fetching.notModified), evictions \(stats.cache.evictions), held \(stats.cache.contextsHeld) contexts, \(stats.cache.bytesHeld / 1024) KiB (peak \(stats.cache.peakBytesHeld / 1024) KiB, bound \(halyardBound / 1024) KiB), cold waits \(stats.cache.coldWaits), timeouts \(stats.cache.coldWaitTimeouts)"
            )
            service.close()
        }
        let tinyLFU: LoadFigures
        do {
            let clock = ManualClock()
            let counter = CountingTransport(makePlane(latency: .milliseconds(2)))
            let service = try makeService(
                transport: counter, baseURL: InMemoryControlPlane.baseURL, clock: clock, coldFetchTimeout: .seconds(5),
                admission: true)
            tinyLFU = await load(
                name: "halyard+tinylfu", warmup: warmup, measured: measured, clock: clock, counter: counter, seed: 7
            ) { id, route in
                _ = await halyardRequest(service, context(id), route)
            }
            let stats = service.stats
            print(
                "    frequency admission: \(stats.cache.admissionRejections) fetched contexts not admitted, evictions \(stats.cache.evictions), held \(stats.cache.contextsHeld), hits \(stats.cache.hits), misses \(stats.cache.misses)"
            )
            service.close()
        }
        let defaultBound: LoadFigures
        do {
            let clock = ManualClock()
            let counter = CountingTransport(makePlane(latency: .milliseconds(2)))
            let service = try makeService(
                transport: counter, baseURL: InMemoryControlPlane.baseURL, clock: clock, maxCacheBytes: 64 << 20,
                coldFetchTimeout: .seconds(5))
            defaultBound = await load(
                name: "halyard (64 MiB)", warmup: warmup, measured: measured, clock: clock, counter: counter, seed: 7
            ) { id, route in
                _ = await halyardRequest(service, context(id), route)
            }
            let stats = service.stats
            print(
                "    the default 64 MiB bound binds first: held \(stats.cache.contextsHeld) contexts, peak \(stats.cache.peakBytesHeld / 1024) KiB <= \(64 << 10) KiB"
            )
            verdict(
                "peak cache bytes <= the default 64 MiB bound under the Zipf run",
                stats.cache.peakBytesHeld <= 64 << 20,
                "\(stats.cache.peakBytesHeld / 1024) KiB")
            service.close()
        }
        let flagContextCache: LoadFigures
        do {
            let clock = ManualClock()
            let counter = CountingTransport(makePlane(latency: .milliseconds(2)))
            let cache = FlagContextCache(
                transport: counter, baseURL: InMemoryControlPlane.baseURL, capacity: 100_000, ttl: .seconds(30),
                clock: clock)
            flagContextCache = await load(
                name: "flag-ctx-cache", warmup: warmup, measured: measured, clock: clock, counter: counter, seed: 7
            ) { id, route in
                await cache.request(id, route)
            }
        }
        let remotePerRead: LoadFigures
        do {
            let clock = ManualClock()
            let counter = CountingTransport(makePlane(latency: .milliseconds(2)))
            let design = RemotePerRead(transport: counter, baseURL: InMemoryControlPlane.baseURL)
            remotePerRead = await load(
                name: "remote-per-read", warmup: 0, measured: quick ? 640 : 3_200, clock: clock, counter: counter,
                seed: 7
            ) { id, route in
                await design.request(id, route)
            }
        }
        let halyardLoad = halyard.per1000
        let cacheLoad = flagContextCache.per1000
        verdict(
            "control-plane requests: halyard >= 10x fewer than flag-ctx-cache", cacheLoad / halyardLoad >= 10,
            "\(fmt(halyardLoad, 1)) vs \(fmt(cacheLoad, 1)) per 1,000 (\(fmt(cacheLoad / halyardLoad, 1))x fewer); remote-per-read \(fmt(remotePerRead.per1000, 0))"
        )
        verdict(
            "peak cache bytes <= bound under the Zipf run (10,000 contexts, 256 MiB)", halyardPeak <= halyardBound,
            "\(halyardPeak / 1024) KiB <= \(halyardBound / 1024) KiB")
        return SteadyState(
            halyard: halyard, halyardTinyLFU: tinyLFU, halyard64MiB: defaultBound, flagContextCache: flagContextCache,
            remotePerRead: remotePerRead)
    }
}

/// Runs `warmup` then `measured` requests of the Zipf stream with 64 tasks; the simulated clock
/// moves 1 ms per request. `request` returns nothing; control-plane requests are counted by
/// `counter` during the measured part only. Prints the design's line; returns its figures.
func load(
    name: String, warmup: Int, measured: Int, clock: ManualClock, counter: CountingTransport, seed: UInt64,
    request: @escaping @Sendable (Int, Int) async -> Void
) async -> LoadFigures {
    let issued = Locked(0)
    /// `count` requests from 64 tasks; their latencies in µs when `record`.
    func run(_ count: Int, record: Bool) async -> [Double] {
        await withTaskGroup(of: [Double].self) { group in
            for task in 0..<64 {
                group.addTask {
                    var rng = SplitMix64(seed: seed &+ UInt64(task) &* 104_729)
                    var samples: [Double] = []
                    for _ in 0..<(count / 64) {
                        let id = zipf.sample(rng.unit())
                        let route = Int(rng.next() % 4)
                        let t0 = nowNanoseconds()
                        await request(id, route)
                        if record { samples.append(Double(nowNanoseconds() - t0) / 1000) }
                        let n = issued.withLock { n -> Int in
                            n += 1
                            return n
                        }
                        _ = n
                        clock.advance(by: .milliseconds(1))
                    }
                    return samples
                }
            }
            var all: [Double] = []
            for await samples in group { all += samples }
            return all
        }
    }
    _ = await run(warmup, record: false)
    let before = counter.requests
    let t0 = nowNanoseconds()
    let samples = await run(measured, record: true)
    let seconds = Double(nowNanoseconds() - t0) / 1e9
    let sent = counter.requests - before
    let result = LoadFigures(
        per1000: Double(sent) * 1000 / Double(samples.count), p50us: percentile(samples, 0.5),
        p99us: percentile(samples, 0.99))
    print(
        "  \(name.padding(toLength: 16, withPad: " ", startingAt: 0)) \(fmt(result.per1000, 1)) control-plane requests / 1,000 requests; latency p50 \(fmt(result.p50us, 1)) µs, p99 \(fmt(result.p99us, 1)) µs (all requests, cold included; \(fmt(seconds, 1)) s)"
    )
    return result
}
