// The warm path of FlagService under `valgrind --tool=callgrind` (docs/benchmarks-service.md,
// "The warm path"). valgrind 3.19 crashes on an async `main` (in
// libdispatch's main-thread `sigsuspend`), so this driver has no top-level `await`: the
// service is warmed by a task the main thread waits for, then two synchronous loops run the
// same request stream, one per path, each in its own function (`callgrind_annotate
// --inclusive=yes`: its instructions divided by `requests` are one request's).
//
//   swift build -c release --product halyard-warm-path
//   objcopy --strip-debug .build/release/halyard-warm-path /tmp/warm  # valgrind 3.19 cannot read DWARF 5
//   valgrind --tool=callgrind --dump-instr=no --callgrind-out-file=cg.out /tmp/warm 20000
//   callgrind_annotate --inclusive=yes cg.out | grep -E 'viaContext|viaFitted'
//
// A request is `flagsIfCached(for:)` (the synchronous twin of `flags(for:)`: the same fitting
// memo and cache decision, without the async call) and 10 Boolean reads.
import BenchmarkSupport
import Dispatch
import Foundation
import Halyard
import HalyardTesting

let requests = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 20_000 : 20_000
let warmSet = 1_000

/// The workload of halyard-bench-service: user contexts, 64 flags per context, 4 routes of 10.
let context = ServiceWorkload.context
let flagKeys = ServiceWorkload.flagKeys
let routes = ServiceWorkload.routes

let plane = InMemoryControlPlane()
plane.setRecording(false)
plane.setContextValues { _ in
    var values: [String: JSONValue] = [:]
    for (i, key) in flagKeys.enumerated() {
        switch i {
        case 0..<40: values[key] = .bool(i % 3 == 0)
        case 40..<50: values[key] = .int(Int64(i))
        case 50..<60: values[key] = .string("variant-\(i % 2)")
        default: values[key] = .object(["enabled": .bool(true), "limit": .int(Int64(i))])
        }
    }
    return values
}
var o = FlagServiceOptions(baseURL: InMemoryControlPlane.baseURL, key: "srv-bench")
o.transport = plane
o.installID = "halyard-warm-path"
o.exposures.enabled = false
// valgrind runs ~50x slower: no background refresh may start during the loops.
o.refreshAfter = .seconds(3_600)
o.maxStaleness = .seconds(7_200)
let service = try FlagService(options: o)

// Contexts built apart from the ones that warm the service, as a server gets them per request.
let contexts = (0..<warmSet).map(context)
let fitted = try contexts.map { try $0.fitted() }
let warmed = DispatchSemaphore(value: 0)
Task.detached {
    for id in 0..<warmSet { _ = await service.flags(for: context(id)) }
    warmed.signal()
}
warmed.wait()

/// The same pseudo-random stream of (context, route) for both paths.
func pick(_ i: Int) -> (Int, Int) {
    let x = UInt64(truncatingIfNeeded: i) &* 0x9E37_79B9_7F4A_7C15
    return (Int((x >> 20) % UInt64(warmSet)), Int((x >> 8) % 4))
}

@inline(never)
func viaContext(_ n: Int) -> Int {
    var sum = 0
    for i in 0..<n {
        let (id, route) = pick(i)
        let flags = service.flagsIfCached(for: contexts[id])
        for key in routes[route] where flags.bool(key, default: false) { sum += 1 }
    }
    return sum
}

@inline(never)
func viaFitted(_ n: Int) -> Int {
    var sum = 0
    for i in 0..<n {
        let (id, route) = pick(i)
        let flags = service.flagsIfCached(for: fitted[id])
        for key in routes[route] where flags.bool(key, default: false) { sum += 1 }
    }
    return sum
}

let a = viaContext(requests)
let b = viaFitted(requests)
let stats = service.stats
print("requests \(requests) per path, checksums \(a) \(b), hits \(stats.cache.hits), misses \(stats.cache.misses)")
service.close()
