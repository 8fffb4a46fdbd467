import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// The contract with the read path and the client: the local "exposed until" slot, one upload at
/// a time, no ticker left behind, and the Python endpoint's own self-check.
@Suite struct ExposureContractTests {
    static let fp = String(repeating: "c3", count: 20)

    /// What a snapshot entry or handle does on a successful read (the lead's read path).
    struct SimulatedEntry {
        var exposedUntil: UInt32 = 0
        var slowPathCalls = 0
        mutating func read(_ recorder: ExposureRecorder, key: String, variant: String?) {
            guard recorder.isEnabled else { return }
            if recorder.coarseNow() < exposedUntil { return }  // the fast path: one relaxed load
            slowPathCalls += 1
            exposedUntil = recorder.recordExposure(
                key: key, variant: variant, reason: .targetingMatch, contextFingerprint: ExposureContractTests.fp)
        }
    }

    @Test func slotSkipsTheRecorderUntilTheWindowEnds() async {
        let clock = ManualClock()
        let t = ScriptedExposureTransport()
        var o = ExposureOptions()
        o.dedupWindow = .seconds(60)
        let r = ExposureRecorder(
            options: o, clock: clock, transport: t, endpoint: URL(string: "http://127.0.0.1:9")!,
            meta: ExposureMeta(sdk: "s", version: "1", appId: "a", installId: "i"), startsTicker: false)
        var entry = SimulatedEntry()
        var sameFlagOtherEntry = SimulatedEntry()  // e.g. the same flag in the next snapshot
        for _ in 0..<1_000 { entry.read(r, key: "f", variant: "on") }
        #expect(entry.slowPathCalls == 1)
        sameFlagOtherEntry.read(r, key: "f", variant: "on")
        #expect(sameFlagOtherEntry.slowPathCalls == 1)
        #expect(r.counters.recorded == 2 && r.counters.deduplicated == 1)  // survives the "swap"
        clock.advance(by: .seconds(59))
        r.tick()
        for _ in 0..<100 { entry.read(r, key: "f", variant: "on") }
        #expect(entry.slowPathCalls == 1)
        clock.advance(by: .seconds(1))
        r.tick()  // the ticker's job: move coarse time
        for _ in 0..<100 { entry.read(r, key: "f", variant: "on") }
        #expect(entry.slowPathCalls == 2)
        let c = r.counters
        #expect(c.recorded == 3 && c.deduplicated == 1 && c.pending == 2)
        r.close()
        var afterClose = SimulatedEntry()
        afterClose.read(r, key: "g", variant: nil)
        afterClose.read(r, key: "g", variant: nil)
        #expect(afterClose.slowPathCalls == 1 && afterClose.exposedUntil == .max)
        _ = await r.waitUntilClosed()
    }

    /// A transport that holds each request for a while and tracks how many overlap.
    final class SlowTransport: FlagTransport, Sendable {
        let state = Locked<(inFlight: Int, maxInFlight: Int, requests: Int)>((0, 0, 0))
        func send(_ request: TransportRequest) async throws -> TransportResponse {
            state.withLock { s in
                s.inFlight += 1; s.requests += 1
                s.maxInFlight = max(s.maxInFlight, s.inFlight)
            }
            try? await Task.sleep(for: .milliseconds(20))
            state.withLock { $0.inFlight -= 1 }
            return TransportResponse(status: 200)
        }
    }

    @Test func oneUploadAtATimeWhateverTheNumberOfFlushers() async {
        let t = SlowTransport()
        var o = ExposureOptions()
        o.batchSize = 10
        let r = ExposureRecorder(
            options: o, clock: ManualClock(), transport: t, endpoint: URL(string: "http://127.0.0.1:9")!,
            meta: ExposureMeta(sdk: "s", version: "1", appId: "a", installId: "i"), startsTicker: false)
        for i in 0..<95 { r.recordExposure(key: "k\(i)", variant: nil, reason: .split, contextFingerprint: Self.fp) }
        await withTaskGroup(of: ExposureFlushResult.self) { group in
            for _ in 0..<8 { group.addTask { await r.flush() } }
            var sent = 0
            for await result in group { sent += result.sentEvents }
            #expect(sent <= 95)
        }
        #expect(await eventually { r.counters.pending == 0 })
        let s = t.state.value
        #expect(s.maxInFlight == 1)
        #expect(s.requests >= 10)  // automatic drains may also take partial batches meanwhile
        #expect(r.counters.sent == 95)
    }

    @Test func aDroppedRecorderStopsItsTicker() async {
        let clock = ManualClock()
        do {
            let r = ExposureRecorder(
                options: ExposureOptions(), clock: clock, transport: ScriptedExposureTransport(),
                endpoint: URL(string: "http://127.0.0.1:9")!,
                meta: ExposureMeta(sdk: "s", version: "1", appId: "a", installId: "i"))
            // Lazy: no timer until something is recorded.
            try? await Task.sleep(for: .milliseconds(20))
            #expect(clock.sleeperCount == 0)
            r.recordExposure(key: "k", variant: nil, reason: .split, contextFingerprint: "f")
            #expect(await eventually { clock.sleeperCount == 1 })
            _ = r.coarseNow()
        }
        #expect(await eventually { clock.sleeperCount == 0 })
    }

    @Test func pythonEndpointSelfCheckPasses() throws {
        let script = ExposureServer.scriptURL.deletingLastPathComponent().appendingPathComponent("exposure_endpoint.py")
        let result = try #require(ExposureGzipTests.run("python3", [script.path]), "python3 is required")
        #expect(result.status == 0)
        #expect(String(decoding: result.output, as: UTF8.self).contains("ok"))
    }
}
