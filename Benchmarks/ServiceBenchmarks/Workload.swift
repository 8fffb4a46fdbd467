import BenchmarkSupport
import Foundation
import Halyard
import HalyardTesting

/// Zipf(s) over ranks 0..<n by inverse CDF (binary search over the cumulative weights).
struct Zipf: Sendable {
    /// The cumulative weights, normalized: `cdf[k]` is the probability of a rank `<= k`.
    let cdf: [Double]

    /// The distribution over `n` ranks with exponent `s`.
    init(n: Int, s: Double) {
        var cdf = [Double](repeating: 0, count: n)
        var total = 0.0
        for k in 0..<n {
            total += 1 / pow(Double(k + 1), s)
            cdf[k] = total
        }
        for k in 0..<n { cdf[k] /= total }
        self.cdf = cdf
    }

    /// The rank drawn by `u` in `[0, 1)`.
    func sample(_ u: Double) -> Int {
        var lo = 0
        var hi = cdf.count - 1
        while lo < hi {
            let mid = (lo + hi) / 2
            if cdf[mid] < u { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
}

/// How many distinct user contexts the workload draws from.
let universe = 1_000_000
/// The popularity of the contexts: Zipf(1.1) over the ``universe``.
let zipf = Zipf(n: universe, s: 1.1)

/// User `id`'s context (``ServiceWorkload``: shared with `halyard-warm-path`).
func context(_ id: Int) -> EvaluationContext { ServiceWorkload.context(id) }

/// The 64 flags served per context: 40 Booleans, 10 integers, 10 short strings, 4 small objects.
let flagKeys = ServiceWorkload.flagKeys

/// The values the control plane serves a user: each of the 64 flags from one bit of an FNV-1a
/// hash of the targeting key.
func flagValues(targetingKey: String) -> [String: JSONValue] {
    var hash: UInt64 = 1469598103934665603
    for byte in targetingKey.utf8 { hash = (hash ^ UInt64(byte)) &* 1099511628211 }
    var values: [String: JSONValue] = [:]
    for (i, key) in flagKeys.enumerated() {
        let bit = (hash >> UInt64(i % 64)) & 1 == 1
        switch i {
        case 0..<40: values[key] = .bool(bit)
        case 40..<50: values[key] = .int(Int64(i * 10 + (bit ? 1 : 0)))
        case 50..<60: values[key] = .string(bit ? "variant-b" : "variant-a")
        default: values[key] = .object(["enabled": .bool(bit), "limit": .int(Int64(i))])
        }
    }
    return values
}

/// The 10 flags a request reads: one of 4 routes, each with its own 10 of the 64 flags.
let routes = ServiceWorkload.routes

/// The in-memory control plane serving ``flagValues(targetingKey:)``, answering after `latency`.
func makePlane(latency: Duration) -> InMemoryControlPlane {
    let plane = InMemoryControlPlane()
    plane.setRecording(false)
    plane.setLatency(latency)
    plane.setContextValues { context in
        guard case .object(let m) = context, case .string(let key)? = m["targetingKey"] else { return nil }
        return flagValues(targetingKey: key)
    }
    return plane
}

/// A transport that counts OFREP requests (bulk and single-flag) before passing them on.
final class CountingTransport: FlagTransport, Sendable {
    /// The transport requests go to.
    let inner: any FlagTransport
    /// The OFREP requests sent so far.
    private let count = Locked(0)
    /// Counts the requests sent through `inner`.
    init(_ inner: any FlagTransport) { self.inner = inner }
    /// The OFREP requests sent so far.
    var requests: Int { count.withLock { $0 } }
    /// Counts `request` when it is an OFREP one, then sends it.
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        if request.url.path.contains("/ofrep/") { count.withLock { $0 += 1 } }
        return try await inner.send(request)
    }
}
