import BenchmarkSupport
import Foundation
import Halyard
import HalyardTesting

// Section 7, second part: after a 5-minute outage of the plane (every OFREP request answered
// 503), the time until 99 % of hot requests are served values again, on simulated time.
// `--brownout-only` runs it after the brownout.

/// The in-memory plane behind a latency on a simulated clock, answering every OFREP request
/// 503 (no `Retry-After`) while it is down.
final class OutagePlane: FlagTransport, Sendable {
    /// Whether the plane is down, and the OFREP evaluations sent so far.
    private struct State {
        var down = false
        var sent = 0
    }
    /// The plane that answers while up.
    let inner: InMemoryControlPlane
    /// The simulated clock the latency is slept on.
    let clock: ManualClock
    /// How long each OFREP evaluation takes (simulated time), up or down.
    let latency: Duration
    /// The state, under a lock.
    private let state = Locked(State())

    /// A plane answering after `latency` on `clock`; up until ``setDown(_:)``.
    init(_ inner: InMemoryControlPlane, clock: ManualClock, latency: Duration) {
        self.inner = inner
        self.clock = clock
        self.latency = latency
    }

    /// The OFREP evaluations sent so far (bulk and single-flag).
    var requests: Int { state.withLock { $0.sent } }

    /// Takes the plane down (every evaluation arriving from now on is answered 503) or up.
    func setDown(_ down: Bool) { state.withLock { $0.down = down } }

    /// Counts an OFREP evaluation, waits the latency, then answers it, or 503s it when it
    /// arrived while the plane was down.
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        guard request.url.path.contains("/ofrep/v1/evaluate/flags") else { return try await inner.send(request) }
        let down = state.withLock { s -> Bool in
            s.sent += 1
            return s.down
        }
        if latency > .zero { try await clock.sleep(for: latency) }
        if down { return TransportResponse(status: 503) }
        return try await inner.send(request)
    }
}

extension ServiceBench {
    /// The outage's length, in simulated seconds.
    static let outageSeconds = 300
    /// The hot contexts of the section, each asked once per tick.
    static let recoveryHotContexts = 100
    /// One tick of simulated time: each hot context is asked once per tick.
    static let recoveryTick = Duration.milliseconds(100)
    /// How long after the recovery the section watches, in ticks (2 simulated minutes).
    static let recoveryWindowTicks = 1_200

    /// Section 7, second part: FlagService with its default `maxStaleness` (10 min: the held
    /// values outlast the outage) and with 2 min (they expire in the middle of it), then the
    /// per-(flag, context) cache, each through the same outage.
    func recovery() async throws -> Recovery {
        var runs: [Recovery.Run] = []
        let hot = try (0..<Self.recoveryHotContexts).map { try context(universe - 30_000 - $0).fitted() }
        for (maxStaleness, name) in [
            (Duration.seconds(600), "halyard, maxStaleness 10 min (default)"),
            (Duration.seconds(120), "halyard, maxStaleness 2 min (values expire during the outage)"),
        ] {
            let clock = ManualClock()
            let plane = OutagePlane(makePlane(latency: .zero), clock: clock, latency: .milliseconds(50))
            let service = try simulatedService(plane, clock: clock, maxStaleness: maxStaleness)
            runs.append(
                await recoveryRun(name, plane: plane, clock: clock) {
                    var served = 0
                    for f in hot where service.flagsIfCached(for: f).hasValues { served += 1 }
                    return served
                })
            service.close()
        }
        let clock = ManualClock()
        let plane = OutagePlane(makePlane(latency: .zero), clock: clock, latency: .milliseconds(50))
        let cache = FlagContextCache(
            transport: plane, baseURL: InMemoryControlPlane.baseURL, capacity: 100_000, ttl: .seconds(30), clock: clock)
        runs.append(
            await recoveryRun("flag-ctx-cache (30 s TTL, a failed read cached for it)", plane: plane, clock: clock) {
                var served = 0
                for (i, f) in hot.enumerated() {
                    var all = true
                    for key in routes[i % routes.count]
                    where !cache.servesValueAtOnce(key, fingerprint: f.fingerprint, contextJSON: f.canonicalJSON) {
                        all = false
                    }
                    if all { served += 1 }
                }
                return served
            })

        print(
            "\n## 7b. recovery: every OFREP request answered 503 for \(Self.outageSeconds / 60) simulated minutes, \(Self.recoveryHotContexts) hot contexts every 100 ms, plane latency 50 ms"
        )
        for run in runs {
            let back =
                run.secondsTo99.map {
                    "\(fmt($0, 1)) s after the plane recovered\(run.stayed ? "" : " (then fell below again)")"
                }
                ?? "not within \(Self.recoveryWindowTicks / 10) s"
            print(
                "  \(run.design): served values during the outage \(fmt(run.servedDuringOutage * 100, 2)) %; back to 99 % \(back); served in the \(Self.recoveryWindowTicks / 10) s after the recovery \(fmt(run.servedAfter * 100, 2)) %; \(run.requestsDuringOutage) requests during the outage"
            )
        }
        // The runs in the order above: Halyard's default, Halyard's short maxStaleness, the peer.
        let held = runs[0]
        let expired = runs[1]
        let peer = runs[2]
        let seconds = expired.secondsTo99 ?? .infinity
        verdict(
            "recovery: 99 % of hot requests served again within 30 s of a 5-minute outage (Halyard, values expired)",
            seconds <= 30 && expired.stayed,
            "\(fmt(seconds, 1)) s (flag-ctx-cache: \(fmt(peer.secondsTo99 ?? .infinity, 1)) s)")
        verdict(
            "recovery: held values served through a 5-minute outage (Halyard, default maxStaleness) >= 99 %",
            held.servedDuringOutage >= 0.99, "\(fmt(held.servedDuringOutage * 100, 2)) %")
        return Recovery(outageSeconds: Self.outageSeconds, runs: runs)
    }

    /// One design through the section: warm (until every hot context is served, at most 60
    /// simulated seconds), the outage, then ``recoveryWindowTicks`` with the plane back.
    /// `ask` asks every hot context once and returns how many were served values.
    private func recoveryRun(
        _ design: String, plane: OutagePlane, clock: ManualClock, ask: () -> Int
    ) async -> Recovery.Run {
        let hot = Self.recoveryHotContexts
        func step() async -> Int {
            let served = ask()
            clock.advance(by: Self.recoveryTick)
            await settle()
            return served
        }
        for _ in 0..<600 {
            if await step() == hot { break }
        }
        plane.setDown(true)
        let before = plane.requests
        var servedInOutage = 0
        let outageTicks = Self.outageSeconds * 10
        for _ in 0..<outageTicks { servedInOutage += await step() }
        let duringOutage = plane.requests - before
        plane.setDown(false)
        var first: Int?
        var stayed = true
        var servedInWindow = 0
        for tick in 0..<Self.recoveryWindowTicks {
            let served = await step()
            servedInWindow += served
            if served * 100 >= hot * 99 {
                if first == nil { first = tick }
            } else if first != nil {
                stayed = false
            }
        }
        return Recovery.Run(
            design: design, servedDuringOutage: Double(servedInOutage) / Double(outageTicks * hot),
            secondsTo99: first.map { Double($0) / 10 }, stayed: stayed,
            servedAfter: Double(servedInWindow) / Double(Self.recoveryWindowTicks * hot),
            requestsDuringOutage: duringOutage)
    }
}
