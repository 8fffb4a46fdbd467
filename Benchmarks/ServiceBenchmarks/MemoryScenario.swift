import BenchmarkSupport
import Foundation
import Halyard
import HalyardTesting

// Section 4: memory per cached context (64 flags), also alone: `--memory-only`.

extension ServiceBench {
    /// Section 4: the default service, then one with own details (`sharesServedDetails =
    /// false`, as before details were shared) in the same run, each filled with the same new
    /// contexts; malloc's bytes and the CPU time of the fills. Returns the default's figures.
    func memoryPerContext() async throws -> Memory {
        let contexts = quick ? 2_000 : 5_000
        print("\n## 4. memory per cached context (64 flags), \(contexts) contexts")
        var perContext: [Bool: Double] = [:]
        var cpuPerFetch: [Bool: Double] = [:]
        var memory: Memory?
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
            let estimatedPer = Double(stats.cache.bytesHeld) / Double(stats.cache.contextsHeld)
            // What the service estimates it holds beside the cache: the fitting memo's entries, and
            // the keys, key tables and details its snapshots share (each bounded on its own).
            let beside = stats.cache.memoBytes + stats.cache.internedKeyBytes + stats.cache.sharedDetailBytes
            let totalPer = Double(stats.cache.bytesHeld + beside) / Double(stats.cache.contextsHeld)
            perContext[sharing] = measuredPer
            cpuPerFetch[sharing] = cpu / Double(contexts) * 1e6
            print(
                "  \(sharing ? "shared details (default)" : "own details"): measured (malloc, mallinfo2) \(fmt(measuredPer / 1024)) KiB per context; estimated \(fmt(estimatedPer / 1024)) KiB in the cache (what its bound counts) + \(fmt(Double(beside) / Double(stats.cache.contextsHeld) / 1024)) KiB beside it (memo \(stats.cache.memoBytes / 1024) KiB, shared keys and tables \(stats.cache.internedKeyBytes / 1024) KiB, \(stats.cache.sharedDetails) shared details \(stats.cache.sharedDetailBytes / 1024) KiB, in all); total estimate / measured \(fmt(totalPer / measuredPer)); CPU \(fmt(cpu / Double(contexts) * 1e6, 1)) µs per cold fetch (plane included)"
            )
            verdict(
                "byte estimate (cache and beside it) within 0.8x-1.5x of malloc's figure, \(sharing ? "shared" : "own") details",
                totalPer / measuredPer >= 0.8 && totalPer / measuredPer <= 1.5, "\(fmt(totalPer / measuredPer))x")
            if sharing {
                print(
                    "  -> the 64 MiB default holds about \((64 << 20) / Int(max(estimatedPer, 1))) such contexts; 10,000 of them take about \(fmt(estimatedPer * 10_000 / 1_048_576, 0)) MiB"
                )
                memory = Memory(
                    measuredBytesPerContext: measuredPer, estimatedBytesPerContext: estimatedPer,
                    estimatedTotalBytesPerContext: totalPer)
            }
            service.close()
        }
        let shared = perContext[true] ?? .nan
        print(
            "  shared / own: memory \(fmt(shared / (perContext[false] ?? .nan)))x, CPU per cold fetch \(fmt((cpuPerFetch[true] ?? .nan) / (cpuPerFetch[false] ?? .nan)))x"
        )
        verdict(
            "memory per cached 64-flag context <= 10 KiB (malloc)", shared <= 10 * 1024, "\(fmt(shared / 1024)) KiB")
        guard let memory else { preconditionFailure("the shared-details pass always runs") }
        return memory
    }
}
