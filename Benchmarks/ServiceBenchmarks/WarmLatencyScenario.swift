import BenchmarkSupport
import Foundation
import Halyard

// Section 1: warm latency, `flags(for:)` + 10 reads, one task; the context fitted inside the
// request against fitted by the caller (also alone: `--warm-only`, with `--samples` and `--path`).

extension ServiceBench {
    /// Section 1: times `--samples` requests per path (alternating the two paths) on the warm
    /// service; prints the percentiles and the ratios of the two paths.
    func warmLatency(_ set: WarmSet) async -> (WarmLatency, WarmRatios) {
        let latencySamples = options.samples ?? (quick ? 20_000 : 100_000)
        let (latencies, latenciesFitted, checksum) = await measureWarm(
            set.service, set.contexts, set.fitted, samples: latencySamples, path: options.path)
        let warmStats = set.service.stats
        let p50 = percentile(latencies, 0.5) / 1000
        let p99 = percentile(latencies, 0.99) / 1000
        let p50f = percentile(latenciesFitted, 0.5) / 1000
        let p99f = percentile(latenciesFitted, 0.99) / 1000
        print(
            "\n## 1. warm flags(for:) + 10 reads, one task (\(latencySamples) requests each, \(set.contexts.count) warm contexts)"
        )
        print(
            "  flags(for: EvaluationContext)  p50 \(fmt(p50)) µs  p99 \(fmt(p99)) µs   (includes fitting: canonical JSON + SHA-1)"
        )
        print(
            "  flags(for: FittedContext)      p50 \(fmt(p50f)) µs  p99 \(fmt(p99f)) µs   (context fitted by the caller)"
        )
        print("  hits \(warmStats.cache.hits), misses \(warmStats.cache.misses) during the pass (checksum \(checksum))")
        let warm = WarmLatency(p50us: p50, p99us: p99, fittedP50us: p50f, fittedP99us: p99f, samples: latencySamples)
        verdict("warm flags(for:)+10 reads, p50 <= 5 µs", p50 <= 5, "\(fmt(p50)) µs (pre-fitted: \(fmt(p50f)) µs)")
        verdict("warm flags(for:)+10 reads, p99 <= 20 µs", p99 <= 20, "\(fmt(p99)) µs (pre-fitted: \(fmt(p99f)) µs)")
        // Targets as ratios to the pre-fitted path of the same run (absolute figures move 2x
        // between machines): p50 <= 2.0x (stretch 1.3x), p99 <= 3x.
        print("  ratios to the pre-fitted path: p50 \(fmt(p50 / p50f))x, p99 \(fmt(p99 / p99f))x")
        let ratios = WarmRatios(p50: p50 / p50f, p99: p99 / p99f)
        verdict("warm p50 <= 2.0x the pre-fitted path", p50 <= 2 * p50f, "\(fmt(p50 / p50f))x")
        verdict("warm p99 <= 3x the pre-fitted path", p99 <= 3 * p99f, "\(fmt(p99 / p99f))x")
        return (warm, ratios)
    }
}

/// The latency loop, off the main actor (awaiting a nonisolated function from the main actor
/// hops threads on every request, ~10 µs, which a server's request handlers never pay).
/// Returns the nanoseconds of each request with an `EvaluationContext`, of each with a
/// `FittedContext`, and a checksum of the reads. The two paths are written alike, inline, so
/// they differ only in `flags(for:)`'s argument: timed through `halyardRequest` (an async
/// function of its own), the context path paid an async frame the other did not.
func measureWarm(
    _ service: FlagService, _ contexts: [EvaluationContext], _ fitted: [FittedContext], samples: Int,
    path: String
) async -> ([Double], [Double], Int) {
    let warmZipf = Zipf(n: contexts.count, s: 1.1)
    var latencies: [Double] = []
    var latenciesFitted: [Double] = []
    latencies.reserveCapacity(samples)
    latenciesFitted.reserveCapacity(samples)
    var rng = SplitMix64(seed: 42)
    var checksum = 0
    for i in 0..<(samples * 2) {
        let id = warmZipf.sample(rng.unit())
        let route = Int(rng.next() % 4)
        if (i % 2 == 0 && path == "fitted") || (i % 2 == 1 && path == "context") { continue }
        if i % 2 == 0 {
            let t0 = nowNanoseconds()
            let flags = await service.flags(for: contexts[id])
            for key in routes[route] where flags.bool(key, default: false) { checksum &+= 1 }
            let t1 = nowNanoseconds()
            latencies.append(Double(t1 - t0))
        } else {
            let t0 = nowNanoseconds()
            let flags = await service.flags(for: fitted[id])
            for key in routes[route] where flags.bool(key, default: false) { checksum &+= 1 }
            let t1 = nowNanoseconds()
            latenciesFitted.append(Double(t1 - t0))
        }
    }
    return (latencies, latenciesFitted, checksum)
}
