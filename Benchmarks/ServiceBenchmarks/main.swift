// halyard-bench-service: FlagService (service mode, SPEC §12) against the two designs other SDKs
// give services, in one run, over the same transport (docs/benchmarks-service.md).
//
//   swift run -c release halyard-bench-service [--quick] [--json FILE] [--skip-loopback]
//
// Workload: 1,000,000 distinct user contexts (10 attributes each) requested with Zipf(1.1)
// popularity; each request reads 10 flags of one of 4 routes (40 of the 64 flags served per
// context). The control plane is the in-memory one (HalyardTesting) with a simulated 2 ms
// latency, then the loopback Python server. Designs:
//   halyard          FlagService: bulk values per context, cache of 10,000 contexts
//   remote-per-read  one OFREP single-flag request per read (the OFREP server providers)
//   flag-ctx-cache   a cache keyed by (flag, context hash), 100,000 entries (10 flags x 10,000
//                    contexts), 30 s TTL, single-flight per entry: one request per flag per user
// Steady-state control-plane load is measured on a simulated clock (1 ms per request: 1,000
// requests/s per instance), so refreshes after 30 s are part of it.
import BenchmarkSupport
import CMallocInfo
import Foundation
import Halyard
import HalyardTesting

#if canImport(Glibc)
    import Glibc
#endif

// MARK: - Options

struct Options {
    var quick = false
    var json: String?
    var loopback = true
    /// `--warm-only`: section 1 only (for `valgrind --tool=callgrind`, docs/benchmarks-service.md).
    var warmOnly = false
    /// `--samples N`: requests per path in section 1.
    var samples: Int?
    /// `--path context|fitted|both`: which warm path section 1 runs (both by default).
    var path = "both"
    /// `--memory-only`: section 4 only (memory per cached context).
    var memoryOnly = false
    /// `--brownout-only`: section 7 only (the brownout, Halyard and the per-(flag, context) design).
    var brownoutOnly = false
    /// `--details-only`: section 9 only (detail reads from every core, shared vs own details).
    var detailsOnly = false

    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--quick": quick = true
            case "--json": json = iterator.next()
            case "--skip-loopback": loopback = false
            case "--warm-only": warmOnly = true
            case "--memory-only": memoryOnly = true
            case "--brownout-only": brownoutOnly = true
            case "--details-only": detailsOnly = true
            case "--samples": samples = iterator.next().flatMap { Int($0) }
            case "--path": path = iterator.next() ?? "both"
            default:
                FileHandle.standardError.write(Data("unknown argument \(argument)\n".utf8))
                exit(2)
            }
        }
    }
}

let options = Options(CommandLine.arguments)
let quick = options.quick
var results: [String: Any] = [:]
var verdicts: [(String, Bool, String)] = []
let runStart = ContinuousClock.now

@MainActor func verdict(_ name: String, _ pass: Bool, _ detail: String) {
    verdicts.append((name, pass, detail))
}

// MARK: - Timing and memory

@inline(__always)
func nowNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// Bytes malloc has handed out and not taken back (all arenas, plus mmapped blocks).
func heapBytes() -> Int {
    Int(halyard_heap_bytes())
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    let index = min(sorted.count - 1, max(0, Int((Double(sorted.count - 1) * p).rounded())))
    return sorted[index]
}

func median(_ values: [Double]) -> Double { percentile(values.sorted(), 0.5) }

func fmt(_ value: Double, _ digits: Int = 2) -> String { String(format: "%.\(digits)f", value) }

// MARK: - Workload

/// Zipf(s) over ranks 0..<n by inverse CDF (binary search over the cumulative weights).
struct Zipf: Sendable {
    let cdf: [Double]

    init(n: Int, s: Double) {
        var cdf = [Double](repeating: 0, count: n)
        var total = 0.0
        for k in 0..<n {
            total += 1 / pow(Double(k + 1), s)
            cdf[k] = total
        }
        for k in 0..<n { cdf[k] /= total }
        self.cdf = cdf
    }

    func sample(_ u: Double) -> Int {
        var lo = 0
        var hi = cdf.count - 1
        while lo < hi {
            let mid = (lo + hi) / 2
            if cdf[mid] < u { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
}

let universe = 1_000_000
let zipf = Zipf(n: universe, s: 1.1)

/// User `id`'s context (``ServiceWorkload``: shared with `halyard-warm-path`).
func context(_ id: Int) -> EvaluationContext { ServiceWorkload.context(id) }

/// The 64 flags served per context: 40 Booleans, 10 integers, 10 short strings, 4 small objects.
let flagKeys = ServiceWorkload.flagKeys

func flagValues(targetingKey: String) -> [String: JSONValue] {
    var hash: UInt64 = 1469598103934665603
    for byte in targetingKey.utf8 { hash = (hash ^ UInt64(byte)) &* 1099511628211 }
    var values: [String: JSONValue] = [:]
    for (i, key) in flagKeys.enumerated() {
        let bit = (hash >> UInt64(i % 64)) & 1 == 1
        switch i {
        case 0..<40: values[key] = .bool(bit)
        case 40..<50: values[key] = .int(Int64(i * 10 + (bit ? 1 : 0)))
        case 50..<60: values[key] = .string(bit ? "variant-b" : "variant-a")
        default: values[key] = .object(["enabled": .bool(bit), "limit": .int(Int64(i))])
        }
    }
    return values
}

/// The 10 flags a request reads: one of 4 routes, each with its own 10 of the 64 flags.
let routes = ServiceWorkload.routes

func makePlane(latency: Duration) -> InMemoryControlPlane {
    let plane = InMemoryControlPlane()
    plane.setRecording(false)
    plane.setLatency(latency)
    plane.setContextValues { context in
        guard case .object(let m) = context, case .string(let key)? = m["targetingKey"] else { return nil }
        return flagValues(targetingKey: key)
    }
    return plane
}

/// A transport that counts OFREP requests (bulk and single-flag) before passing them on.
final class CountingTransport: FlagTransport, Sendable {
    let inner: any FlagTransport
    private let count = Locked(0)
    init(_ inner: any FlagTransport) { self.inner = inner }
    var requests: Int { count.withLock { $0 } }
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        if request.url.path.contains("/ofrep/") { count.withLock { $0 += 1 } }
        return try await inner.send(request)
    }
}

// MARK: - The peer designs (in the harness, over the same transport)

/// An async semaphore: at most `limit` holders (the peers get the same 32-fetch bound).
final class AsyncLimit: Sendable {
    private struct State {
        var available: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state: Locked<State>
    init(_ limit: Int) { state = Locked(State(available: limit)) }
    func acquire() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.available > 0 {
                    s.available -= 1
                    return true
                }
                s.waiters.append(c)
                return false
            }
            if now { c.resume() }
        }
    }
    func release() {
        let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if s.waiters.isEmpty {
                s.available += 1
                return nil
            }
            return s.waiters.removeFirst()
        }
        next?.resume()
    }
}

/// The OFREP single-flag request the per-read designs send.
func singleFlagRequest(baseURL: URL, key: String, contextJSON: String) -> TransportRequest {
    TransportRequest(
        method: "POST", url: baseURL.appendingPathComponent("ofrep/v1/evaluate/flags/\(key)"),
        headers: [
            "Authorization": "Bearer srv-bench", "Content-Type": "application/json", "Accept": "application/json",
        ],
        body: Data(("{\"context\":" + contextJSON + "}").utf8))
}

/// Reads one flag remotely: its value, or nil.
func remoteRead(_ transport: any FlagTransport, baseURL: URL, key: String, contextJSON: String) async -> JSONValue? {
    guard
        let response = try? await transport.send(
            singleFlagRequest(baseURL: baseURL, key: key, contextJSON: contextJSON)),
        response.status == 200, case .object(let item)? = try? JSONValue(parsing: response.body)
    else { return nil }
    return item["value"]
}

/// The per-(flag, context-hash) cache of the OFREP providers that cache: an LRU of
/// `capacity` entries under one lock, a TTL, single-flight per entry.
final class FlagContextCache: Sendable {
    private struct Entry {
        var value: JSONValue?
        var fetchedAt: Duration
    }
    private struct State {
        var entries: [String: Entry] = [:]
        var order: [String: UInt64] = [:]
        var tick: UInt64 = 0
        var inFlight: [String: Task<JSONValue?, Never>] = [:]
    }
    let transport: any FlagTransport
    let baseURL: URL
    let capacity: Int
    let ttl: Duration
    let clock: any HalyardClock
    let limit = AsyncLimit(32)
    private let state = Locked(State())

    init(transport: any FlagTransport, baseURL: URL, capacity: Int, ttl: Duration, clock: any HalyardClock) {
        self.transport = transport
        self.baseURL = baseURL
        self.capacity = capacity
        self.ttl = ttl
        self.clock = clock
    }

    func read(_ key: String, fingerprint: String, contextJSON: String) async -> JSONValue? {
        switch step(key, fingerprint: fingerprint, contextJSON: contextJSON) {
        case .hit(let value): return value
        case .wait(let task): return await task.value
        }
    }

    /// Whether a read would answer at once (a fresh entry); otherwise starts its fetch (single
    /// flight) and answers false. The brownout section asks this: a request that would wait
    /// for a 2 s plane is not served within its deadline.
    func servesAtOnce(_ key: String, fingerprint: String, contextJSON: String) -> Bool {
        if case .hit = step(key, fingerprint: fingerprint, contextJSON: contextJSON) { return true }
        return false
    }

    private enum Step {
        case hit(JSONValue?)
        case wait(Task<JSONValue?, Never>)
    }

    private func step(_ key: String, fingerprint: String, contextJSON: String) -> Step {
        let cacheKey = key + "|" + fingerprint
        let now = clock.monotonicNow
        return state.withLock { s -> Step in
            s.tick += 1
            if let entry = s.entries[cacheKey], now - entry.fetchedAt <= ttl {
                s.order[cacheKey] = s.tick
                return .hit(entry.value)
            }
            if let task = s.inFlight[cacheKey] { return .wait(task) }
            let task = Task { [self] in
                await limit.acquire()
                let value = await remoteRead(transport, baseURL: baseURL, key: key, contextJSON: contextJSON)
                limit.release()
                state.withLock { s in
                    s.inFlight[cacheKey] = nil
                    s.tick += 1
                    s.entries[cacheKey] = Entry(value: value, fetchedAt: clock.monotonicNow)
                    s.order[cacheKey] = s.tick
                    if s.entries.count > capacity {
                        // Evict the least recently used eighth at once (amortised LRU).
                        let victims = s.order.sorted { $0.value < $1.value }.prefix(capacity / 8)
                        for (victim, _) in victims {
                            s.entries[victim] = nil
                            s.order[victim] = nil
                        }
                    }
                }
                return value
            }
            s.inFlight[cacheKey] = task
            return .wait(task)
        }
    }
}

// MARK: - Halyard

/// The cache of the workload: 10,000 contexts. With 64 flags a context takes ~17 KiB (section
/// 4), so the byte bound is raised to 256 MiB for the count to be the bound that binds; the
/// "64 MiB" rows keep the default and show what it holds.
func makeService(
    transport: any FlagTransport, baseURL: URL, clock: any HalyardClock, maxContexts: Int = 10_000,
    maxCacheBytes: Int = 256 << 20, coldFetchTimeout: Duration = .milliseconds(250), admission: Bool = false,
    sharesDetails: Bool = true, detailStripes: Int = DetailInterner.defaultStripes
) throws -> FlagService {
    var o = FlagServiceOptions(baseURL: baseURL, key: "srv-bench")
    o.frequencyAdmission = admission
    o.maxCacheBytes = maxCacheBytes
    o.transport = transport
    o.clock = clock
    o.installID = "halyard-bench-service"
    o.maxContexts = maxContexts
    o.coldFetchTimeout = coldFetchTimeout
    o.exposures.enabled = false
    o.maxQueuedFetches = 100_000
    o.sharesServedDetails = sharesDetails
    o.sharedDetailStripes = detailStripes
    return try FlagService(options: o)
}

/// One request on FlagService: the view, then the route's 10 reads. Returns a checksum.
@inline(__always)
func halyardRequest(_ service: FlagService, _ ctx: EvaluationContext, _ route: Int) async -> Int {
    let flags = await service.flags(for: ctx)
    var sum = 0
    for key in routes[route] where flags.bool(key, default: false) { sum += 1 }
    return sum
}

/// Warms `service` with the `count` most popular contexts (ranks 0..<count).
func warm(_ service: FlagService, count: Int) async {
    await withTaskGroup(of: Void.self) { group in
        for worker in 0..<64 {
            group.addTask {
                var id = worker
                while id < count {
                    _ = await service.flags(for: context(id))
                    id += 64
                }
            }
        }
    }
}

print("# halyard-bench-service\(quick ? " (quick)" : "")")
print(
    "date: \(ISO8601DateFormatter().string(from: Date()))  cores: \(ProcessInfo.processInfo.activeProcessorCount)"
)
print(
    "workload: \(universe) contexts x 10 attributes, Zipf(1.1), 64 flags per context, 10 reads per request (4 routes)")

// MARK: 4. Memory per cached context (64 flags)

/// Section 4 (also alone: `--memory-only`): the default service, then one with own details
/// (`sharesServedDetails = false`, as before details were shared) in the same run, each
/// filled with the same new contexts; malloc's bytes and the CPU time of the fills.
@MainActor func memoryPerContext() async throws {
    let contexts = quick ? 2_000 : 5_000
    print("\n## 4. memory per cached context (64 flags), \(contexts) contexts")
    var perContext: [Bool: Double] = [:]
    var cpuPerFetch: [Bool: Double] = [:]
    for sharing in [true, false] {
        let service = try makeService(
            transport: makePlane(latency: .zero), baseURL: InMemoryControlPlane.baseURL, clock: SystemClock(),
            maxContexts: contexts * 2, sharesDetails: sharing)
        _ = await service.flags(for: context(universe - 1))  // the first fetch's one-time allocations
        let prebuilt = (0..<contexts).map { context(universe - 2 - $0) }
        try await Task.sleep(for: .milliseconds(200))
        let before = heapBytes()
        let cpuBefore = cpuSeconds()
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<16 {
                group.addTask {
                    var i = worker
                    while i < contexts {
                        _ = await service.flags(for: prebuilt[i])
                        i += 16
                    }
                }
            }
        }
        let cpu = cpuSeconds() - cpuBefore
        try await Task.sleep(for: .milliseconds(200))
        let after = heapBytes()
        let stats = service.stats
        let measuredPer = Double(after - before) / Double(contexts)
        let estimatedPer = Double(stats.bytesHeld) / Double(stats.contextsHeld)
        // What the service estimates it holds beside the cache: the fitting memo's entries, and
        // the keys, key tables and details its snapshots share (each bounded on its own).
        let beside = stats.memoBytes + stats.internedKeyBytes + stats.sharedDetailBytes
        let totalPer = Double(stats.bytesHeld + beside) / Double(stats.contextsHeld)
        perContext[sharing] = measuredPer
        cpuPerFetch[sharing] = cpu / Double(contexts) * 1e6
        print(
            "  \(sharing ? "shared details (default)" : "own details"): measured (malloc, mallinfo2) \(fmt(measuredPer / 1024)) KiB per context; estimated \(fmt(estimatedPer / 1024)) KiB in the cache (what its bound counts) + \(fmt(Double(beside) / Double(stats.contextsHeld) / 1024)) KiB beside it (memo \(stats.memoBytes / 1024) KiB, shared keys and tables \(stats.internedKeyBytes / 1024) KiB, \(stats.sharedDetails) shared details \(stats.sharedDetailBytes / 1024) KiB, in all); total estimate / measured \(fmt(totalPer / measuredPer)); CPU \(fmt(cpu / Double(contexts) * 1e6, 1)) µs per cold fetch (plane included)"
        )
        verdict(
            "byte estimate (cache and beside it) within 0.8x-1.5x of malloc's figure, \(sharing ? "shared" : "own") details",
            totalPer / measuredPer >= 0.8 && totalPer / measuredPer <= 1.5, "\(fmt(totalPer / measuredPer))x")
        if sharing {
            print(
                "  -> the 64 MiB default holds about \((64 << 20) / Int(max(estimatedPer, 1))) such contexts; 10,000 of them take about \(fmt(estimatedPer * 10_000 / 1_048_576, 0)) MiB"
            )
            results["memory"] = [
                "measuredBytesPerContext": measuredPer, "estimatedBytesPerContext": estimatedPer,
                "estimatedTotalBytesPerContext": totalPer,
            ]
        }
        service.close()
    }
    let shared = perContext[true] ?? .nan
    print(
        "  shared / own: memory \(fmt(shared / (perContext[false] ?? .nan)))x, CPU per cold fetch \(fmt((cpuPerFetch[true] ?? .nan) / (cpuPerFetch[false] ?? .nan)))x"
    )
    verdict("memory per cached 64-flag context <= 10 KiB (malloc)", shared <= 10 * 1024, "\(fmt(shared / 1024)) KiB")
}

/// Section 9 (also alone: `--details-only`). One thread per core (at least 2), each with a
/// view of its own context, reads the details of the same two flags (a Boolean and an object)
/// in a loop. A detail read retains and releases its detail: when contexts share one object,
/// its reference count's cache line moves between the cores. Three services: the default
/// (shared, striped: `DetailInterner.defaultStripes` copies of each result, picked by the
/// context's fingerprint), one copy of each result (`sharedDetailStripes = 1`: every thread
/// on one object, the worst case), and own details (`sharesServedDetails = false`: no
/// sharing, as before). Each round takes new contexts (so which of them meet on one stripe
/// varies as it would for users); reported as ns per read and as ratios to own details in the
/// same round (docs/service.md, "Shared details").
@MainActor func sharedDetailsSection() async throws {
    let threads = max(2, ProcessInfo.processInfo.activeProcessorCount)
    let reads = quick ? 1_000_000 : 4_000_000
    let rounds = quick ? 4 : 8
    print("\n## 9. detail reads from \(threads) threads, each its own context: shared vs own details")
    /// A service and a view of each context the rounds read.
    typealias Views = (service: FlagService, views: [ContextFlags])
    func views(sharing: Bool, stripes: Int = DetailInterner.defaultStripes) async throws -> Views {
        let service = try makeService(
            transport: makePlane(latency: .zero), baseURL: InMemoryControlPlane.baseURL, clock: SystemClock(),
            sharesDetails: sharing, detailStripes: stripes)
        var views: [ContextFlags] = []
        for id in 0..<(threads * rounds) { views.append(await service.flags(for: context(id))) }
        return (service, views)
    }
    let boolKey = flagKeys[0]
    let objectKey = flagKeys[63]
    func run(_ views: ArraySlice<ContextFlags>) -> Double {
        let views = Array(views)
        let sums = Locked(0)
        let start = nowNanoseconds()
        DispatchQueue.concurrentPerform(iterations: views.count) { index in
            let view = views[index]
            var sum = 0
            for _ in 0..<(reads / 2) {
                if view.boolDetail(boolKey, default: false).value { sum &+= 1 }
                if case .object(let m) = view.detail(objectKey, default: .null).value { sum &+= m.count }
            }
            sums.withLock { $0 &+= sum }
        }
        let elapsed = Double(nowNanoseconds() - start)
        precondition(sums.withLock { $0 } > 0, "the reads were not served")
        return elapsed / Double(reads)  // per read on one thread (all threads run at once)
    }
    let (striped, stripedViews) = try await views(sharing: true)
    let (single, singleViews) = try await views(sharing: true, stripes: 1)
    let (own, ownViews) = try await views(sharing: false)
    precondition(
        striped.stats.sharedDetails > 0 && single.stats.sharedDetails <= 128 && own.stats.sharedDetails == 0,
        "the three services do not differ in sharing")
    var stripedRatios: [Double] = []
    var singleRatios: [Double] = []
    for round in 0..<rounds {
        let range = (round * threads)..<((round + 1) * threads)
        let a = run(stripedViews[range])
        let b = run(singleViews[range])
        let c = run(ownViews[range])
        stripedRatios.append(a / c)
        singleRatios.append(b / c)
        print(
            "  round \(round + 1): striped \(fmt(a)) ns per read, one copy \(fmt(b)), own \(fmt(c)); ratios to own \(fmt(a / c)), \(fmt(b / c))"
        )
    }
    let mean = { (v: [Double]) in v.reduce(0, +) / Double(v.count) }
    print(
        "  striped (\(DetailInterner.defaultStripes) copies) / own: median \(fmt(median(stripedRatios)))x, mean \(fmt(mean(stripedRatios)))x; one copy / own: median \(fmt(median(singleRatios)))x"
    )
    results["sharedDetails"] = [
        "threads": threads, "stripes": DetailInterner.defaultStripes, "stripedToOwn": stripedRatios,
        "oneCopyToOwn": singleRatios,
    ]
    verdict(
        "detail reads on shared (striped) details, mean over rounds <= 1.5x own details", mean(stripedRatios) <= 1.5,
        "\(fmt(mean(stripedRatios)))x (one copy: \(fmt(median(singleRatios)))x)")
    striped.close()
    single.close()
    own.close()
}

if options.memoryOnly {
    try await memoryPerContext()
    for (name, pass, detail) in verdicts { print("\(pass ? "PASS" : "FAIL")  \(name): \(detail)") }
    exit(0)
}
if options.detailsOnly {
    try await sharedDetailsSection()
    for (name, pass, detail) in verdicts { print("\(pass ? "PASS" : "FAIL")  \(name): \(detail)") }
    exit(0)
}
if options.brownoutOnly {
    try await brownoutSection()
    for (name, pass, detail) in verdicts { print("\(pass ? "PASS" : "FAIL")  \(name): \(detail)") }
    exit(0)
}

// MARK: 1. Warm latency: flags(for:) + 10 reads, one task

let plane = makePlane(latency: .milliseconds(2))
let warmSet = quick ? 4_000 : 8_000
let warmService = try makeService(transport: plane, baseURL: InMemoryControlPlane.baseURL, clock: SystemClock())
await warm(warmService, count: warmSet)
let warmZipf = Zipf(n: warmSet, s: 1.1)
// Contexts are built before the clock starts (a service gets them from its request); the
// fitting (canonical JSON + SHA-1) is inside flags(for:) and timed.
let warmContexts = (0..<warmSet).map(context)
let warmFitted = try warmContexts.map { try $0.fitted() }
let latencySamples = options.samples ?? (quick ? 20_000 : 100_000)

/// The latency loop, off the main actor (top-level code is main-actor isolated: awaiting a
/// nonisolated function from it hops threads on every request, ~10 µs, which a server's
/// request handlers never pay).
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
            checksum &+= await halyardRequest(service, contexts[id], route)
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
var (latencies, latenciesFitted, checksum) = await measureWarm(
    warmService, warmContexts, warmFitted, samples: latencySamples, path: options.path)
latencies.sort()
latenciesFitted.sort()
let warmStats = warmService.stats
let p50 = percentile(latencies, 0.5) / 1000
let p99 = percentile(latencies, 0.99) / 1000
let p50f = percentile(latenciesFitted, 0.5) / 1000
let p99f = percentile(latenciesFitted, 0.99) / 1000
print("\n## 1. warm flags(for:) + 10 reads, one task (\(latencySamples) requests each, \(warmSet) warm contexts)")
print(
    "  flags(for: EvaluationContext)  p50 \(fmt(p50)) µs  p99 \(fmt(p99)) µs   (includes fitting: canonical JSON + SHA-1)"
)
print("  flags(for: FittedContext)      p50 \(fmt(p50f)) µs  p99 \(fmt(p99f)) µs   (context fitted by the caller)")
print("  hits \(warmStats.hits), misses \(warmStats.misses) during the pass (checksum \(checksum))")
results["warm"] = ["p50us": p50, "p99us": p99, "fittedP50us": p50f, "fittedP99us": p99f, "samples": latencySamples]
verdict("warm flags(for:)+10 reads, p50 <= 5 µs", p50 <= 5, "\(fmt(p50)) µs (pre-fitted: \(fmt(p50f)) µs)")
verdict("warm flags(for:)+10 reads, p99 <= 20 µs", p99 <= 20, "\(fmt(p99)) µs (pre-fitted: \(fmt(p99f)) µs)")
// Issue 21's targets, as ratios to the pre-fitted path of the same run (absolute figures move
// 2x between machines): p50 <= 2.0x (stretch 1.3x), p99 <= 3x.
print("  ratios to the pre-fitted path: p50 \(fmt(p50 / p50f))x, p99 \(fmt(p99 / p99f))x")
results["warmRatios"] = ["p50": p50 / p50f, "p99": p99 / p99f]
verdict("warm p50 <= 2.0x the pre-fitted path", p50 <= 2 * p50f, "\(fmt(p50 / p50f))x")
verdict("warm p99 <= 3x the pre-fitted path", p99 <= 3 * p99f, "\(fmt(p99 / p99f))x")
if options.warmOnly {
    warmService.close()
    exit(0)
}

// Reads on a held view against FlagClient's keyed reads, same flags, paired passes.
do {
    let view = await warmService.flags(for: warmContexts[0])
    let client = try FlagClient(offlineValues: flagValues(targetingKey: "user-0"))
    let keys = routes[0]
    let reads = 200_000
    var viewNs: [Double] = []
    var clientNs: [Double] = []
    var sink = 0
    for round in 0..<(quick ? 7 : 21) {
        for pass in 0..<2 {
            let useView = (pass == 0) == (round % 2 == 0)
            let t0 = nowNanoseconds()
            if useView {
                for i in 0..<reads where view.bool(keys[i % 10], default: false) { sink &+= 1 }
            } else {
                for i in 0..<reads where client.bool(keys[i % 10], default: false) { sink &+= 1 }
            }
            let ns = Double(nowNanoseconds() - t0) / Double(reads)
            if useView { viewNs.append(ns) } else { clientNs.append(ns) }
        }
    }
    let ratios = zip(viewNs, clientNs).map { $0 / $1 }.sorted()
    let ratio = median(ratios)
    print(
        "  ContextFlags.bool vs FlagClient.bool (keyed, same 64 flags): \(fmt(median(viewNs))) vs \(fmt(median(clientNs))) ns/read, ratio \(fmt(ratio, 3))x (IQR \(fmt(percentile(ratios, 0.25), 3))-\(fmt(percentile(ratios, 0.75), 3)); sink \(sink % 2))"
    )
    results["viewRead"] = ["viewNs": median(viewNs), "clientNs": median(clientNs), "ratio": ratio]
    verdict(
        "ContextFlags keyed read at least as fast as FlagClient's (<= 1.10x, noise)", ratio <= 1.10, "\(fmt(ratio, 3))x"
    )
    client.close()
}

// MARK: 2. Scaling: 64 tasks vs 1 task

do {
    let perTask = quick ? 2_000 : 10_000
    /// One pass: (requests per wall second, process CPU µs per request).
    func pass(tasks: Int) async -> (Double, Double) {
        let count = perTask * 8
        let cpu0 = cpuSeconds()
        let t0 = nowNanoseconds()
        await withTaskGroup(of: Int.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    var rng = SplitMix64(seed: UInt64(task + 1) &* 7919)
                    var sum = 0
                    for _ in 0..<(count / tasks) {
                        let id = warmZipf.sample(rng.unit())
                        sum &+= await halyardRequest(warmService, warmContexts[id], Int(rng.next() % 4))
                    }
                    return sum
                }
            }
            for await _ in group {}
        }
        let seconds = Double(nowNanoseconds() - t0) / 1e9
        let cpu = cpuSeconds() - cpu0
        return (Double(count) / seconds, cpu * 1e6 / Double(count))
    }
    /// The control: 64 tasks doing CPU work that shares nothing (fitting contexts), to show how
    /// many cores this process can get on the shared machine right now.
    func control() async -> Double {
        let cpu0 = cpuSeconds()
        let t0 = nowNanoseconds()
        await withTaskGroup(of: Int.self) { group in
            for task in 0..<64 {
                group.addTask {
                    var n = 0
                    for i in 0..<(perTask / 8) {
                        if let f = try? warmContexts[(task * 131 + i) % warmContexts.count].fitted() {
                            n &+= f.fingerprint.utf8.count
                        }
                    }
                    return n
                }
            }
            for await _ in group {}
        }
        return (cpuSeconds() - cpu0) / (Double(nowNanoseconds() - t0) / 1e9)
    }
    var controlCores: [Double] = []
    var one: [Double] = []
    var many: [Double] = []
    var oneCPU: [Double] = []
    var manyCPU: [Double] = []
    for round in 0..<(quick ? 5 : 9) {
        for first in [round % 2 == 0, round % 2 != 0] {
            if first { controlCores.append(await control()) }
            let (rate, cpu) = await pass(tasks: first ? 1 : 64)
            if first {
                one.append(rate)
                oneCPU.append(cpu)
            } else {
                many.append(rate)
                manyCPU.append(cpu)
            }
        }
    }
    let ratios = zip(many, one).map { $0 / $1 }.sorted()
    let ratio = median(ratios)
    let costRatios = zip(manyCPU, oneCPU).map { $0 / $1 }.sorted()
    let costRatio = median(costRatios)
    // Cores busy during a pass: requests/s × CPU per request.
    let oneCores = median(one) * median(oneCPU) / 1e6
    let manyCores = median(many) * median(manyCPU) / 1e6
    var load = [Double](repeating: 0, count: 3)
    _ = getloadavg(&load, 3)
    print(
        "\n## 2. scaling: warm requests/s, 64 tasks vs 1 task (\(ProcessInfo.processInfo.activeProcessorCount) cores, load average \(fmt(load[0])))"
    )
    print(
        "  wall: 1 task \(fmt(median(one), 0))/s, 64 tasks \(fmt(median(many), 0))/s: \(fmt(ratio))x (rounds: \(ratios.map { fmt($0) }.joined(separator: " ")))"
    )
    print(
        "  CPU per request: 1 task \(fmt(median(oneCPU))) µs, 64 tasks \(fmt(median(manyCPU))) µs: \(fmt(costRatio))x (rounds: \(costRatios.map { fmt($0) }.joined(separator: " ")))"
    )
    print(
        "  cores busy (requests/s x CPU per request): 1 task \(fmt(oneCores)), 64 tasks \(fmt(manyCores)); control (64 tasks fitting contexts, nothing shared): \(fmt(median(controlCores))) cores"
    )
    print(
        "  -> on 2 idle cores 64 tasks would do about \(fmt(2 / costRatio))x one task's requests (2 cores / CPU-cost ratio); the wall figure is limited by the cores other processes leave free"
    )
    verdict(
        "64 tasks on 2 cores: CPU per request <= 1.25x one task's (=> >= 1.6x throughput on 2 free cores)",
        costRatio <= 1.25, "\(fmt(costRatio))x CPU per request; wall \(fmt(ratio))x at load average \(fmt(load[0]))")
    results["scaling"] = [
        "oneTask": median(one), "sixtyFourTasks": median(many), "ratio": ratio, "ratios": ratios,
        "cpuPerRequestOneTaskUs": median(oneCPU), "cpuPerRequestSixtyFourTasksUs": median(manyCPU),
        "cpuCostRatio": costRatio, "loadAverage": load[0], "coresBusyOneTask": oneCores,
        "coresBusySixtyFourTasks": manyCores,
        "coresBusyControl": median(controlCores),
    ]
    verdict("64 tasks >= 1.6x one task (2 cores), wall", ratio >= 1.6, "\(fmt(ratio))x")
}
warmService.close()

// MARK: 3. Control-plane requests per 1,000 requests at steady state

struct LoadResult {
    var requestsPer1000: Double
    var p50us: Double
    var p99us: Double
    var seconds: Double
}

/// Runs `warmup` then `measured` requests of the Zipf stream with 64 tasks; the simulated clock
/// moves 1 ms per request. `request` returns nothing; control-plane requests are counted by
/// `counter` during the measured part only.
func load(
    name: String, warmup: Int, measured: Int, clock: ManualClock, counter: CountingTransport, seed: UInt64,
    request: @escaping @Sendable (Int, Int) async -> Void
) async -> LoadResult {
    let issued = Locked(0)
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
    var samples = await run(measured, record: true)
    let seconds = Double(nowNanoseconds() - t0) / 1e9
    let sent = counter.requests - before
    samples.sort()
    let result = LoadResult(
        requestsPer1000: Double(sent) * 1000 / Double(samples.count), p50us: percentile(samples, 0.5),
        p99us: percentile(samples, 0.99), seconds: seconds)
    print(
        "  \(name.padding(toLength: 16, withPad: " ", startingAt: 0)) \(fmt(result.requestsPer1000, 1)) control-plane requests / 1,000 requests; latency p50 \(fmt(result.p50us, 1)) µs, p99 \(fmt(result.p99us, 1)) µs (all requests, cold included; \(fmt(seconds, 1)) s)"
    )
    return result
}

let warmup = quick ? 10_000 : 60_000
let measured = quick ? 20_000 : 120_000
print(
    "\n## 3. steady state: \(warmup) warm-up then \(measured) measured requests, 64 tasks, in-memory plane with 2 ms latency, simulated 1,000 requests/s"
)
var perDesign: [String: [String: Double]] = [:]
var halyardPeak = 0
var halyardBound = 0
do {
    let clock = ManualClock()
    let counter = CountingTransport(makePlane(latency: .milliseconds(2)))
    let service = try makeService(
        transport: counter, baseURL: InMemoryControlPlane.baseURL, clock: clock, coldFetchTimeout: .seconds(5))
    let r = await load(
        name: "halyard", warmup: warmup, measured: measured, clock: clock, counter: counter, seed: 7
    ) { id, route in
        _ = await halyardRequest(service, context(id), route)
    }
    let stats = service.stats
    halyardPeak = stats.peakBytesHeld
    halyardBound = 256 << 20
    print(
        "    hits \(stats.hits), misses \(stats.misses), background refreshes \(stats.backgroundRefreshes), 304s \(stats.notModified), evictions \(stats.evictions), held \(stats.contextsHeld) contexts, \(stats.bytesHeld / 1024) KiB (peak \(stats.peakBytesHeld / 1024) KiB, bound \(halyardBound / 1024) KiB), cold waits \(stats.coldWaits), timeouts \(stats.timeouts)"
    )
    perDesign["halyard"] = ["per1000": r.requestsPer1000, "p50us": r.p50us, "p99us": r.p99us]
    service.close()
}
do {
    let clock = ManualClock()
    let counter = CountingTransport(makePlane(latency: .milliseconds(2)))
    let service = try makeService(
        transport: counter, baseURL: InMemoryControlPlane.baseURL, clock: clock, coldFetchTimeout: .seconds(5),
        admission: true)
    let r = await load(
        name: "halyard+tinylfu", warmup: warmup, measured: measured, clock: clock, counter: counter, seed: 7
    ) { id, route in
        _ = await halyardRequest(service, context(id), route)
    }
    let stats = service.stats
    print(
        "    frequency admission: \(stats.admissionRejections) fetched contexts not admitted, evictions \(stats.evictions), held \(stats.contextsHeld), hits \(stats.hits), misses \(stats.misses)"
    )
    perDesign["halyard-tinylfu"] = ["per1000": r.requestsPer1000, "p50us": r.p50us, "p99us": r.p99us]
    service.close()
}
do {
    let clock = ManualClock()
    let counter = CountingTransport(makePlane(latency: .milliseconds(2)))
    let service = try makeService(
        transport: counter, baseURL: InMemoryControlPlane.baseURL, clock: clock, maxCacheBytes: 64 << 20,
        coldFetchTimeout: .seconds(5))
    let r = await load(
        name: "halyard (64 MiB)", warmup: warmup, measured: measured, clock: clock, counter: counter, seed: 7
    ) { id, route in
        _ = await halyardRequest(service, context(id), route)
    }
    let stats = service.stats
    print(
        "    the default 64 MiB bound binds first: held \(stats.contextsHeld) contexts, peak \(stats.peakBytesHeld / 1024) KiB <= \(64 << 10) KiB"
    )
    perDesign["halyard-64MiB"] = ["per1000": r.requestsPer1000, "p50us": r.p50us, "p99us": r.p99us]
    verdict(
        "peak cache bytes <= the default 64 MiB bound under the Zipf run", stats.peakBytesHeld <= 64 << 20,
        "\(stats.peakBytesHeld / 1024) KiB")
    service.close()
}
do {
    let clock = ManualClock()
    let counter = CountingTransport(makePlane(latency: .milliseconds(2)))
    let cache = FlagContextCache(
        transport: counter, baseURL: InMemoryControlPlane.baseURL, capacity: 100_000, ttl: .seconds(30), clock: clock)
    let r = await load(
        name: "flag-ctx-cache", warmup: warmup, measured: measured, clock: clock, counter: counter, seed: 7
    ) { id, route in
        guard let fitted = try? context(id).fitted() else { return }
        for key in routes[route] {
            _ = await cache.read(key, fingerprint: fitted.fingerprint, contextJSON: fitted.canonicalJSON)
        }
    }
    perDesign["flag-ctx-cache"] = ["per1000": r.requestsPer1000, "p50us": r.p50us, "p99us": r.p99us]
}
do {
    let clock = ManualClock()
    let counter = CountingTransport(makePlane(latency: .milliseconds(2)))
    let limit = AsyncLimit(32)
    let r = await load(
        name: "remote-per-read", warmup: 0, measured: quick ? 640 : 3_200, clock: clock, counter: counter, seed: 7
    ) { id, route in
        guard let fitted = try? context(id).fitted() else { return }
        for key in routes[route] {
            await limit.acquire()
            _ = await remoteRead(
                counter, baseURL: InMemoryControlPlane.baseURL, key: key, contextJSON: fitted.canonicalJSON)
            limit.release()
        }
    }
    perDesign["remote-per-read"] = ["per1000": r.requestsPer1000, "p50us": r.p50us, "p99us": r.p99us]
}
results["steadyState"] = perDesign
let halyardLoad = perDesign["halyard"]?["per1000"] ?? .nan
let cacheLoad = perDesign["flag-ctx-cache"]?["per1000"] ?? .nan
verdict(
    "control-plane requests: halyard >= 10x fewer than flag-ctx-cache", cacheLoad / halyardLoad >= 10,
    "\(fmt(halyardLoad, 1)) vs \(fmt(cacheLoad, 1)) per 1,000 (\(fmt(cacheLoad / halyardLoad, 1))x fewer); remote-per-read \(fmt(perDesign["remote-per-read"]?["per1000"] ?? .nan, 0))"
)
verdict(
    "peak cache bytes <= bound under the Zipf run (10,000 contexts, 256 MiB)", halyardPeak <= halyardBound,
    "\(halyardPeak / 1024) KiB <= \(halyardBound / 1024) KiB")

// MARK: 4. Memory per cached context (64 flags)

try await memoryPerContext()

// MARK: 5. Cold single-flight

do {
    let counter = CountingTransport(makePlane(latency: .milliseconds(2)))
    let service = try makeService(
        transport: counter, baseURL: InMemoryControlPlane.baseURL, clock: ManualClock(), coldFetchTimeout: .seconds(60))
    let ctx = context(123_456)
    let served = await withTaskGroup(of: Bool.self) { group -> Int in
        for _ in 0..<10_000 { group.addTask { await service.flags(for: ctx).hasValues } }
        var n = 0
        for await ok in group where ok { n += 1 }
        return n
    }
    let stats = service.stats
    print("\n## 5. cold single-flight: 10,000 concurrent flags(for:) for one cold context")
    print("  control-plane requests \(counter.requests); served \(served); waited on the flight \(stats.coldWaits)")
    results["singleFlight"] = ["requests": counter.requests, "served": served, "coldWaits": stats.coldWaits]
    verdict("10,000 concurrent cold flags(for:) -> exactly 1 request", counter.requests == 1, "\(counter.requests)")
    service.close()
}

// MARK: 6. Loopback control plane

if options.loopback {
    let items: [[String: Any]] = flagValues(targetingKey: "loopback").sorted { $0.key < $1.key }.map { key, value in
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
    var loop: [String: [String: Double]] = [:]
    do {
        let clock = ManualClock()
        let counter = CountingTransport(makeDefaultTransportForBench())
        let service = try makeService(
            transport: counter, baseURL: server.baseURL, clock: clock, coldFetchTimeout: .seconds(5))
        let r = await load(
            name: "halyard", warmup: requests / 2, measured: requests, clock: clock, counter: counter, seed: 9
        ) {
            id, route in
            _ = await halyardRequest(service, context(id), route)
        }
        loop["halyard"] = ["per1000": r.requestsPer1000, "p50us": r.p50us, "p99us": r.p99us]
        service.close()
    }
    do {
        let clock = ManualClock()
        let counter = CountingTransport(makeDefaultTransportForBench())
        let cache = FlagContextCache(
            transport: counter, baseURL: server.baseURL, capacity: 100_000, ttl: .seconds(30), clock: clock)
        let r = await load(
            name: "flag-ctx-cache", warmup: requests / 4, measured: requests / 2, clock: clock, counter: counter,
            seed: 9
        ) { id, route in
            guard let fitted = try? context(id).fitted() else { return }
            for key in routes[route] {
                _ = await cache.read(key, fingerprint: fitted.fingerprint, contextJSON: fitted.canonicalJSON)
            }
        }
        loop["flag-ctx-cache"] = ["per1000": r.requestsPer1000, "p50us": r.p50us, "p99us": r.p99us]
    }
    do {
        let clock = ManualClock()
        let counter = CountingTransport(makeDefaultTransportForBench())
        let limit = AsyncLimit(32)
        let r = await load(name: "remote-per-read", warmup: 0, measured: 256, clock: clock, counter: counter, seed: 9) {
            id, route in
            guard let fitted = try? context(id).fitted() else { return }
            for key in routes[route] {
                await limit.acquire()
                _ = await remoteRead(counter, baseURL: server.baseURL, key: key, contextJSON: fitted.canonicalJSON)
                limit.release()
            }
        }
        loop["remote-per-read"] = ["per1000": r.requestsPer1000, "p50us": r.p50us, "p99us": r.p99us]
    }
    results["loopback"] = loop
}

// MARK: 7-8. Brownout and a Retry-After: 0 storm (simulated time)

/// The in-memory plane behind a latency on a simulated clock, optionally answering every OFREP
/// request 503 with `Retry-After: 0`.
final class SimulatedPlane: FlagTransport, Sendable {
    let inner: InMemoryControlPlane
    let clock: ManualClock
    let latency: Duration
    let storm: Bool
    private let sent = Locked(0)
    init(_ inner: InMemoryControlPlane, clock: ManualClock, latency: Duration, storm: Bool = false) {
        self.inner = inner
        self.clock = clock
        self.latency = latency
        self.storm = storm
    }
    var requests: Int { sent.withLock { $0 } }
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        // Bulk and single-flag evaluations alike (the per-(flag, context) design sends the latter).
        guard request.url.path.contains("/ofrep/v1/evaluate/flags") else { return try await inner.send(request) }
        sent.withLock { $0 += 1 }
        if latency > .zero { try await clock.sleep(for: latency) }
        if storm { return TransportResponse(status: 503, headers: ["Retry-After": "0"]) }
        return try await inner.send(request)
    }
}

/// Service options for the simulated runs: the defaults, but no exposures.
func simulatedService(_ transport: any FlagTransport, clock: ManualClock) throws -> FlagService {
    var o = FlagServiceOptions(baseURL: InMemoryControlPlane.baseURL, key: "srv-bench")
    o.transport = transport
    o.clock = clock
    o.installID = "halyard-bench-service"
    o.exposures.enabled = false
    return try FlagService(options: o)
}

/// Lets the tasks woken by a clock step run (real time; the simulated clock does not move).
func settle() async {
    for _ in 0..<3 { await Task.yield() }
    try? await Task.sleep(for: .microseconds(200))
}

/// Section 7 (also alone: `--brownout-only`): Halyard, then the per-(flag, context) design.
@MainActor func brownoutSection() async throws {
    do {
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
            "  requests sent \(transport.requests) (\(fmt(Double(transport.requests) / Double(minutes * 60), 1))/s; 32 slots x 0.5/s = 16/s), background refreshes \(stats.backgroundRefreshes), dropped (waiters gone) \(stats.droppedFetches), shed \(stats.shedFetches), contexts held \(stats.contextsHeld)"
        )
        results["brownout"] = [
            "hotServedShare": hotShare, "hotAsked": hotAsked, "coldServedInTime": coldServed.withLock { $0 },
            "coldAsked": coldAsked, "requestsSent": transport.requests, "dropped": stats.droppedFetches,
            "shed": stats.shedFetches, "minutes": minutes,
        ]
        verdict("brownout: hot requests served values = 100 %", hotServed == hotAsked, "\(fmt(hotShare * 100, 3)) %")
        service.close()
    }

    // The same brownout for the per-(flag, context) cache design (the OFREP providers that cache:
    // one entry per flag per context, a 30 s TTL, no stale-while-revalidate, single flight, the
    // same 32 fetches at a time). A request reads its route's 10 flags; it is served when all 10
    // answer at once: a read that misses waits for a 2 s plane, past any request deadline.
    do {
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
        var brownout = results["brownout"] as? [String: Any] ?? [:]
        brownout["flagContextCache"] = [
            "hotServedShare": hotShare, "hotAsked": hotAsked, "coldServedAtOnce": coldServed, "coldAsked": coldAsked,
            "requestsSent": transport.requests,
        ]
        results["brownout"] = brownout
    }
}

try await brownoutSection()

do {
    let seconds = quick ? 60 : 300
    let clock = ManualClock()
    let transport = SimulatedPlane(makePlane(latency: .zero), clock: clock, latency: .zero, storm: true)
    let service = try simulatedService(transport, clock: clock)
    let contexts = try (0..<100).map { try context(universe - 30_000 - $0).fitted() }
    for _ in 0..<(seconds * 100) {
        for f in contexts { _ = service.flagsIfCached(for: f) }
        clock.advance(by: .milliseconds(10))
        await settle()
    }
    // The bound: a context's own backoff never draws less than initialBackoff / 2 (0.5 s), so
    // at most 1 + seconds / 0.5 attempts per context whatever Retry-After says; the
    // service-wide pause after 64 consecutive failures allows far fewer.
    let perContext = Double(transport.requests) / Double(contexts.count)
    let bound = 1 + Double(seconds) / 0.5
    print("\n## 8. 503 + Retry-After: 0 storm: 100 contexts every 10 ms, \(seconds) simulated seconds")
    print(
        "  requests sent per context \(fmt(perContext, 2)) (\(transport.requests) in all; bound by the backoff's shortest draws: \(fmt(bound, 0)); without the floor it would be one per request: \(seconds * 100))"
    )
    results["storm"] = ["requestsPerContext": perContext, "bound": bound, "seconds": seconds]
    verdict(
        "Retry-After: 0 storm: requests per context bounded by the backoff", perContext <= bound,
        "\(fmt(perContext, 2)) <= \(fmt(bound, 0))")
    service.close()
}

// MARK: 9. Detail reads from every core: shared vs own details

try await sharedDetailsSection()

// MARK: - Verdicts

print("\n## verdicts")
for (name, pass, detail) in verdicts { print("\(pass ? "PASS" : "FAIL")  \(name): \(detail)") }
let elapsed = ContinuousClock.now - runStart
print("run took \(elapsed.components.seconds) s")
results["verdicts"] = verdicts.map { ["name": $0.0, "pass": $0.1, "detail": $0.2] }
if let path = options.json {
    let document: [String: Any] = [
        "benchmark": "halyard-bench-service", "quick": quick, "date": ISO8601DateFormatter().string(from: Date()),
        "results": results,
    ]
    let data = try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys])
    try data.write(to: URL(fileURLWithPath: path))
    print("wrote \(path)")
}
exit(0)

/// The transport a service uses by default (libcurl on Linux, URLSession elsewhere).
func makeDefaultTransportForBench() -> any FlagTransport {
    #if os(Linux)
        CurlTransport()
    #else
        URLSessionTransport()
    #endif
}
