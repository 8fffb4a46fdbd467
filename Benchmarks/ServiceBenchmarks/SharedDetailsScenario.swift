import BenchmarkSupport
import Foundation
import Halyard
import HalyardTesting

// Section 9: detail reads from every core, shared vs own details, also alone: `--details-only`.

extension ServiceBench {
    /// Section 9. One thread per core (at least 2), each with a view of its own context, reads
    /// the details of the same two flags (a Boolean and an object) in a loop. A detail read
    /// retains and releases its detail: when contexts share one object, its reference count's
    /// cache line moves between the cores. Three services: the default (shared, striped:
    /// `DetailInterner.defaultStripes` copies of each result, picked by the context's
    /// fingerprint), one copy of each result (`sharedDetailStripes = 1`: every thread on one
    /// object, the worst case), and own details (`sharesServedDetails = false`: no sharing, as
    /// before). Each round takes new contexts (so which of them meet on one stripe varies as it
    /// would for users); reported as ns per read and as ratios to own details in the same round
    /// (docs/service.md, "Shared details").
    func sharedDetails() async throws -> SharedDetails {
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
            striped.stats.cache.sharedDetails > 0 && single.stats.cache.sharedDetails <= 128
                && own.stats.cache.sharedDetails == 0,
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
        verdict(
            "detail reads on shared (striped) details, mean over rounds <= 1.5x own details",
            mean(stripedRatios) <= 1.5, "\(fmt(mean(stripedRatios)))x (one copy: \(fmt(median(singleRatios)))x)")
        striped.close()
        single.close()
        own.close()
        return SharedDetails(
            threads: threads, stripes: DetailInterner.defaultStripes, stripedToOwn: stripedRatios,
            oneCopyToOwn: singleRatios)
    }
}
