/// Command-line options of `halyard-bench`.
struct Options: Sendable {
    var quick = false
    var threads: [Int] = [1, 2, 4, 16, 64]
    /// Seconds per multi-thread pass.
    var duration = 0.5
    /// Multi-thread rounds per (design, threads, publisher) cell; the cell reports the median.
    var rounds = 4
    /// Paired single-thread rounds per design.
    var singleRounds = 61
    /// Approximate length of one single-thread pass, in seconds.
    var singlePass = 0.004
    var filters: [String] = []
    var jsonPath: String?
    var svgPath: String?
    var rate = 1000
    var seed: UInt64 = 0x4841_4C59_4152_4421  // "HALYARD!"
    var skipMulti = false
    /// Extra paired rounds of the target cell (64 readers + publisher, halyard.bool vs unsync.dict).
    var targetRounds = 10
    /// Control experiment: the baselines' publisher spins this long per wake-up (default 0).
    var baselinePublisherSpinMicroseconds = 0.0
    /// Control experiment: the baselines' publisher issues membarrier(PRIVATE_EXPEDITED).
    var baselinePublisherMembarrier = false
    var batchOverride: Int?
    var list = false
    /// The polling scenario: reads while a client polls the loopback control plane every 10 ms.
    var polling = true

    static let usage = """
        usage: halyard-bench [options]
          --quick              threads 1,4,64, 0.15 s passes, 2 rounds, 15 single-thread rounds
          --threads LIST       reader thread counts, e.g. 1,2,4,16,64 (default)
          --duration SECONDS   length of each multi-thread pass (default 0.5)
          --rounds N           multi-thread rounds per cell, median reported (default 4)
          --single-rounds N    paired single-thread rounds per design (default 61)
          --filter LIST        comma-separated substrings of design ids to run (the two lower
                               bounds always run: every ratio needs them)
          --skip-multi         only checksums, allocations, publish cost and single-thread ratios
          --target-rounds N    paired rounds of the target cell, 64 readers + publisher,
                               halyard.bool against unsync.dict (default 10, quick 4; 0 = off)
          --rate N             publishes per second (default 1000)
          --baseline-publish-spin US
                               control experiment: the unsynchronized baselines' publisher
                               spins US microseconds per wake-up, standing in for the CPU a
                               real publish takes (default 0: it only wakes up)
          --baseline-publish-membarrier
                               control experiment: the baselines' publisher issues
                               membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) per wake-up, as
                               Halyard's reclamation does once per publish
          --batch N            reads per timed batch, overriding the automatic choice
          --seed N             seed of the access sequence and values
          --json FILE          write the results as JSON (schema in docs/benchmarks.md)
          --svg FILE           write the p99.9 and throughput chart as SVG
          --no-polling         skip the scenario "reads while the client polls a loopback
                               server every 10 ms" (it needs python3)
          --list               list the designs and exit
        """

    /// Parses `arguments` (without the program name); returns nil after printing usage.
    static func parse(_ arguments: [String]) -> Options? {
        var o = Options()
        var explicitThreads = false, explicitDuration = false, explicitRounds = false
        var explicitSingle = false, explicitTarget = false
        var i = 0
        func value() -> String? {
            i += 1
            return i < arguments.count ? arguments[i] : nil
        }
        while i < arguments.count {
            let a = arguments[i]
            switch a {
            case "--quick": o.quick = true
            case "--threads":
                guard let v = value() else { return nil }
                let list = v.split(separator: ",").compactMap { Int($0) }
                guard !list.isEmpty, list.allSatisfy({ $0 > 0 && $0 <= 1024 }) else { return nil }
                o.threads = list
                explicitThreads = true
            case "--duration":
                guard let v = value().flatMap(Double.init), v > 0 else { return nil }
                o.duration = v
                explicitDuration = true
            case "--rounds":
                guard let v = value().flatMap({ Int($0) }), v > 0 else { return nil }
                o.rounds = v
                explicitRounds = true
            case "--single-rounds":
                guard let v = value().flatMap({ Int($0) }), v > 0 else { return nil }
                o.singleRounds = v
                explicitSingle = true
            case "--filter":
                guard let v = value() else { return nil }
                o.filters = v.split(separator: ",").map(String.init)
            case "--skip-multi": o.skipMulti = true
            case "--target-rounds":
                guard let v = value().flatMap({ Int($0) }), v >= 0 else { return nil }
                o.targetRounds = v
                explicitTarget = true
            case "--rate":
                guard let v = value().flatMap({ Int($0) }), v > 0, v <= 100_000 else { return nil }
                o.rate = v
            case "--baseline-publish-spin":
                guard let v = value().flatMap(Double.init), v >= 0, v < 1000 else { return nil }
                o.baselinePublisherSpinMicroseconds = v
            case "--baseline-publish-membarrier": o.baselinePublisherMembarrier = true
            case "--batch":
                guard let v = value().flatMap({ Int($0) }), v > 0 else { return nil }
                o.batchOverride = v
            case "--seed":
                guard let v = value().flatMap({ UInt64($0) }) else { return nil }
                o.seed = v
            case "--json":
                guard let v = value() else { return nil }
                o.jsonPath = v
            case "--svg":
                guard let v = value() else { return nil }
                o.svgPath = v
            case "--list": o.list = true
            case "--no-polling": o.polling = false
            default:
                return nil
            }
            i += 1
        }
        if o.quick {
            if !explicitThreads { o.threads = [1, 4, 64] }
            if !explicitDuration { o.duration = 0.15 }
            if !explicitRounds { o.rounds = 2 }
            if !explicitSingle { o.singleRounds = 15 }
            if !explicitTarget { o.targetRounds = 4 }
        }
        return o
    }

    func selects(_ id: String) -> Bool {
        filters.isEmpty || filters.contains { id.contains($0) }
    }
}
