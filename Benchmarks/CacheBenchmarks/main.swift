// halyard-bench-cache: the on-device cache's two targets (docs/cache.md, docs/benchmarks.md).
//
//   swift run -c release halyard-bench-cache [--quick] [--rounds N] [--threads N]
//
// (a) Cold start: the time from `FlagClient(options:)` to the first read that answers from the
//     cache (reason CACHED), 200 flags, with the real file store, the control plane holding its
//     reply. Paired, round by round, with the time from `FlagClient(options:)` to the first
//     read of network values from an in-memory control plane that answers at once (cache off):
//     the fastest a first read can be without the cache.
// (b) Reads while publishing: 64 reader threads read keyed Bools while a publisher refreshes
//     (each refresh publishes a new snapshot) as fast as it can, with the cache on (each publish
//     queues a file write: encode, write, fsync, rename) versus off. Rounds alternate on/off;
//     the report gives reads per second of wall time and per reader CPU second, their on/off
//     ratios (median of the per-round ratios), and batch latency percentiles.
import BenchmarkSupport
import Dispatch
import Foundation
import Halyard
import HalyardTesting

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

struct Config: Sendable {
    var quick = false
    var rounds = 0
    var readerThreads = 64
    /// Where to write the figures as JSON (`--json FILE`), as the other harnesses do.
    var jsonPath: String?
}
let config: Config = {
    var c = Config()
    var args = CommandLine.arguments.dropFirst()
    while let arg = args.popFirst() {
        switch arg {
        case "--quick": c.quick = true
        case "--rounds": c.rounds = Int(args.popFirst() ?? "") ?? 0
        case "--threads": c.readerThreads = Int(args.popFirst() ?? "") ?? 64
        case "--json":
            guard let path = args.popFirst() else {
                FileHandle.standardError.write(Data("--json needs a file name\n".utf8))
                exit(2)
            }
            c.jsonPath = path
        case "-h", "--help":
            print("usage: halyard-bench-cache [--quick] [--rounds N] [--threads N] [--json FILE]")
            exit(0)
        default:
            FileHandle.standardError.write(Data("unknown argument \(arg)\n".utf8))
            exit(2)
        }
    }
    if c.rounds <= 0 { c.rounds = c.quick ? 4 : 10 }
    return c
}()
let quick = config.quick
let rounds = config.rounds
let readerThreads = config.readerThreads

func nowNs() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
func threadCPUNs() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}
func progress(_ s: String) { FileHandle.standardError.write(Data((s + "\n").utf8)) }

/// Runs an async operation to completion from synchronous code.
func blocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task {
        box.set(await body())
        done.signal()
    }
    done.wait()
    return box.get()
}
final class ResultBox<T>: @unchecked Sendable {
    private var value: T?
    private let lock = NSLock()
    func set(_ v: T) { lock.withLock { value = v } }
    func get() -> T { lock.withLock { value! } }
}

let flagCount = 200
let keys = (0..<flagCount).map { "flag.\($0)" }
let values: [String: JSONValue] = Dictionary(
    uniqueKeysWithValues: keys.enumerated().map { i, k in (k, i % 3 == 0 ? .bool(i % 2 == 0) : .int(Int64(i))) })
let context = EvaluationContext(targetingKey: "bench-user", attributes: ["plan": "pro"])
let directory = FileManager.default.temporaryDirectory.appendingPathComponent("halyard-bench-cache-\(getpid())")
defer { try? FileManager.default.removeItem(at: directory) }

func options(_ plane: InMemoryControlPlane, cache: Bool) -> FlagClientOptions {
    var o = plane.makeOptions(key: "bench-cache-key")
    o.initialContext = context
    o.exposures.enabled = false
    if cache {
        o.maxCachedContexts = 5
        o.cacheDirectory = directory
    }
    return o
}

// MARK: - (a) cold start

/// Runs (a); returns its figures (microseconds) for `--json`.
func coldStart() -> [String: Double] {
    let plane = InMemoryControlPlane(values: values)
    // Warm the cache once.
    do {
        let client = try! FlagClient(options: options(plane, cache: true))
        precondition(blocking { await client.ready(timeout: .seconds(10)) }, "warm-up client not ready")
        // The write is queued off the read path; give it time to land.
        var waited = 0
        while (try? FileManager.default.contentsOfDirectory(atPath: directory.path).count) ?? 0 < 2, waited < 5000 {
            usleep(1000)
            waited += 1
        }
        client.close()
    }
    let samples = quick ? 40 : 200
    var cached: [Double] = [], network: [Double] = [], creation: [Double] = []
    for round in 0..<(2 * samples) {
        if round % 2 == 0 {
            plane.holdInitialization()
            let t0 = nowNs()
            let client = try! FlagClient(options: options(plane, cache: true))
            let t1 = nowNs()
            while client.boolDetail("flag.0", default: false).reason != .cached {}
            let t2 = nowNs()
            cached.append(Double(t2 - t0) / 1000)
            creation.append(Double(t1 - t0) / 1000)
            client.close()
            plane.completeInitialization()
        } else {
            let t0 = nowNs()
            let client = try! FlagClient(options: options(plane, cache: false))
            while client.boolDetail("flag.0", default: false).errorCode != nil {}
            let t2 = nowNs()
            network.append(Double(t2 - t0) / 1000)
            client.close()
        }
    }
    let ratios = zip(cached, network).map { $0 / $1 }
    print("(a) cold start, \(flagCount) flags, \(samples) paired samples (microseconds)")
    print(
        "    FlagClient(...) -> first CACHED read (file store): p50 \(fmt(median(cached))) p90 \(fmt(percentile(cached, 0.9))) max \(fmt(cached.max() ?? .nan))"
    )
    print(
        "      of which FlagClient(...) itself:                p50 \(fmt(median(creation))) p90 \(fmt(percentile(creation, 0.9)))"
    )
    print(
        "    FlagClient(...) -> first read, in-memory network:  p50 \(fmt(median(network))) p90 \(fmt(percentile(network, 0.9)))"
    )
    print("    ratio cached / in-memory network (median of pairs): \(fmt(median(ratios)))")
    print("    goal < 2000 us for the cached read: \(median(cached) < 2000 ? "MET" : "NOT MET") (p50)")
    return [
        "cachedFirstReadP50Us": median(cached), "cachedFirstReadP90Us": percentile(cached, 0.9),
        "cachedFirstReadMaxUs": cached.max() ?? .nan, "creationP50Us": median(creation),
        "networkFirstReadP50Us": median(network), "cachedOverNetwork": median(ratios),
    ]
}

// MARK: - (b) reads while publishing, cache on vs off

struct PassResult {
    var readsPerSecond: Double
    var readsPerCPUSecond: Double
    var batchNs: [Double]
    var publishes: Int
}

func pass(cache: Bool, threads: Int, seconds: Double) -> PassResult {
    let plane = InMemoryControlPlane(values: values)
    let client = try! FlagClient(options: options(plane, cache: cache))
    precondition(blocking { await client.ready(timeout: .seconds(10)) })
    let stop = UnsafeMutablePointer<Int>.allocate(capacity: 1)
    stop.initialize(to: 0)
    defer { stop.deallocate() }
    let stopFlag = StopFlag(stop)
    let publishes = ResultBox<Int>()
    let publisherDone = DispatchSemaphore(value: 0)
    Task {
        var n = 0
        while !stopFlag.isSet {
            plane.setValue(.int(Int64(n)), for: "flag.1")
            await client.refresh()
            n += 1
        }
        publishes.set(n)
        publisherDone.signal()
    }
    let start = DispatchSemaphore(value: 0)
    let group = DispatchGroup()
    let results = ResultBox<[(Int, UInt64, [Double])]>()
    results.set([])
    for t in 0..<threads {
        group.enter()
        Thread {
            start.wait()
            var reads = 0
            var batches: [Double] = []
            batches.reserveCapacity(4096)
            let cpu0 = threadCPUNs()
            var i = t
            var sink = false
            while !stopFlag.isSet {
                let b0 = nowNs()
                for _ in 0..<16 {
                    sink = sink != client.bool(keys[i % flagCount], default: false)
                    i &+= 7
                }
                let b1 = nowNs()
                reads += 16
                if batches.count < 4096 { batches.append(Double(b1 - b0) / 16) }
            }
            let cpu = threadCPUNs() - cpu0
            if sink { _ = 0 }
            let mine = (reads, cpu, batches)
            resultsLock.withLock { results.set(results.get() + [mine]) }
            group.leave()
        }.start()
    }
    let t0 = nowNs()
    for _ in 0..<threads { start.signal() }
    usleep(UInt32(seconds * 1e6))
    stopFlag.set()
    group.wait()
    let elapsed = Double(nowNs() - t0) / 1e9
    publisherDone.wait()
    client.close()
    let all = results.get()
    let reads = all.reduce(0) { $0 + $1.0 }
    let cpu = Double(all.reduce(0) { $0 + $1.1 }) / 1e9
    return PassResult(
        readsPerSecond: Double(reads) / elapsed, readsPerCPUSecond: Double(reads) / max(cpu, 1e-9),
        batchNs: all.flatMap { $0.2 }, publishes: publishes.get())
}
let resultsLock = NSLock()
final class StopFlag: @unchecked Sendable {
    let word: UnsafeMutablePointer<Int>
    init(_ word: UnsafeMutablePointer<Int>) { self.word = word }
    var isSet: Bool { resultsLock.withLock { word.pointee != 0 } }
    func set() { resultsLock.withLock { word.pointee = 1 } }
}

/// Runs (b); returns its figures for `--json`.
func readsWhilePublishing() -> [String: Double] {
    let seconds = quick ? 0.25 : 0.5
    var on: [PassResult] = [], off: [PassResult] = []
    for round in 0..<rounds {
        for cache in (round % 2 == 0 ? [true, false] : [false, true]) {
            let r = pass(cache: cache, threads: readerThreads, seconds: seconds)
            if cache { on.append(r) } else { off.append(r) }
        }
        progress("[cache] round \(round + 1)/\(rounds)")
    }
    let wallRatios = zip(on, off).map { $0.readsPerSecond / $1.readsPerSecond }
    let cpuRatios = zip(on, off).map { $0.readsPerCPUSecond / $1.readsPerCPUSecond }
    let onBatches = on.flatMap(\.batchNs), offBatches = off.flatMap(\.batchNs)
    print("(b) \(readerThreads) readers while publishing, cache on vs off, \(rounds) paired rounds of \(seconds) s")
    print(
        "    cache on : \(fmt(median(on.map(\.readsPerSecond)) / 1e6)) Mreads/s wall, \(fmt(median(on.map(\.readsPerCPUSecond)) / 1e6)) Mreads/CPU-s, publishes/s \(fmt(median(on.map { Double($0.publishes) / seconds }), 0)), per-read p50/p99/p99.9 \(fmt(percentile(onBatches, 0.5))) / \(fmt(percentile(onBatches, 0.99))) / \(fmt(percentile(onBatches, 0.999))) ns"
    )
    print(
        "    cache off: \(fmt(median(off.map(\.readsPerSecond)) / 1e6)) Mreads/s wall, \(fmt(median(off.map(\.readsPerCPUSecond)) / 1e6)) Mreads/CPU-s, publishes/s \(fmt(median(off.map { Double($0.publishes) / seconds }), 0)), per-read p50/p99/p99.9 \(fmt(percentile(offBatches, 0.5))) / \(fmt(percentile(offBatches, 0.99))) / \(fmt(percentile(offBatches, 0.999))) ns"
    )
    print(
        "    ratio on/off (median of rounds): wall \(fmt(median(wallRatios))) [\(wallRatios.map { fmt($0) }.joined(separator: " "))]"
    )
    print(
        "                                     per CPU-s \(fmt(median(cpuRatios))) [\(cpuRatios.map { fmt($0) }.joined(separator: " "))]"
    )
    return [
        "readsPerSecondOn": median(on.map(\.readsPerSecond)), "readsPerSecondOff": median(off.map(\.readsPerSecond)),
        "onOverOffWall": median(wallRatios), "onOverOffPerCPUSecond": median(cpuRatios),
        "readP99NsOn": percentile(onBatches, 0.99), "readP99NsOff": percentile(offBatches, 0.99),
    ]
}

let coldStartFigures = coldStart()
let publishingFigures = readsWhilePublishing()
if let path = config.jsonPath {
    let document: [String: Any] = [
        "benchmark": "halyard-bench-cache", "quick": quick, "rounds": rounds, "readerThreads": readerThreads,
        "coldStart": coldStartFigures.mapValues { $0.isFinite ? $0 : -1 },
        "readsWhilePublishing": publishingFigures.mapValues { $0.isFinite ? $0 : -1 },
    ]
    do {
        let data = try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys])
        try data.write(to: URL(fileURLWithPath: path))
        print("wrote \(path)")
    } catch {
        FileHandle.standardError.write(Data("could not write \(path): \(error)\n".utf8))
        exit(1)
    }
}
