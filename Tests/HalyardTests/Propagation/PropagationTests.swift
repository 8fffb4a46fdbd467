import Foundation
import Testing

@testable import Halyard

/// The propagation checker (docs/testing.md, "The propagation checker"; issue 47): seeded
/// fault-injection runs of services and clients against a simulated control plane, judged by
/// ``PropagationChecker``. CI runs ``ciSeeds``; `HALYARD_PROPAGATION_SEEDS` runs others (a seed
/// `17`, a list `7,12,40` or a range `1-40`), `HALYARD_PROPAGATION_SECONDS` sets a run's length
/// (default 11 s); `scripts/propagation-long.sh` runs many.
///
/// Its windows are real time (I1's 2 s, I3's cold wait): it runs alone, as a step of `.ci/run`
/// (`HALYARD_PROPAGATION=1 swift test --skip-build --filter PropagationTests`), not inside the
/// parallel full run, where the readers of one run were seen starved for seconds (896 reads in
/// 11 s, 54 scheduler stalls adding to 21 s).
@Suite(
    "Propagation: seeded fault-injection runs against a simulated control plane", .serialized,
    .enabled(
        if: ProcessInfo.processInfo.environment["HALYARD_PROPAGATION"] == "1",
        "real-time windows: run alone with HALYARD_PROPAGATION=1"))
struct PropagationTests {
    static let ciSeeds: [UInt64] = [4, 8, 14]
    static let ciFleetSeeds: [UInt64] = [3, 6]

    /// `HALYARD_PROPAGATION_SEEDS`: a seed (`17`), a list (`7,12,40`) or a range (`1-40`).
    static var seeds: [UInt64]? {
        guard let text = ProcessInfo.processInfo.environment["HALYARD_PROPAGATION_SEEDS"], !text.isEmpty else {
            return nil
        }
        var seeds: [UInt64] = []
        for part in text.split(separator: ",") {
            let bounds = part.split(separator: "-").compactMap { UInt64($0.trimmingCharacters(in: .whitespaces)) }
            if bounds.count == 2, bounds[0] <= bounds[1], bounds[1] - bounds[0] < 100_000 {
                seeds += Array(bounds[0]...bounds[1])
            } else if bounds.count == 1 {
                seeds.append(bounds[0])
            }
        }
        return seeds
    }

    static var duration: Duration {
        let text = ProcessInfo.processInfo.environment["HALYARD_PROPAGATION_SECONDS"] ?? ""
        return .seconds(max(8, Int(text) ?? 11))
    }

    /// Runs `seed` and records one issue per invariant broken, with the seed and a minimal history.
    static func check(seed: UInt64, redis: RedisTestServer?) async throws {
        let workload = PropagationWorkload(seed: seed, duration: duration, fleet: redis != nil)
        let history = try await workload.run(redisPort: redis?.port)
        let checker = PropagationChecker(history)
        let violations = checker.check()
        let summary =
            "propagation seed \(seed)\(redis == nil ? "" : " (fleet)"): \(history.readCount) reads, \(history.requests.count) requests, \(history.changes.count) changes, \(history.publications.count) events, \(history.stalls.count) stalls (\(checker.stalled(from: .zero, to: history.end).ms)), \(violations.count) violations"
        print(summary)
        print("propagation seed \(seed) \(checker.coverage)")
        #expect(history.readCount > 1_000, "the readers barely ran: \(summary)")
        // HALYARD_PROPAGATION_DUMP=<reader id>: every request of that reader, to read a run by hand.
        if let dump = ProcessInfo.processInfo.environment["HALYARD_PROPAGATION_DUMP"].flatMap({ Int($0) }) {
            for request in history.requests where request.reader == dump { print(checker.describe(request)) }
            for operation in history.operations where operation.reader == dump { print(checker.describe(operation)) }
        }
        if !violations.isEmpty {
            Issue.record(
                Comment(rawValue: PropagationChecker.report(seed: seed, violations: violations, checker: checker)))
        }
    }

    @Test("one service and four clients: every invariant holds (fixed seeds, or HALYARD_PROPAGATION_SEEDS)")
    func seededRuns() async throws {
        for seed in Self.seeds ?? Self.ciSeeds {
            try await Self.check(seed: seed, redis: nil)
        }
    }

    @Test(
        "a fleet of two services sharing a real redis-server, and four clients: every invariant holds",
        .needsRedisServer)
    func seededFleetRuns() async throws {
        for seed in Self.seeds ?? Self.ciFleetSeeds {
            let redis = try RedisTestServer()
            try await Self.check(seed: seed, redis: redis)
        }
    }
}
