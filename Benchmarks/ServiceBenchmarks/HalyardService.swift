import Foundation
import Halyard
import HalyardTesting

// Halyard's design: FlagService, bulk values per context, a cache of 10,000 contexts.

/// The cache of the workload: 10,000 contexts. With 64 flags a context takes ~17 KiB (section
/// 4), so the byte bound is raised to 256 MiB for the count to be the bound that binds; the
/// "64 MiB" rows keep the default and show what it holds.
func makeService(
    transport: any FlagTransport, baseURL: URL, clock: any HalyardClock, maxContexts: Int = 10_000,
    maxCacheBytes: Int = 256 << 20, coldFetchTimeout: Duration = .milliseconds(250), admission: Bool = false,
    sharesDetails: Bool = true, detailStripes: Int = DetailInterner.defaultStripes
) throws -> FlagService {
    var o = FlagServiceOptions(baseURL: baseURL, key: "srv-bench")
    o.frequencyAdmission = admission
    o.maxCacheBytes = maxCacheBytes
    o.transport = transport
    o.clock = clock
    o.installID = "halyard-bench-service"
    o.maxContexts = maxContexts
    o.coldFetchTimeout = coldFetchTimeout
    o.exposures.enabled = false
    o.maxQueuedFetches = 100_000
    o.sharesServedDetails = sharesDetails
    o.sharedDetailStripes = detailStripes
    return try FlagService(options: o)
}

/// One request on FlagService: the view, then the route's 10 reads. Returns a checksum.
@inline(__always)
func halyardRequest(_ service: FlagService, _ ctx: EvaluationContext, _ route: Int) async -> Int {
    let flags = await service.flags(for: ctx)
    var sum = 0
    for key in routes[route] where flags.bool(key, default: false) { sum += 1 }
    return sum
}

/// Warms `service` with the `count` most popular contexts (ranks 0..<count).
func warm(_ service: FlagService, count: Int) async {
    await withTaskGroup(of: Void.self) { group in
        for worker in 0..<64 {
            group.addTask {
                var id = worker
                while id < count {
                    _ = await service.flags(for: context(id))
                    id += 64
                }
            }
        }
    }
}

/// The warm service sections 1 and 2 share: the most popular contexts already fetched, over the
/// in-memory plane with a 2 ms latency.
struct WarmSet: Sendable {
    /// The service, its cache holding the ``contexts``.
    let service: FlagService
    /// The warm contexts, built before any clock starts (a service gets them from its request).
    let contexts: [EvaluationContext]
    /// The same contexts fitted by the caller (the `flags(for: FittedContext)` path).
    let fitted: [FittedContext]
    /// Their popularity: Zipf(1.1) over ``contexts``.
    let zipf: Zipf

    /// Builds the service and warms it with the `count` most popular contexts.
    init(count: Int) async throws {
        let plane = makePlane(latency: .milliseconds(2))
        service = try makeService(transport: plane, baseURL: InMemoryControlPlane.baseURL, clock: SystemClock())
        await warm(service, count: count)
        zipf = Zipf(n: count, s: 1.1)
        // Contexts are built before the clock starts (a service gets them from its request); the
        // fitting (canonical JSON + SHA-1) is inside flags(for:) and timed.
        contexts = (0..<count).map(context)
        fitted = try contexts.map { try $0.fitted() }
    }
}
