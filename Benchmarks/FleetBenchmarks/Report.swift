import BenchmarkSupport
import Foundation

extension FleetBench {
    /// The comparison table (with / without L2, measured in this run) and the verdicts.
    func finish(_ report: inout FleetReport) {
        guard let without = report.modes.first else { return }
        let with = report.modes.count > 1 ? report.modes[1] : nil
        let notUsed = with?.warnings.contains { $0.contains("not used yet") } ?? false
        report.l2Wired = with.map { $0.redisKeys > 0 && !notUsed } ?? false

        print("\n## summary (\(options.processes) processes; ratios against the run without L2)")
        if let with {
            print(
                "L2 wired in this build: \(report.l2Wired ? "yes" : "NO")\(notUsed ? " (the services logged \"not used yet\")" : ""); Redis after the run: \(with.redisKeys) keys, \(with.redisCommands) commands processed"
            )
        }
        func cell(_ value: Double, _ name: String) -> String {
            name.hasSuffix(": count") ? String(Int(value)) : fmt(significant: value)
        }
        func ratio(_ a: Double, _ b: Double) -> String { b > 0 && a.isFinite && b.isFinite ? fmt(a / b) + "x" : "-" }
        var rows: [(String, Double, Double?, String)] = [
            (
                "control-plane requests/s (steady)", without.controlPlanePerSecond, with?.controlPlanePerSecond,
                "fewer with L2"
            ),
            ("flags(for:) calls/s (fleet)", without.callsPerSecond, with?.callsPerSecond, ""),
            ("L1 misses/s (fleet)", without.l1MissesPerSecond, with?.l1MissesPerSecond, ""),
            ("control-plane requests per change event", without.requestsPerEvent, with?.requestsPerEvent, ""),
            ("distinct hot contexts per event", without.hotContextsPerEvent, with?.hotContextsPerEvent, ""),
            (
                "hot contexts every process used, per event", without.usedByEveryProcessPerEvent,
                with?.usedByEveryProcessPerEvent, ""
            ),
            (
                "requests per change / distinct hot contexts", without.requestsPerHotContext,
                with?.requestsPerHotContext, "<= 1.2 with L2"
            ),
            (
                "processes' own hot sets / distinct (no sharing)", without.podSetsPerHotContext,
                with?.podSetsPerHotContext, "~ without L2"
            ),
        ]
        for (name, a, b) in [
            ("first in the fleet", without.firstInFleet, with?.firstInFleet),
            ("after another process had it", without.afterAnotherProcess, with?.afterAnotherProcess),
            ("while another process fetched it", without.whileAnotherFetched, with?.whileAnotherFetched),
        ] {
            let target = name.hasPrefix("after") ? "p99 <= 2 ms with L2 (served from L2)" : ""
            rows.append(("L1 miss \(name): count", Double(a.count), b.map { Double($0.count) }, ""))
            rows.append(("L1 miss \(name): p50 ms", a.p50ms, b?.p50ms, ""))
            rows.append(("L1 miss \(name): p99 ms", a.p99ms, b?.p99ms, target))
        }
        print("\n| figure | without L2 | with L2 | with / without | target |")
        print("| --- | ---: | ---: | ---: | --- |")
        for (name, a, b, target) in rows {
            print(
                "| \(name) | \(cell(a, name)) | \(b.map { cell($0, name) } ?? "-") | \(b.map { ratio($0, a) } ?? "-") | \(target) |"
            )
        }

        var verdicts: [Verdict] = []
        if let with {
            let wired = report.l2Wired ? "" : " (L2 not wired in this build)"
            verdicts.append(
                Verdict(
                    name: "with L2: control-plane requests per change <= 1.2x the distinct hot contexts",
                    pass: with.requestsPerHotContext <= 1.2 && !with.events.isEmpty,
                    detail:
                        "\(fmt(with.requestsPerHotContext))x (without L2: \(fmt(without.requestsPerHotContext))x; processes' own hot sets \(fmt(without.podSetsPerHotContext))x)\(wired)"
                ))
            verdicts.append(
                Verdict(
                    name: "with L2: L1-miss p99 when another process had the context (from L2) <= 2 ms",
                    pass: with.afterAnotherProcess.p99ms <= 2,
                    detail:
                        "\(fmt(significant: with.afterAnotherProcess.p99ms)) ms, p50 \(fmt(significant: with.afterAnotherProcess.p50ms)) ms, \(with.afterAnotherProcess.count) misses (without L2: p99 \(fmt(significant: without.afterAnotherProcess.p99ms)) ms)\(wired)"
                ))
            verdicts.append(
                Verdict(
                    name: "with L2: fewer control-plane requests/s at steady state",
                    pass: with.controlPlanePerSecond < without.controlPlanePerSecond,
                    detail:
                        "\(fmt(with.controlPlanePerSecond, 1)) vs \(fmt(without.controlPlanePerSecond, 1)) (\(ratio(with.controlPlanePerSecond, without.controlPlanePerSecond)))\(wired)"
                ))
        }
        for mode in report.modes {
            verdicts.append(
                Verdict(
                    name: "\(mode.name): every process's stream connected and every event waved everywhere",
                    pass: mode.streamsConnected == options.processes
                        && mode.events.allSatisfy { $0.processesWaved == options.processes },
                    detail:
                        "\(mode.streamsConnected)/\(options.processes) connected; waves \(mode.events.map { "\($0.processesWaved)" }.joined(separator: ","))"
                ))
            verdicts.append(
                Verdict(
                    name: "\(mode.name): the load was kept (no call skipped for 512 in flight)",
                    pass: mode.skippedCalls == 0, detail: "\(mode.skippedCalls) skipped"))
        }
        report.verdicts = verdicts
        print("\n## verdicts")
        if with == nil {
            print(
                "SKIP  with L2: not measured (\(options.withoutL2Only ? "--without-l2-only" : "no redis-server on PATH"))"
            )
        }
        for verdict in verdicts { print("\(verdict.pass ? "PASS" : "FAIL")  \(verdict.name): \(verdict.detail)") }
    }
}
