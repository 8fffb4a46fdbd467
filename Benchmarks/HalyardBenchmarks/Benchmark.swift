#if os(Linux)
    import BenchmarkSupport
    import CMallocCounter
    import Foundation
    import Glibc
    import Halyard
#endif

@main
struct HalyardBenchmark {
    static func main() {
        #if os(Linux)
            let arguments = CommandLine.arguments.dropFirst()
            if arguments.contains("--help") || arguments.contains("-h") {
                print(Options.usage)
                return
            }
            guard let options = Options.parse(Array(arguments)) else {
                FileHandle.standardError.write(Data((Options.usage + "\n").utf8))
                exit(2)
            }
            do {
                try Bench(options).run()
            } catch {
                progress("halyard-bench: \(error)")
                exit(1)
            }
        #else
            print("halyard-bench runs on Linux only (it uses clock_nanosleep, SCHED_FIFO and malloc interposition).")
        #endif
    }
}

#if os(Linux)
    /// A line of progress on stderr.
    func progress(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// One benchmark run: builds the designs, runs the phases, reports.
    final class Bench {
        let options: Options
        let workload: Workload
        let sequence: SequenceBuffer
        var runners: [DesignRunner] = []
        /// The target cell's control design (not in the matrix).
        let publishElsewhere: DesignRunner
        var batches: [String: Int] = [:]
        var calibratedNs: [String: Double] = [:]
        let started = halyard_now_ns()

        init(_ options: Options) throws {
            self.options = options
            workload = Workload(seed: options.seed)
            sequence = SequenceBuffer(workload.sequence)
            let w = workload
            func info(_ id: String, _ kind: DesignInfo.Kind, _ title: String) -> DesignInfo {
                DesignInfo(
                    id: id, title: title, kind: kind, publisherSwaps: kind != .bound,
                    boundID: id.hasPrefix("halyard.handle") || id.hasSuffix("array")
                        ? "unsync.array" : id.hasSuffix("runtime-keys") ? "unsync.dict.runtime-keys" : "unsync.dict")
            }
            // unsync.dict and halyard.bool first and adjacent: the multi-thread rounds pair them.
            let all: [DesignRunner] = [
                DesignRunner(
                    info("unsync.dict", .bound, "immutable [String: Bool], no synchronization"), UnsyncDictionary(w),
                    sequence),
                DesignRunner(
                    info("halyard.bool", .halyard, "flags.bool(key, default:)"), try HalyardKeyedBool(w), sequence),
                DesignRunner(
                    info("halyard.bool.literal", .halyard, "flags.bool(key, default:), literal keys, no harness ARC"),
                    try HalyardKeyedBoolLiteral(w), sequence),
                DesignRunner(
                    info("halyard.detail", .halyard, "flags.boolDetail(key, default:).value"), try HalyardDetailBool(w),
                    sequence),
                DesignRunner(
                    info("halyard.detail.json", .halyard, "flags.detail(key, default: .null).value"),
                    try HalyardDetailJSON(w), sequence),
                DesignRunner(
                    info("halyard.detail.int", .halyard, "flags.intDetail(key, default: 0).value (Int flags)"),
                    try HalyardDetailInt(w), sequence),
                DesignRunner(
                    info("unsync.dict.runtime-keys", .bound, "immutable [String: Bool], keys built at run time"),
                    UnsyncDictionaryRuntimeKeys(w), sequence),
                DesignRunner(
                    info("halyard.bool.runtime-keys", .halyard, "flags.bool(key, default:), keys built at run time"),
                    try HalyardKeyedBoolRuntimeKeys(w), sequence),
                DesignRunner(
                    info("halyard.handle", .halyard, "handles[i].value (FlagHandle<Bool> in an array)"),
                    try HalyardHandleArray(w), sequence),
                DesignRunner(
                    info("halyard.handle.class-let", .halyard, "object.enabled.value (handle in a class let)"),
                    try HalyardHandleClassLet(w), sequence),
                DesignRunner(
                    info("halyard.handle.global", .halyard, "globalHandles[i].value (handles in a global let)"),
                    HalyardHandleGlobal(w), sequence),
                DesignRunner(
                    info("halyard.handle.struct", .halyard, "features[i].enabled.value (handle in a struct)"),
                    try HalyardHandleStruct(w), sequence),
                DesignRunner(
                    info("halyard.handle.raw", .halyard, "buffer[i].value (raw buffer: lower bound)"),
                    try HalyardHandleRawBuffer(w), sequence),
                DesignRunner(
                    info("unsync.array", .bound, "immutable [Bool] by index, no synchronization"), UnsyncArray(w),
                    sequence),
                // Exposure recording on, already recorded: paired with the same read with it off.
                DesignRunner(
                    DesignInfo(
                        id: "halyard.bool.exposed", title: "flags.bool, exposures on, already recorded",
                        kind: .halyard, publisherSwaps: true, boundID: "halyard.bool"),
                    HalyardKeyedBoolExposed(w), sequence),
                DesignRunner(
                    DesignInfo(
                        id: "halyard.handle.exposed", title: "handle.value, exposures on, already recorded",
                        kind: .halyard, publisherSwaps: true, boundID: "halyard.handle"),
                    HalyardHandleBoolExposed(w), sequence),
                DesignRunner(info("nslock.dict", .peer, "NSLock + [String: Bool]"), NSLockDictionary(w), sequence),
                DesignRunner(
                    info("dispatch.concurrent", .peer, "concurrent DispatchQueue: sync reads, sync barrier writes"),
                    DispatchConcurrentDictionary(w), sequence),
                DesignRunner(
                    info("dispatch.serial", .peer, "serial DispatchQueue: sync reads and writes"),
                    DispatchSerialDictionary(w), sequence),
                DesignRunner(
                    info("rwlock.dict", .peer, "pthread_rwlock_t + [String: Bool]"), RWLockDictionary(w), sequence),
                DesignRunner(
                    info("mutex.dict", .peer, "Synchronization.Mutex + [String: Bool]"), MutexDictionary(w), sequence),
                DesignRunner(
                    info("mutex.snapshot-ref", .peer, "lock (NSLock), copy snapshot reference, unlock, look up"),
                    LockedSnapshotReference(w), sequence),
            ]
            publishElsewhere = DesignRunner(
                DesignInfo(
                    id: "halyard.bool.publish-elsewhere", title: "flags.bool on one client, publishes into another",
                    kind: .halyard, publisherSwaps: true, boundID: "unsync.dict"),
                try HalyardBoolPublishElsewhere(w), sequence)
            runners = all.filter { $0.info.kind == .bound || options.selects($0.info.id) }
        }

        func run() throws {
            if options.list {
                for r in runners {
                    print("\(r.info.id.padding(toLength: 20, withPad: " ", startingAt: 0)) \(r.info.title)")
                }
                return
            }
            progress("halyard-bench: \(runners.count) designs, Halyard implementation: \(halyardImplementation)")
            let checksums = verifyChecksums()
            let allocations = try measureAllocations()
            let publishCosts = measurePublishCost()
            calibrate()
            let single = measureSingleThread()
            let callSites = try measureCallSites()
            var multi: [BenchReport.Multi] = []
            var realtimeError: Int32?
            var target: BenchReport.Target?
            if !options.skipMulti {
                (multi, realtimeError) = measureMultiThread()
                if options.targetRounds > 0 { target = measureTarget() }
            }
            let scaling = options.skipMulti ? nil : measureHandleScaling()
            let polling =
                options.polling && !options.skipMulti && options.selects("halyard.bool") ? measurePolling() : nil
            var report = makeReport(
                checksums: checksums, allocations: allocations, publishCosts: publishCosts, single: single,
                multi: multi, target: target, realtimeError: realtimeError)
            report.polling = polling
            report.callSites = callSites
            report.handleScaling = scaling
            report.verdicts = computeVerdicts(report)
            print(renderTable(report))
            if let path = options.jsonPath {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                encoder.nonConformingFloatEncodingStrategy = .convertToString(
                    positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
                try encoder.encode(report).write(to: URL(fileURLWithPath: path))
                progress("wrote \(path)")
            }
            if let path = options.svgPath {
                try Data(renderSVG(report).utf8).write(to: URL(fileURLWithPath: path))
                progress("wrote \(path)")
            }
        }

        // MARK: Phase 1: every design must compute the same answers

        func verifyChecksums() -> [BenchReport.Checksum] {
            let count = Workload.sequenceLength
            let expected = workload.expectedChecksum(start: 0, count: count)
            return runners.map { r in
                let actual = r.timed(0, count).checksum
                if actual != expected {
                    progress(
                        "WARNING: \(r.info.id) checksum \(actual) != expected \(expected): it does not read the same values"
                    )
                }
                return BenchReport.Checksum(
                    design: r.info.id, expected: expected, actual: actual, ok: actual == expected)
            }
        }

        // MARK: Phase 2: allocations per read, one thread, around a batch of reads

        func measureAllocations() throws -> [BenchReport.Allocation] {
            // Prove the interposed counter is live before trusting a zero.
            let before = halyard_malloc_count()
            let probe = [Int](repeating: 7, count: 1000 + Int(halyard_now_ns() & 1))
            _ = blackHole(probe.count)
            if halyard_malloc_count() == before {
                progress("WARNING: the malloc counter did not see an allocation; allocation figures are not valid")
            }
            let reads = 100_000
            var out: [BenchReport.Allocation] = []
            for r in runners {
                _ = r.timed(0, 1000)
                let c0 = halyard_malloc_count()
                _ = r.timed(0, reads)
                let c1 = halyard_malloc_count()
                out.append(.init(probe: r.info.id, reads: reads, allocationsPerRead: Double(c1 - c0) / Double(reads)))
            }
            if options.selects("halyard") {
                for (id, read) in try HalyardAllocationProbes().probes {
                    var sum = 0
                    for _ in 0..<1000 { sum &+= read() }
                    let c0 = halyard_malloc_count()
                    for _ in 0..<reads { sum &+= read() }
                    let c1 = halyard_malloc_count()
                    _ = blackHole(sum)
                    out.append(.init(probe: id, reads: reads, allocationsPerRead: Double(c1 - c0) / Double(reads)))
                }
            }
            progress("allocations measured")
            return out
        }

        // MARK: Phase 2b: what one publish costs, alone (no readers)

        func measurePublishCost() -> [BenchReport.PublishCost] {
            let count = 300
            var out: [BenchReport.PublishCost] = []
            for r in runners where r.info.publisherSwaps {
                for g in 1...20 { r.publish(g) }
                var durations: [Double] = []
                durations.reserveCapacity(count)
                let c0 = halyard_malloc_count()
                for g in 0..<count {
                    let t0 = halyard_now_ns()
                    r.publish(g)
                    durations.append(Double(halyard_now_ns() - t0) / 1000)
                }
                let c1 = halyard_malloc_count()
                r.publish(0)  // back to value set 0 for the passes that follow
                out.append(
                    .init(
                        design: r.info.id, publishes: count, p50Microseconds: median(durations),
                        p99Microseconds: percentile(durations, 0.99),
                        allocationsPerPublish: Double(c1 - c0) / Double(count)))
            }
            progress("publish cost measured")
            return out
        }

        // MARK: Phase 3: single-thread paired ratios

        func calibrate() {
            for r in runners {
                _ = r.timed(0, 20_000)
                var best = Double.infinity
                for k in 0..<5 {
                    let t = r.timed(k * 101, 20_000)
                    best = min(best, Double(t.ns) / 20_000)
                }
                calibratedNs[r.info.id] = best
                // Equal batch *time* (~400 ns) for every design: a reader preempted mid-batch smears
                // its wait over the whole batch, and the share of batches that are preempted is
                // (preemptions per second) x (batch time). Equal batch times give every design the
                // same share, so their tails compare fairly; ~400 ns keeps that share well under
                // 0.1 % at 64 readers with the publisher on 2 cores.
                batches[r.info.id] = options.batchOverride ?? min(max(Int((400 / best).rounded()), 4), 64)
            }
        }

        func readsPerPass(_ id: String) -> Int {
            let ns = max(calibratedNs[id] ?? 10, 0.3)
            return min(max(Int(options.singlePass * 1e9 / ns), 2_000), 4_000_000)
        }

        func measureSingleThread() -> [BenchReport.Single] {
            var out: [BenchReport.Single] = []
            let byID = Dictionary(uniqueKeysWithValues: runners.map { ($0.info.id, $0) })
            var pairs: [(DesignRunner, DesignRunner)] = runners.filter { $0.info.kind != .bound }.compactMap {
                guard let bound = byID[$0.info.boundID] else { return nil }  // its bound was filtered out
                return ($0, bound)
            }
            // The array bound against the dictionary bound, for reference.
            pairs.append((byID["unsync.array"]!, byID["unsync.dict"]!))
            for (n, (design, bound)) in pairs.enumerated() {
                let nA = readsPerPass(design.info.id)
                let nB = readsPerPass(bound.info.id)
                var ratios: [Double] = [], dNs: [Double] = [], bNs: [Double] = []
                var cpuRatios: [Double] = [], dCPU: [Double] = [], bCPU: [Double] = []
                for round in 0..<options.singleRounds {
                    let start = round &* 131
                    func one(_ r: DesignRunner, _ count: Int) -> (wall: Double, cpu: Double) {
                        let t = r.timed(start, count)
                        return (Double(t.ns) / Double(count), Double(t.cpuNs) / Double(count))
                    }
                    // A B in even rounds, B A in odd rounds, so a drift in machine speed cancels.
                    let a: (wall: Double, cpu: Double), b: (wall: Double, cpu: Double)
                    if round % 2 == 0 {
                        a = one(design, nA)
                        b = one(bound, nB)
                    } else {
                        b = one(bound, nB)
                        a = one(design, nA)
                    }
                    dNs.append(a.wall)
                    bNs.append(b.wall)
                    ratios.append(a.wall / b.wall)
                    dCPU.append(a.cpu)
                    bCPU.append(b.cpu)
                    cpuRatios.append(a.cpu / b.cpu)
                }
                out.append(
                    .init(
                        design: design.info.id, bound: bound.info.id, nsPerRead: median(dNs),
                        boundNsPerRead: median(bNs),
                        ratio: median(ratios), ratioQ1: percentile(ratios, 0.25), ratioQ3: percentile(ratios, 0.75),
                        readsPerPass: nA, ratios: ratios, cpuNsPerRead: median(dCPU), boundCPUNsPerRead: median(bCPU),
                        cpuRatio: median(cpuRatios), cpuRatioQ1: percentile(cpuRatios, 0.25),
                        cpuRatioQ3: percentile(cpuRatios, 0.75)))
                progress(
                    "[single \(n + 1)/\(pairs.count)] \(design.info.id): \(fmt(significant: median(dNs))) ns/read, "
                        + "\(fmt(significant: median(ratios)))x \(bound.info.id)")
            }
            return out
        }

        // MARK: Phase 4: reader threads, with and without the publisher

        func measureMultiThread() -> ([BenchReport.Multi], Int32) {
            var out: [BenchReport.Multi] = []
            var realtimeError: Int32 = 0
            var warned = false
            let durationNs = UInt64(options.duration * 1e9)
            let baseline = BaselinePublisher(
                spinNs: UInt64(options.baselinePublisherSpinMicroseconds * 1000),
                membarrier: options.baselinePublisherMembarrier)
            let cells = options.threads.flatMap { t in [(t, false), (t, true)] }
            let total = cells.count * runners.count * options.rounds
            var done = 0
            for (threads, publisher) in cells {
                var results: [String: [PassResult]] = [:]
                for round in 0..<options.rounds {
                    // Forward in even rounds, backward in odd ones: neighbours (unsync.dict and
                    // halyard.bool come first) stay adjacent and swap which runs first.
                    let order = round % 2 == 0 ? runners : runners.reversed()
                    for r in order {
                        let id = r.info.id
                        let result = runPass(
                            r, threads: threads, publisher: publisher, rate: options.rate, batch: batches[id]!,
                            durationNs: durationNs, baseline: baseline)
                        if publisher, result.realtimeError != 0 {
                            realtimeError = result.realtimeError
                            if !warned {
                                warned = true
                                progress(
                                    "WARNING: SCHED_FIFO refused (errno \(result.realtimeError)): the publisher runs at "
                                        + "normal priority and may not reach \(options.rate)/s")
                            }
                        }
                        results[id, default: []].append(result)
                        done += 1
                        let pubs = result.publishesPerSecond.map { ", \(fmt(significant: $0)) publishes/s" } ?? ""
                        progress(
                            "[\(done)/\(total)] threads=\(threads) publisher=\(publisher ? "on " : "off") "
                                + "\(id.padding(toLength: 19, withPad: " ", startingAt: 0)) "
                                + "\(fmt(significant: result.readsPerSecond / 1e6)) Mreads/s, "
                                + "p99.9 \(fmt(significant: result.histogram.quantileNs(0.999) ?? .nan)) ns\(pubs)")
                    }
                }
                let dictRounds = results["unsync.dict"]!.map(\.readsPerSecond)
                for r in runners {
                    let passes = results[r.info.id]!
                    let ratios = zip(passes, dictRounds).map { $0.readsPerSecond / $1 }
                    var histogram = Histogram()
                    var publishDurations = Histogram()
                    for p in passes {
                        histogram.merge(p.histogram)
                        publishDurations.merge(p.publishDurations)
                    }
                    let rps = passes.map(\.readsPerSecond)
                    let pps = publisher ? passes.map { $0.publishesPerSecond! } : nil
                    let lateWakeups: Int? = publisher ? passes.map(\.lateWakeups).reduce(0, +) : nil
                    let maxLateness: Double? = publisher ? Double(passes.map(\.maxLatenessNs).max() ?? 0) / 1000 : nil
                    let publishP50: Double? = publishDurations.quantileNs(0.5).map { $0 / 1000 }
                    let publishP99: Double? = publishDurations.quantileNs(0.99).map { $0 / 1000 }
                    let p50: Double = histogram.quantileNs(0.5) ?? .nan
                    let p99: Double = histogram.quantileNs(0.99) ?? .nan
                    let p999: Double = histogram.quantileNs(0.999) ?? .nan
                    let cell = BenchReport.Multi(
                        design: r.info.id, threads: threads, publisher: publisher,
                        publisherSwaps: publisher && r.info.publisherSwaps, batch: batches[r.info.id]!,
                        readsPerSecond: median(rps), readsPerSecondRounds: rps,
                        throughputRatioToDict: median(ratios), throughputRatioToDictRounds: ratios,
                        p50Ns: p50, p99Ns: p99, p999Ns: p999, batches: histogram.total,
                        publishesPerSecond: pps.map(median), publishesPerSecondRounds: pps,
                        lateWakeups: lateWakeups, maxPublisherLatenessMicroseconds: maxLateness,
                        publishP50Microseconds: publishP50, publishP99Microseconds: publishP99)
                    out.append(cell)
                }
            }
            return (out, realtimeError)
        }

        // MARK: Phase 4b: handle holding patterns, one thread vs every core

        /// Every handle holding pattern on 1 thread and on all cores (same handles, no publisher),
        /// alternating, `rounds` pairs. The per-thread cost ratio uses each pass's reader CPU time
        /// per read, so cores taken by other programs do not inflate it.
        func measureHandleScaling() -> [BenchReport.HandleScaling] {
            let cores = max(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), 1)
            let rounds = options.quick ? 3 : 7
            let durationNs = UInt64(options.duration * 1e9)
            var out: [BenchReport.HandleScaling] = []
            for r in runners where r.info.id.hasPrefix("halyard.handle") && !r.info.id.hasSuffix("exposed") {
                var single: [PassResult] = [], all: [PassResult] = []
                for round in 0..<rounds {
                    func pass(_ threads: Int) -> PassResult {
                        runPass(
                            r, threads: threads, publisher: false, rate: options.rate, batch: batches[r.info.id]!,
                            durationNs: durationNs, baseline: BaselinePublisher())
                    }
                    if round % 2 == 0 {
                        single.append(pass(1))
                        all.append(pass(cores))
                    } else {
                        all.append(pass(cores))
                        single.append(pass(1))
                    }
                }
                // Rounds where a pass read nothing (a starved thread) have no ratio.
                let cpuRatios = zip(all, single).map { $0.cpuNsPerRead / $1.cpuNsPerRead }.filter(\.isFinite)
                let wallRatios = zip(single, all).map { $0.readsPerSecond * Double(cores) / $1.readsPerSecond }
                    .filter { $0.isFinite && $0 > 0 }
                let row = BenchReport.HandleScaling(
                    design: r.info.id, threads: cores, singleCPUNsPerRead: single.map(\.cpuNsPerRead),
                    allCPUNsPerRead: all.map(\.cpuNsPerRead), cpuRatios: cpuRatios,
                    cpuRatio: cpuRatios.isEmpty ? .nan : median(cpuRatios),
                    wallRatio: wallRatios.isEmpty ? .nan : median(wallRatios))
                progress(
                    "[scaling] \(r.info.id): \(cores) threads vs 1, per-thread cost \(fmt(significant: row.cpuRatio))x (CPU time), "
                        + "\(fmt(significant: row.wallRatio))x (wall)")
                out.append(row)
            }
            return out
        }

        // MARK: Phase 5: the target cell in paired rounds

        /// 64 readers with the publisher, halyard.bool and unsync.dict in adjacent passes (order
        /// alternating), so that each ratio compares two passes a second apart: the load other
        /// programs put on a shared machine changes over seconds and would otherwise dominate.
        func measureTarget() -> BenchReport.Target? {
            guard let dict = runners.first(where: { $0.info.id == "unsync.dict" }),
                let halyard = runners.first(where: { $0.info.id == "halyard.bool" })
            else { return nil }
            let threads = 64
            let durationNs = UInt64(options.duration * 1e9)
            let baseline = BaselinePublisher(
                spinNs: UInt64(options.baselinePublisherSpinMicroseconds * 1000),
                membarrier: options.baselinePublisherMembarrier)
            var h: [PassResult] = [], d: [PassResult] = [], e: [PassResult] = []
            for round in 0..<options.targetRounds {
                func pass(_ r: DesignRunner, batch: Int) -> PassResult {
                    runPass(
                        r, threads: threads, publisher: true, rate: options.rate, batch: batch, durationNs: durationNs,
                        baseline: baseline)
                }
                let hb = batches[halyard.info.id]!
                if round % 2 == 0 {
                    h.append(pass(halyard, batch: hb))
                    e.append(pass(publishElsewhere, batch: hb))
                    d.append(pass(dict, batch: batches[dict.info.id]!))
                } else {
                    d.append(pass(dict, batch: batches[dict.info.id]!))
                    e.append(pass(publishElsewhere, batch: hb))
                    h.append(pass(halyard, batch: hb))
                }
                let tr = h[round].readsPerSecond / d[round].readsPerSecond
                let pr = (h[round].histogram.quantileNs(0.999) ?? .nan) / (d[round].histogram.quantileNs(0.999) ?? .nan)
                progress(
                    "[target \(round + 1)/\(options.targetRounds)] 64 readers + publisher: halyard.bool/unsync.dict throughput \(fmt(significant: tr))x, p99.9 \(fmt(significant: pr))x"
                )
            }
            var hPooled = Histogram(), dPooled = Histogram(), publishes = Histogram()
            for p in h {
                hPooled.merge(p.histogram)
                publishes.merge(p.publishDurations)
            }
            for p in d { dPooled.merge(p.histogram) }
            let hP = h.map { $0.histogram.quantileNs(0.999) ?? .nan }
            let dP = d.map { $0.histogram.quantileNs(0.999) ?? .nan }
            let eP = e.map { $0.histogram.quantileNs(0.999) ?? .nan }
            // How many cores' worth of work the dictionary's readers got in each round: its reads/s
            // times its best single-thread cost. On a shared machine this tells the rounds where the
            // harness had the machine (about `cores`) from those where other programs took a share.
            let dictNs = calibratedNs[dict.info.id] ?? .nan
            let cores = Double(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
            let dictCores = d.map { $0.readsPerSecond * dictNs / 1e9 }
            return BenchReport.Target(
                threads: threads, rounds: options.targetRounds, durationSeconds: options.duration,
                dictCoresUsed: dictCores,
                quietRounds: dictCores.indices.filter { dictCores[$0] >= 0.7 * cores },
                throughputRatios: zip(h, d).map { $0.readsPerSecond / $1.readsPerSecond },
                p999Ratios: zip(hP, dP).map { $0 / $1 },
                halyardReadsPerSecond: h.map(\.readsPerSecond), dictReadsPerSecond: d.map(\.readsPerSecond),
                halyardP999Ns: hP, dictP999Ns: dP,
                elsewhereReadsPerSecond: e.map(\.readsPerSecond), elsewhereP999Ns: eP,
                halyardP999PooledNs: hPooled.quantileNs(0.999) ?? .nan,
                dictP999PooledNs: dPooled.quantileNs(0.999) ?? .nan,
                halyardPublishesPerSecond: h.map { $0.publishesPerSecond ?? 0 },
                halyardLateWakeups: h.map(\.lateWakeups).reduce(0, +),
                halyardPublishP50Microseconds: (publishes.quantileNs(0.5) ?? .nan) / 1000,
                halyardPublishP99Microseconds: (publishes.quantileNs(0.99) ?? .nan) / 1000)
        }

        // MARK: Report

        func makeReport(
            checksums: [BenchReport.Checksum], allocations: [BenchReport.Allocation],
            publishCosts: [BenchReport.PublishCost], single: [BenchReport.Single],
            multi: [BenchReport.Multi], target: BenchReport.Target?, realtimeError: Int32?
        ) -> BenchReport {
            let realtime = realtimeError == 0
            let note: String
            switch realtimeError {
            case nil: note = "no multi-thread passes in this run"
            case 0?: note = "publisher on a SCHED_FIFO pthread, woken at absolute CLOCK_MONOTONIC deadlines"
            case let code?: note = "SCHED_FIFO refused (errno \(code)); publisher at normal priority"
            }
            let baselineNote =
                "; for unsync.dict and unsync.array the publisher only wakes up (nothing can be swapped without synchronization)"
                + (options.baselinePublisherSpinMicroseconds > 0
                    ? " and then spins \(options.baselinePublisherSpinMicroseconds) us (control experiment)" : "")
                + (options.baselinePublisherMembarrier
                    ? " and issues membarrier(PRIVATE_EXPEDITED) per wake-up (control experiment)" : "")
            var report = BenchReport(
                date: ISO8601DateFormatter().string(from: Date()),
                elapsedSeconds: Double(halyard_now_ns() - started) / 1e9,
                machine: machine(),
                options: .init(
                    quick: options.quick, threads: options.threads, durationSeconds: options.duration,
                    rounds: options.rounds, singleRounds: options.singleRounds, publishRate: options.rate,
                    baselinePublishSpinMicroseconds: options.baselinePublisherSpinMicroseconds,
                    baselinePublishMembarrier: options.baselinePublisherMembarrier,
                    targetRounds: options.targetRounds,
                    seed: String(options.seed), filters: options.filters),
                halyardImplementation: halyardImplementation,
                publisher: .init(realtime: realtime, note: note + (realtimeError == nil ? "" : baselineNote)),
                designs: runners.map {
                    .init(
                        id: $0.info.id, title: $0.info.title, kind: $0.info.kind.rawValue,
                        publisherSwaps: $0.info.publisherSwaps, bound: $0.info.boundID, batch: batches[$0.info.id] ?? 0)
                },
                checksums: checksums, singleThread: single, allocations: allocations, publishCosts: publishCosts,
                multiThread: multi, target: target, verdicts: [])
            report.verdicts = computeVerdicts(report)
            return report
        }

        func machine() -> BenchReport.Machine {
            var model = "unknown"
            if let cpuinfo = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
                let line = cpuinfo.split(separator: "\n").first(where: { $0.hasPrefix("model name") }),
                let colon = line.firstIndex(of: ":")
            {
                model = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            var name = utsname()
            uname(&name)
            let release = withUnsafeBytes(of: &name.release) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            return .init(cpuModel: model, cores: Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), kernel: "Linux \(release)")
        }
    }
#endif
