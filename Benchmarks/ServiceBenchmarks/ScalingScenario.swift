import BenchmarkSupport
import Foundation
import Halyard

#if canImport(Glibc)
    import Glibc
#endif

// Section 2: warm requests with 64 tasks against 1 task, wall-clock and CPU per request, with a
// control that shows how many cores this process can get on the shared machine right now.

extension ServiceBench {
    /// Section 2: alternates 1-task and 64-task passes over the warm service, round by round.
    func scaling(_ set: WarmSet) async -> Scaling {
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
                            let id = set.zipf.sample(rng.unit())
                            sum &+= await halyardRequest(set.service, set.contexts[id], Int(rng.next() % 4))
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
                            if let f = try? set.contexts[(task * 131 + i) % set.contexts.count].fitted() {
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
            costRatio <= 1.25, "\(fmt(costRatio))x CPU per request; wall \(fmt(ratio))x at load average \(fmt(load[0]))"
        )
        verdict("64 tasks >= 1.6x one task (2 cores), wall", ratio >= 1.6, "\(fmt(ratio))x")
        return Scaling(
            oneTask: median(one), sixtyFourTasks: median(many), ratio: ratio, ratios: ratios,
            cpuPerRequestOneTaskUs: median(oneCPU), cpuPerRequestSixtyFourTasksUs: median(manyCPU),
            cpuCostRatio: costRatio, loadAverage: load[0], coresBusyOneTask: oneCores,
            coresBusySixtyFourTasks: manyCores, coresBusyControl: median(controlCores))
    }
}
