// halyard-bench-service: FlagService (service mode, SPEC §12) against the two designs other SDKs
// give services, in one run, over the same transport (docs/benchmarks-service.md).
//
//   swift run -c release halyard-bench-service [--quick] [--json FILE] [--skip-loopback]
//       [--warm-only [--samples N] [--path context|fitted|both]] [--memory-only]
//       [--brownout-only] [--details-only] [--stream-only]
//
// Workload (Workload.swift): 1,000,000 distinct user contexts (10 attributes each) requested with
// Zipf(1.1) popularity; each request reads 10 flags of one of 4 routes (40 of the 64 flags served
// per context). The control plane is the in-memory one (HalyardTesting) with a simulated 2 ms
// latency, then the loopback Python server. Designs:
//   halyard          FlagService: bulk values per context, cache of 10,000 contexts
//                    (HalyardService.swift)
//   remote-per-read  one OFREP single-flag request per read (the OFREP server providers)
//   flag-ctx-cache   a cache keyed by (flag, context hash), 100,000 entries (10 flags x 10,000
//                    contexts), 30 s TTL, single-flight per entry: one request per flag per user
//                    (both in PeerDesigns.swift)
// Steady-state control-plane load is measured on a simulated clock (1 ms per request: 1,000
// requests/s per instance), so refreshes after 30 s are part of it.
//
// Each section is a `*Scenario.swift` file returning its figures (Results.swift, the `--json`
// keys); Report.swift prints the verdicts and writes the file.
import Foundation
import Halyard

let bench = ServiceBench(Options(CommandLine.arguments))
let options = bench.options
bench.printHeader()

// One section alone: its lines and verdicts, no JSON.
if options.memoryOnly {
    _ = try await bench.memoryPerContext()
    bench.finishAlone()
}
if options.detailsOnly {
    _ = try await bench.sharedDetails()
    bench.finishAlone()
}
if options.streamOnly {
    _ = try await bench.streamWarmPath()
    bench.finishAlone()
}
if options.brownoutOnly {
    _ = try await bench.brownout()
    bench.finishAlone()
}

var results = ServiceResults()

// 1. Warm latency: flags(for:) + 10 reads, one task (`--warm-only` stops here, without verdicts).
let warmSet = try await WarmSet(count: options.quick ? 4_000 : 8_000)
let (warm, warmRatios) = await bench.warmLatency(warmSet)
results.warm = warm
results.warmRatios = warmRatios
if options.warmOnly {
    warmSet.service.close()
    exit(0)
}
results.viewRead = try await bench.viewRead(warmSet)
// 2. Scaling: 64 tasks vs 1 task.
results.scaling = await bench.scaling(warmSet)
warmSet.service.close()
// 3. Control-plane requests per 1,000 requests at steady state.
results.steadyState = try await bench.steadyState()
// 4. Memory per cached context (64 flags).
results.memory = try await bench.memoryPerContext()
// 5. Cold single-flight.
results.singleFlight = try await bench.singleFlight()
// 6. Loopback control plane.
if options.loopback { results.loopback = try await bench.loopback() }
// 7-8. Brownout and a Retry-After: 0 storm (simulated time).
results.brownout = try await bench.brownout()
results.storm = try await bench.storm()
// 9. Detail reads from every core: shared vs own details.
results.sharedDetails = try await bench.sharedDetails()
// 10. The warm path with a stream connected vs polling; one event's wave at many held contexts.
results.streamWarmPath = try await bench.streamWarmPath()

try bench.finish(results)
