import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// End to end through the loopback Python control plane (server.py) with injected failures,
/// through each production transport. Waits use a ManualClock (advanced by each flush's
/// `retryAfter`), so only the real
/// network exchanges and the injected timeouts take time.
@Suite(.serialized) struct ExposureIntegrationTests {
    static let meta = ExposureMeta(sdk: "halyard-swift", version: "0.1.0", appId: "it", installId: "install-it")

    static func options(_ edit: (inout ExposureOptions) -> Void = { _ in }) -> ExposureOptions {
        var o = ExposureOptions()
        o.flushInterval = .zero  // flushes are driven explicitly
        o.initialBackoff = .milliseconds(10)
        o.maxBackoff = .milliseconds(100)
        o.requestTimeout = .seconds(1)
        edit(&o)
        return o
    }

    /// Flushes until nothing is pending, advancing the manual clock over every backoff.
    static func drainAll(_ recorder: ExposureRecorder, _ clock: ManualClock) async -> Int {
        var rounds = 0
        while recorder.counters.pending > 0, rounds < 2_000 {
            let result = await recorder.flush()
            if let wait = result.retryAfter { clock.advance(by: wait) }
            rounds += 1
        }
        return rounds
    }

    static func triple(_ n: Int) -> (fp: String, key: String, variant: String?) {
        ("ctx-\(n / 300)", "flag.\(n % 300)", n % 4 == 0 ? nil : "v\(n % 3)")
    }

    static func name(fp: String, key: String, variant: String?) -> String {
        "\(fp)|\(key)|\(variant ?? "<nil>")"
    }

    @Test(arguments: TransportKind.available)
    func hundredThousandExposuresThroughInjectedFailuresAddUp(kind: TransportKind) async throws {
        let server = try await ExposureServer.start()
        defer { server.stop() }
        let clock = ManualClock()
        let rate = 0.9
        let recorder = ExposureRecorder(
            options: Self.options {
                $0.sampleRate = rate; $0.capacity = 20_000
            },
            clock: clock, transport: kind.make(), endpoint: server.baseURL, meta: Self.meta,
            headers: ["Authorization": "Bearer test-key"], startsTicker: false)

        // One fault per upload request, in order; {} is a normal answer.
        let burst: [[String: Any]] = [["status": 500], ["status": 502], ["status": 503], ["status": 504]]
        var faults: [[String: Any]] = burst + [[:]]
        faults += [["status": 429, "headers": ["Retry-After": "1"]], [:]]
        faults += [["reset": true], [:]]
        faults += [["reset": true, "process": true], [:]]  // processed, answer lost: replayed
        faults += [["status": 500, "process": true], [:]]  // processed, then 500: replayed
        faults += [["delay": 1.3, "process": true], [:]]  // client times out; processed later
        faults += [["delay": 1.3, "status": 503], ["status": 408], [:]]
        faults += Array(repeating: [:], count: 20) + burst + [["status": 429, "headers": ["Retry-After": "2"]]]
        try await server.addFaults(faults)

        var expected = Set<String>()
        var distinct = 0
        var n = 0
        for chunk in 0..<10 {
            for i in 0..<10_000 {
                let t: (fp: String, key: String, variant: String?)
                if i % 10 == 9 {
                    t = Self.triple(n - 5)  // a repeat inside its window: de-duplicated
                } else {
                    t = Self.triple(n)
                    n += 1
                    distinct += 1
                    if ExposureStateTests.referenceKeeps(fp: t.fp, key: t.key, variant: t.variant, rate: rate) {
                        expected.insert(Self.name(fp: t.fp, key: t.key, variant: t.variant))
                    }
                }
                recorder.recordExposure(
                    key: t.key, variant: t.variant, reason: .targetingMatch, contextFingerprint: t.fp)
            }
            let rounds = await Self.drainAll(recorder, clock)
            #expect(rounds < 2_000, "chunk \(chunk) did not drain")
        }

        let c = recorder.counters
        #expect(c.recorded == 100_000)
        #expect(c.deduplicated == 10_000)
        #expect(c.sampledOut == distinct - expected.count)
        #expect(c.dropped == 0)  // the buffer always had room: nothing lost
        #expect(c.pending == 0)
        #expect(c.sent == expected.count)
        #expect(c.sent + c.dropped + c.sampledOut + c.deduplicated == c.recorded)
        #expect(c.failed >= 12)

        let report = try await server.report()
        let exposures = try #require(report["exposures"] as? [[String: Any]])
        var received = [String: Int]()
        for e in exposures {
            let variant = e["variant"] as? String
            received[
                Self.name(
                    fp: e["contextFingerprint"] as? String ?? "", key: e["key"] as? String ?? "", variant: variant),
                default: 0] += 1
        }
        #expect(exposures.count == c.sent)  // each event counted once by the server
        #expect(received.values.allSatisfy { $0 == 1 })  // no duplicates
        #expect(Set(received.keys) == expected)  // exactly the predicted sample
        let batchCounts = try #require(report["batchCounts"] as? [String: Int])
        #expect(batchCounts.values.reduce(0, +) == exposures.count)
        #expect(batchCounts.values.allSatisfy { $0 <= 1_000 })
        #expect((report["replays"] as? Int ?? 0) >= 2)  // retried batches were answered, not recounted
        #expect((report["mismatchedReplays"] as? Int) == 0)
        // The server validated every body.
        #expect((report["rejected"] as? [Any])?.isEmpty == true, "\(report["rejected"] ?? "")")
    }

    @Test(arguments: TransportKind.available)
    func outageOverflowDropsOldestAndRejectionDrops(kind: TransportKind) async throws {
        let server = try await ExposureServer.start()
        defer { server.stop() }
        let clock = ManualClock()
        let recorder = ExposureRecorder(
            options: Self.options {
                $0.capacity = 2_000; $0.batchSize = 500
            },
            clock: clock, transport: kind.make(), endpoint: server.baseURL, meta: Self.meta,
            headers: [:], startsTicker: false)
        try await server.addFaults(Array(repeating: ["status": 503], count: 3) + [["status": 400]])
        // While the server fails, 5,000 distinct exposures arrive: only the newest 2,000 fit.
        for i in 0..<5_000 {
            recorder.recordExposure(key: "k\(i)", variant: "v", reason: .split, contextFingerprint: "fp")
            if i % 1_000 == 999 { _ = await recorder.flush() }
        }
        _ = await Self.drainAll(recorder, clock)
        let c = recorder.counters
        #expect(c.recorded == 5_000 && c.pending == 0)
        #expect(c.rejected == 500)  // the 400 dropped one batch
        #expect(c.sent + c.dropped == 5_000)
        #expect(c.sent == 1_500)
        let report = try await server.report()
        let keys = (report["exposures"] as? [[String: Any]] ?? []).compactMap { $0["key"] as? String }
        #expect(keys.count == c.sent)
        // Drop-oldest: everything delivered is among the newest 2,000.
        #expect(keys.allSatisfy { Int($0.dropFirst()) ?? 0 >= 3_000 })
    }
}
