import BenchmarkSupport
import Foundation
import Halyard
import HalyardTesting

// Section 7: a brownout on simulated time, also alone: `--brownout-only`. The plane answers
// after 2 s; 100 hot contexts are requested every 10 ms and 20 new contexts a second.

extension ServiceBench {
    /// Section 7: Halyard, then the per-(flag, context) design under the same brownout; then
    /// both through an outage (RecoveryScenario.swift).
    func brownout() async throws -> Brownout {
        var result = try await halyardBrownout()
        result.flagContextCache = try await flagContextCacheBrownout()
        result.recovery = try await recovery()
        return result
    }

    /// Section 7 for FlagService: the share of hot requests served values once all hot
    /// contexts are held, and the cold requests served within `coldFetchTimeout`.
    private func halyardBrownout() async throws -> Brownout {
        let minutes = quick ? 5 : 15
        let ticks = minutes * 60 * 100  // 10 ms each
        let clock = ManualClock()
        let transport = SimulatedPlane(makePlane(latency: .zero), clock: clock, latency: .seconds(2))
        let service = try simulatedService(transport, clock: clock)
        let hot = try (0..<100).map { try context(universe - 10_000 - $0).fitted() }
        for f in hot { _ = service.flagsIfCached(for: f) }
        var hotAsked = 0
        var hotServed = 0
        let coldServed = Locked(0)
        var coldAsked = 0
        var coldTasks: [Task<Void, Never>] = []
        var nextCold = 0
        var counting = false
        for tick in 0..<ticks {
            // Hot = held: counting starts once all 100 hot contexts are held (their first fetches
            // take 4 rounds of 2 s with 32 slots); from then on every hot request counts.
            var served = 0
            for f in hot where service.flagsIfCached(for: f).hasValues { served += 1 }
            if counting {
                hotAsked += hot.count
                hotServed += served
            } else {
                counting = served == hot.count
            }
            if tick % 5 == 0 {  // 20 new contexts per second
                let c = context(universe - 20_000 - nextCold)
                nextCold += 1
                coldAsked += 1
                coldTasks.append(
                    Task {
                        if await service.flags(for: c).hasValues { coldServed.withLock { $0 += 1 } }
                    })
                if coldTasks.count > 256 { coldTasks.removeFirst(128) }
            }
            clock.advance(by: .milliseconds(10))
            await settle()
        }
        clock.advance(by: .seconds(1))
        for t in coldTasks { await t.value }
        let stats = service.stats
        let hotShare = Double(hotServed) / Double(max(1, hotAsked))
        print(
            "\n## 7. brownout: plane at 2 s latency, 100 hot contexts every 10 ms, 20 new contexts/s, \(minutes) simulated minutes"
        )
        print(
            "  halyard: hot requests served values \(fmt(hotShare * 100, 2)) % (\(hotServed) of \(hotAsked)); cold requests served within coldFetchTimeout \(coldServed.withLock { $0 }) of \(coldAsked) (a 2 s plane cannot answer in 250 ms)"
        )
        print(
            "  requests sent \(transport.requests) (\(fmt(Double(transport.requests) / Double(minutes * 60), 1))/s; 32 slots x 0.5/s = 16/s), background refreshes \(stats.fetching.backgroundRefreshes), dropped (waiters gone) \(stats.fetching.dropped), shed \(stats.fetching.shed), contexts held \(stats.cache.contextsHeld)"
        )
        verdict("brownout: hot requests served values = 100 %", hotServed == hotAsked, "\(fmt(hotShare * 100, 3)) %")
        service.close()
        return Brownout(
            hotServedShare: hotShare, hotAsked: hotAsked, coldServedInTime: coldServed.withLock { $0 },
            coldAsked: coldAsked, requestsSent: transport.requests, dropped: stats.fetching.dropped,
            shed: stats.fetching.shed, minutes: minutes)
    }

    /// The same brownout for the per-(flag, context) cache design (the OFREP providers that
    /// cache: one entry per flag per context, a 30 s TTL, no stale-while-revalidate, single
    /// flight, the same 32 fetches at a time). A request reads its route's 10 flags; it is
    /// served when all 10 answer at once: a read that misses waits for a 2 s plane, past any
    /// request deadline.
    private func flagContextCacheBrownout() async throws -> Brownout.FlagContextCacheBrownout {
        let minutes = quick ? 5 : 15
        let ticks = minutes * 60 * 100  // 10 ms each
        let clock = ManualClock()
        let transport = SimulatedPlane(makePlane(latency: .zero), clock: clock, latency: .seconds(2))
        let cache = FlagContextCache(
            transport: transport, baseURL: InMemoryControlPlane.baseURL, capacity: 100_000, ttl: .seconds(30),
            clock: clock)
        let hot = try (0..<100).map { try context(universe - 10_000 - $0).fitted() }
        func serves(_ f: FittedContext, _ route: Int) -> Bool {
            var all = true
            for key in routes[route]
            where !cache.servesAtOnce(key, fingerprint: f.fingerprint, contextJSON: f.canonicalJSON) {
                all = false
            }
            return all
        }
        var hotAsked = 0
        var hotServed = 0
        var coldAsked = 0
        var coldServed = 0
        var nextCold = 0
        var counting = false
        for tick in 0..<ticks {
            var served = 0
            for (i, f) in hot.enumerated() where serves(f, i % routes.count) { served += 1 }
            // Counting starts once all 100 hot contexts were served once, as for Halyard above.
            if counting {
                hotAsked += hot.count
                hotServed += served
            } else {
                // (or after 2 simulated minutes: this design may never get there)
                counting = served == hot.count || tick >= 120 * 100
            }
            if tick % 5 == 0 {
                let c = try context(universe - 20_000 - nextCold).fitted()
                coldAsked += 1
                if serves(c, nextCold % routes.count) { coldServed += 1 }
                nextCold += 1
            }
            clock.advance(by: .milliseconds(10))
            await settle()
        }
        let hotShare = Double(hotServed) / Double(max(1, hotAsked))
        print(
            "  flag-ctx-cache (same plane, same load, 10 reads a request): hot requests served values \(fmt(hotShare * 100, 2)) % (\(hotServed) of \(hotAsked)); cold requests served at once \(coldServed) of \(coldAsked); requests sent \(transport.requests) (\(fmt(Double(transport.requests) / Double(minutes * 60), 1))/s)"
        )
        return .init(
            hotServedShare: hotShare, hotAsked: hotAsked, coldServedAtOnce: coldServed, coldAsked: coldAsked,
            requestsSent: transport.requests)
    }
}
