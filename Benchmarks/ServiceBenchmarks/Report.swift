import Foundation

extension ServiceBench {
    /// The report's first lines: the harness, the date and cores, the workload.
    func printHeader() {
        print("# halyard-bench-service\(quick ? " (quick)" : "")")
        print(
            "date: \(ISO8601DateFormatter().string(from: Date()))  cores: \(ProcessInfo.processInfo.activeProcessorCount)"
        )
        print(
            "workload: \(universe) contexts x 10 attributes, Zipf(1.1), 64 flags per context, 10 reads per request (4 routes)"
        )
    }

    /// One line per verdict: `PASS` or `FAIL`, the bound, the figure.
    func printVerdicts() {
        for verdict in verdicts { print("\(verdict.pass ? "PASS" : "FAIL")  \(verdict.name): \(verdict.detail)") }
    }

    /// The end of a run of one section alone (`--memory-only`, `--details-only`,
    /// `--brownout-only`): its verdict lines, no JSON.
    func finishAlone() -> Never {
        printVerdicts()
        exit(0)
    }

    /// The end of a full run: the verdicts, the run's length, and the JSON file when `--json`
    /// names one.
    func finish(_ results: ServiceResults) throws -> Never {
        print("\n## verdicts")
        printVerdicts()
        let elapsed = ContinuousClock.now - runStart
        print("run took \(elapsed.components.seconds) s")
        if let path = options.json {
            var results = results
            results.verdicts = verdicts
            let report = ServiceReport(
                quick: quick, date: ISO8601DateFormatter().string(from: Date()), results: results)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(report).write(to: URL(fileURLWithPath: path))
            print("wrote \(path)")
        }
        exit(0)
    }
}
