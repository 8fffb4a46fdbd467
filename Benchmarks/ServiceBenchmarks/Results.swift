/// Everything one run measured; encoded as the `--json` file (the keys docs/benchmarks-service.md
/// and docs/benchmarks-service.json show). A section that did not run has no key.
struct ServiceReport: Codable {
    /// Always `halyard-bench-service`.
    var benchmark = "halyard-bench-service"
    /// Whether the run was `--quick`.
    var quick: Bool
    /// When the report was written (ISO 8601).
    var date: String
    /// The figures, by section.
    var results: ServiceResults
}

/// The figures of each section, under the key it has always had in the JSON file.
struct ServiceResults: Codable {
    /// Section 1: warm latency of `flags(for:)` + 10 reads.
    var warm: WarmLatency?
    /// Section 1: the warm figures as ratios to the pre-fitted path.
    var warmRatios: WarmRatios?
    /// Section 1: keyed reads on a held view against FlagClient's.
    var viewRead: ViewRead?
    /// Section 2: 64 tasks against 1.
    var scaling: Scaling?
    /// Section 3: control-plane requests and latency per design at steady state.
    var steadyState: SteadyState?
    /// Section 4: memory per cached context.
    var memory: Memory?
    /// Section 5: cold single-flight.
    var singleFlight: SingleFlight?
    /// Section 6: the loopback Python control plane (nil with `--skip-loopback`).
    var loopback: Loopback?
    /// Section 7: the brownout.
    var brownout: Brownout?
    /// Section 8: the `Retry-After: 0` storm.
    var storm: Storm?
    /// Section 9: detail reads from every core.
    var sharedDetails: SharedDetails?
    /// Section 10: the warm path with a stream connected, and one event's wave.
    var streamWarmPath: StreamWarmPath?
    /// Every verdict of the run, in the order printed.
    var verdicts: [Verdict] = []
}

/// One pass/fail line of the report.
struct Verdict: Codable {
    /// What is checked, with its bound.
    var name: String
    /// Whether the bound held.
    var pass: Bool
    /// The figure measured.
    var detail: String
}

/// Section 1: `flags(for:)` + 10 reads on a warm service, one task, in microseconds.
struct WarmLatency: Codable {
    /// Median with an `EvaluationContext` (fitting included).
    var p50us: Double
    /// 99th percentile with an `EvaluationContext`.
    var p99us: Double
    /// Median with a `FittedContext` (fitted by the caller).
    var fittedP50us: Double
    /// 99th percentile with a `FittedContext`.
    var fittedP99us: Double
    /// Requests timed per path.
    var samples: Int
}

/// Section 1: the `EvaluationContext` path over the pre-fitted one, same run.
struct WarmRatios: Codable {
    /// Ratio of the medians.
    var p50: Double
    /// Ratio of the 99th percentiles.
    var p99: Double
}

/// Section 1: `ContextFlags.bool` against `FlagClient.bool`, ns per read, paired passes.
struct ViewRead: Codable {
    /// Median ns per read on the held view.
    var viewNs: Double
    /// Median ns per read on the client.
    var clientNs: Double
    /// Median of the paired ratios view / client.
    var ratio: Double
}

/// Section 2: warm requests with 64 tasks against 1 task.
struct Scaling: Codable {
    /// Requests per wall second, 1 task (median over rounds).
    var oneTask: Double
    /// Requests per wall second, 64 tasks (median over rounds).
    var sixtyFourTasks: Double
    /// Median of the paired ratios 64 tasks / 1 task (wall).
    var ratio: Double
    /// The paired wall ratios, sorted.
    var ratios: [Double]
    /// Process CPU µs per request, 1 task (median).
    var cpuPerRequestOneTaskUs: Double
    /// Process CPU µs per request, 64 tasks (median).
    var cpuPerRequestSixtyFourTasksUs: Double
    /// Median of the paired CPU-cost ratios 64 tasks / 1 task.
    var cpuCostRatio: Double
    /// The machine's 1-minute load average at the end of the section.
    var loadAverage: Double
    /// Cores busy during a 1-task pass (requests/s x CPU per request).
    var coresBusyOneTask: Double
    /// Cores busy during a 64-task pass.
    var coresBusySixtyFourTasks: Double
    /// Cores the control (64 tasks fitting contexts, nothing shared) got.
    var coresBusyControl: Double
}

/// One design's steady-state figures (section 3) or loopback figures (section 6).
struct LoadFigures: Codable {
    /// Control-plane requests per 1,000 requests.
    var per1000: Double
    /// Median request latency, µs (cold requests included).
    var p50us: Double
    /// 99th percentile request latency, µs.
    var p99us: Double
}

/// Section 3: each design at steady state on the in-memory plane.
struct SteadyState: Codable {
    /// FlagService with a 10,000-context, 256 MiB cache.
    var halyard: LoadFigures
    /// The same with frequency admission (TinyLFU).
    var halyardTinyLFU: LoadFigures
    /// The same with the default 64 MiB byte bound.
    var halyard64MiB: LoadFigures
    /// The per-(flag, context) cache.
    var flagContextCache: LoadFigures
    /// One request per read.
    var remotePerRead: LoadFigures

    /// The JSON keys: the design names the report prints.
    enum CodingKeys: String, CodingKey {
        /// `halyard`.
        case halyard
        /// `halyard-tinylfu`.
        case halyardTinyLFU = "halyard-tinylfu"
        /// `halyard-64MiB`.
        case halyard64MiB = "halyard-64MiB"
        /// `flag-ctx-cache`.
        case flagContextCache = "flag-ctx-cache"
        /// `remote-per-read`.
        case remotePerRead = "remote-per-read"
    }
}

/// Section 6: each design against the loopback Python control plane.
struct Loopback: Codable {
    /// FlagService.
    var halyard: LoadFigures
    /// The per-(flag, context) cache.
    var flagContextCache: LoadFigures
    /// One request per read.
    var remotePerRead: LoadFigures

    /// The JSON keys: the design names the report prints.
    enum CodingKeys: String, CodingKey {
        /// `halyard`.
        case halyard
        /// `flag-ctx-cache`.
        case flagContextCache = "flag-ctx-cache"
        /// `remote-per-read`.
        case remotePerRead = "remote-per-read"
    }
}

/// Section 4: bytes per cached 64-flag context, shared details (the default).
struct Memory: Codable {
    /// malloc's figure (mallinfo2) per context.
    var measuredBytesPerContext: Double
    /// What the cache's bound counts per context.
    var estimatedBytesPerContext: Double
    /// The cache's estimate plus what the service estimates it holds beside it, per context.
    var estimatedTotalBytesPerContext: Double
}

/// Section 5: 10,000 concurrent `flags(for:)` for one cold context.
struct SingleFlight: Codable {
    /// Control-plane requests sent.
    var requests: Int
    /// Requests served values.
    var served: Int
    /// Requests that waited on the flight.
    var coldWaits: Int
}

/// Section 7: a plane at 2 s latency, Halyard first.
struct Brownout: Codable {
    /// Share of hot requests served values.
    var hotServedShare: Double
    /// Hot requests counted.
    var hotAsked: Int
    /// Cold requests served within `coldFetchTimeout`.
    var coldServedInTime: Int
    /// Cold requests made.
    var coldAsked: Int
    /// OFREP requests sent.
    var requestsSent: Int
    /// Fetches dropped because every waiter had gone.
    var dropped: Int
    /// Fetches shed by the queue bound.
    var shed: Int
    /// Simulated minutes.
    var minutes: Int
    /// The same brownout for the per-(flag, context) cache (set once that half has run).
    var flagContextCache: FlagContextCacheBrownout? = nil
    /// The second part: hot requests after an outage (set once it has run).
    var recovery: Recovery? = nil

    /// Section 7 for the per-(flag, context) cache.
    struct FlagContextCacheBrownout: Codable {
        /// Share of hot requests served values (all 10 reads at once).
        var hotServedShare: Double
        /// Hot requests counted.
        var hotAsked: Int
        /// Cold requests served at once.
        var coldServedAtOnce: Int
        /// Cold requests made.
        var coldAsked: Int
        /// OFREP requests sent.
        var requestsSent: Int
    }
}

/// Section 7, second part: hot requests through an outage of the plane and after it.
struct Recovery: Codable {
    /// One design through the outage.
    struct Run: Codable {
        /// The design and its options.
        var design: String
        /// Share of hot requests served values during the outage.
        var servedDuringOutage: Double
        /// Simulated seconds from the plane's recovery to the first tick whose hot requests
        /// were 99 % served values; nil when not within the window watched.
        var secondsTo99: Double?
        /// Whether every later tick of the window stayed at 99 % or more.
        var stayed: Bool
        /// Share of hot requests served values in the whole window after the recovery.
        var servedAfter: Double
        /// OFREP requests sent during the outage.
        var requestsDuringOutage: Int
    }
    /// The outage's length in simulated seconds.
    var outageSeconds: Int
    /// Halyard with the default and a short `maxStaleness`, then the per-(flag, context) cache.
    var runs: [Run]
}

/// Section 8: 100 contexts polled through a `503` + `Retry-After: 0` storm.
struct Storm: Codable {
    /// OFREP requests sent per context.
    var requestsPerContext: Double
    /// The most the backoff's shortest draws allow per context.
    var bound: Double
    /// Simulated seconds.
    var seconds: Int
}

/// Section 9: detail reads on shared details over own details, per round.
struct SharedDetails: Codable {
    /// Reading threads (one per core, at least 2).
    var threads: Int
    /// Copies of each shared result (`DetailInterner.defaultStripes`).
    var stripes: Int
    /// Striped shared details / own details, per round.
    var stripedToOwn: [Double]
    /// One copy of each result / own details, per round.
    var oneCopyToOwn: [Double]
}

/// Section 10: the warm path with a stream connected against polling, and one event's wave.
struct StreamWarmPath: Codable {
    /// Contexts held by each service (all used before the event).
    var held: Int
    /// Whether the streaming service's stream connected (the ratios mean nothing otherwise).
    var connected: Bool
    /// Requests timed per path and service.
    var samples: Int
    /// `flags(for: EvaluationContext)` + 10 reads with the stream connected, µs.
    var streamP50us: Double
    var streamP99us: Double
    /// The same on the polling service, µs.
    var pollingP50us: Double
    var pollingP99us: Double
    /// With / without a stream, fitting path and pre-fitted path.
    var ratioP50: Double
    var ratioP99: Double
    var fittedRatioP50: Double
    var fittedRatioP99: Double
    /// Uses held for the next wave when the event came, and their estimated bytes.
    var usesHeld: Int
    var useBytes: Int
    /// From the event's delivery to its wave queued (every shard's uses taken and merged), ms.
    var waveQueuedMs: Double
    /// The warm path while the wave's refreshes run, µs.
    var duringWaveP50us: Double
    var duringWaveP99us: Double
}
