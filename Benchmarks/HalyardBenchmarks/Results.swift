/// Everything one run measured; encoded as the `--json` file (schema in docs/benchmarks.md).
struct BenchReport: Codable {
    var schema = "halyard-bench/1"
    var date: String
    var elapsedSeconds: Double
    var machine: Machine
    var options: RunOptions
    var halyardImplementation: String
    var publisher: PublisherInfo
    var designs: [Design]
    var checksums: [Checksum]
    var singleThread: [Single]
    var allocations: [Allocation]
    var publishCosts: [PublishCost]
    var multiThread: [Multi]
    /// The target cell measured on its own in paired rounds (nil when not run).
    var target: Target?
    /// Reads while a real client polls the loopback control plane every 10 ms (nil when not run).
    var polling: Polling?
    /// Handle reads on 1 thread and on every core, same handles, paired rounds (nil when not run).
    var handleScaling: [HandleScaling]? = nil
    /// Literal keyed reads, the dictionary and handles at call sites in program order (nil when
    /// not run).
    var callSites: CallSites? = nil
    var verdicts: [Verdict]

    /// Per-thread cost of a handle holding pattern when every core reads the same handles,
    /// relative to one thread: CPU time per read (thread CPU clock, so other programs on a
    /// shared machine do not count) with `threads` readers over that with 1, per paired round.
    struct HandleScaling: Codable {
        var design: String
        var threads: Int
        var singleCPUNsPerRead: [Double]
        var allCPUNsPerRead: [Double]
        var cpuRatios: [Double]
        /// Median of ``cpuRatios``: the figure the verdict uses.
        var cpuRatio: Double
        /// The same from wall-clock throughput (1-thread reads/s x threads / all-thread reads/s);
        /// inflated whenever other programs hold cores.
        var wallRatio: Double
    }

    struct Machine: Codable {
        var cpuModel: String
        var cores: Int
        var kernel: String
    }

    struct RunOptions: Codable {
        var quick: Bool
        var threads: [Int]
        var durationSeconds: Double
        var rounds: Int
        var singleRounds: Int
        var publishRate: Int
        /// Control experiment: microseconds the baselines' publisher spins per wake-up (0 = none).
        var baselinePublishSpinMicroseconds: Double
        /// Control experiment: the baselines' publisher issues a membarrier per wake-up.
        var baselinePublishMembarrier: Bool
        var targetRounds: Int
        var seed: String
        var filters: [String]
    }

    struct PublisherInfo: Codable {
        var realtime: Bool
        var note: String
    }

    struct Design: Codable {
        var id: String
        var title: String
        var kind: String
        var publisherSwaps: Bool
        var bound: String
        var batch: Int
    }

    struct Checksum: Codable {
        var design: String
        var expected: Int
        var actual: Int
        var ok: Bool
    }

    struct Single: Codable {
        var design: String
        var bound: String
        var nsPerRead: Double
        var boundNsPerRead: Double
        var ratio: Double
        var ratioQ1: Double
        var ratioQ3: Double
        var readsPerPass: Int
        var ratios: [Double]
        /// The same from the reading thread's CPU time (CLOCK_THREAD_CPUTIME_ID) instead of wall
        /// time: a preemption by another program on a shared machine does not count.
        var cpuNsPerRead: Double? = nil
        var boundCPUNsPerRead: Double? = nil
        var cpuRatio: Double? = nil
        var cpuRatioQ1: Double? = nil
        var cpuRatioQ3: Double? = nil
    }

    struct Allocation: Codable {
        var probe: String
        var reads: Int
        var allocationsPerRead: Double
    }

    struct PublishCost: Codable {
        var design: String
        var publishes: Int
        var p50Microseconds: Double
        var p99Microseconds: Double
        var allocationsPerPublish: Double
    }

    struct Multi: Codable {
        var design: String
        var threads: Int
        var publisher: Bool
        var publisherSwaps: Bool
        var batch: Int
        var readsPerSecond: Double
        var readsPerSecondRounds: [Double]
        /// Median over rounds of (this design's reads/s) / (unsync.dict's reads/s in the same round).
        var throughputRatioToDict: Double
        var throughputRatioToDictRounds: [Double]
        var p50Ns: Double
        var p99Ns: Double
        var p999Ns: Double
        var batches: UInt64
        var publishesPerSecond: Double?
        var publishesPerSecondRounds: [Double]?
        var lateWakeups: Int?
        var maxPublisherLatenessMicroseconds: Double?
        /// Duration of one publish call (median and 99th percentile), when the publisher swaps.
        var publishP50Microseconds: Double?
        var publishP99Microseconds: Double?
    }

    /// The polling scenario: `halyard.bool.polling` (a client polling the loopback control plane
    /// every 10 ms, values changing every 100 ms, `identify` every 500 ms) against `halyard.bool`
    /// (offline, nothing published), paired by round.
    struct Polling: Codable {
        var pollIntervalMilliseconds: Int
        var seconds: Double
        var requestsPerSecond: Double
        var snapshotsPerSecond: Double
        var notModifiedPerSecond: Double
        var identifies: Int
        var cells: [PollingCell]
    }

    struct PollingCell: Codable {
        var threads: Int
        var pollingReadsPerSecond: Double
        var plainReadsPerSecond: Double
        /// Median over rounds of polling / plain reads per second in the same round.
        var throughputRatio: Double
        var throughputRatioRounds: [Double]
        var pollingP50Ns: Double
        var pollingP999Ns: Double
        var plainP50Ns: Double
        var plainP999Ns: Double
    }

    /// 64 readers + publisher, halyard.bool and unsync.dict in adjacent passes, order alternating.
    struct Target: Codable {
        var threads: Int
        var rounds: Int
        var durationSeconds: Double
        /// Per round: unsync.dict's reads/s times its single-thread ns per read, i.e. how many
        /// cores' worth of reading the harness got while other programs shared the machine.
        var dictCoresUsed: [Double]
        /// Rounds (0-based) in which that was at least 70 % of the machine's cores.
        var quietRounds: [Int]
        /// Per round: halyard.bool reads/s divided by unsync.dict reads/s.
        var throughputRatios: [Double]
        /// Per round: halyard.bool p99.9 divided by unsync.dict p99.9.
        var p999Ratios: [Double]
        var halyardReadsPerSecond: [Double]
        var dictReadsPerSecond: [Double]
        var halyardP999Ns: [Double]
        var dictP999Ns: [Double]
        /// Control, per round: halyard.bool reading one client while the publisher publishes
        /// into another (only the process-wide side effects of publishing reach the readers).
        var elsewhereReadsPerSecond: [Double]
        var elsewhereP999Ns: [Double]
        /// Pooled over all rounds.
        var halyardP999PooledNs: Double
        var dictP999PooledNs: Double
        var halyardPublishesPerSecond: [Double]
        var halyardLateWakeups: Int
        var halyardPublishP50Microseconds: Double
        var halyardPublishP99Microseconds: Double
    }

    struct Verdict: Codable {
        /// "pass", "fail", "skip" (not measured in this run), or "info" (reported, not judged).
        var result: String
        var target: String
        var measured: String
    }
}
