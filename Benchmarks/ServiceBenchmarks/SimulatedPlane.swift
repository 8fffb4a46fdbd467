import Foundation
import Halyard
import HalyardTesting

// The control plane of sections 7 and 8, on simulated time: a latency and a 503 storm the
// ManualClock plays out without waiting.

/// The in-memory plane behind a latency on a simulated clock, optionally answering every OFREP
/// request 503 with `Retry-After: 0`.
final class SimulatedPlane: FlagTransport, Sendable {
    /// The plane that answers.
    let inner: InMemoryControlPlane
    /// The simulated clock the latency is slept on.
    let clock: ManualClock
    /// How long each OFREP evaluation takes (simulated time).
    let latency: Duration
    /// Whether every OFREP evaluation is answered 503 with `Retry-After: 0`.
    let storm: Bool
    /// The OFREP evaluations sent so far.
    private let sent = Locked(0)
    /// A plane answering after `latency` on `clock`, or with a 503 storm.
    init(_ inner: InMemoryControlPlane, clock: ManualClock, latency: Duration, storm: Bool = false) {
        self.inner = inner
        self.clock = clock
        self.latency = latency
        self.storm = storm
    }
    /// The OFREP evaluations sent so far (bulk and single-flag).
    var requests: Int { sent.withLock { $0 } }
    /// Counts an OFREP evaluation, waits the latency, then answers it (or 503s it in a storm).
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        // Bulk and single-flag evaluations alike (the per-(flag, context) design sends the latter).
        guard request.url.path.contains("/ofrep/v1/evaluate/flags") else { return try await inner.send(request) }
        sent.withLock { $0 += 1 }
        if latency > .zero { try await clock.sleep(for: latency) }
        if storm { return TransportResponse(status: 503, headers: ["Retry-After": "0"]) }
        return try await inner.send(request)
    }
}

/// Service options for the simulated runs: the defaults, but no exposures, and `maxStaleness`
/// when one is given.
func simulatedService(
    _ transport: any FlagTransport, clock: ManualClock, maxStaleness: Duration? = nil
) throws -> FlagService {
    var o = FlagServiceOptions(baseURL: InMemoryControlPlane.baseURL, key: "srv-bench")
    o.transport = transport
    o.clock = clock
    o.installID = "halyard-bench-service"
    o.exposures.enabled = false
    if let maxStaleness { o.maxStaleness = maxStaleness }
    return try FlagService(options: o)
}

/// Lets the tasks woken by a clock step run (real time; the simulated clock does not move).
func settle() async {
    for _ in 0..<3 { await Task.yield() }
    try? await Task.sleep(for: .microseconds(200))
}
