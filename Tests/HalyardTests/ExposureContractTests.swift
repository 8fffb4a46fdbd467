import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// The contract between the read path and the exposure pipeline: the client's "exposed until"
/// slots, one upload at a time, no ticker left behind, and the Python endpoint's own self-check.
@Suite struct ExposureContractTests {
    static let fp = String(repeating: "c3", count: 20)

    /// The client's own fast path (`exposeIfNeeded` and the handle's mark), on a real online
    /// client with the manual clock: `recorded` counts the calls that reached the recorder, so
    /// a read that stops at its slot leaves it unchanged.
    @Test func readsSkipTheRecorderUntilTheWindowEnds() async throws {
        let plane = InMemoryControlPlane()
        plane.setFlag(ServedFlag(key: "f", value: true, variant: "on", reason: .targetingMatch))
        plane.setFlag(ServedFlag(key: "s", value: "x", variant: "a", reason: .split))
        let clock = ManualClock()
        var options = plane.makeOptions()
        options.clock = clock
        options.initialContext = EvaluationContext(targetingKey: "u1")
        options.exposures.dedupWindow = .seconds(60)
        options.exposures.flushInterval = .zero
        let client = try FlagClient(options: options)
        defer { client.close() }
        #expect(try await Wait.result("ready(timeout:)") { await client.ready(timeout: .seconds(30)) })
        let recorder = try #require(client.exposureRecorder)
        let recorded = { client.stats.exposures.recorded }

        // Keyed reads through both read paths: one recorder call each, then the slot answers.
        for _ in 0..<1_000 {
            _ = client.bool("f", default: false)
            _ = client.string("s", default: "")
        }
        #expect(recorded() == 2, "every read reached the recorder: the slot was not kept")
        #expect(client.stats.exposures.deduplicated == 0)
        // A handle starts from the snapshot's slot: no call for a flag already exposed.
        let handle = client.handle("f", default: false)
        for _ in 0..<1_000 { _ = handle.value }
        #expect(recorded() == 2)

        // Just before the window ends: still nothing.
        clock.advance(by: .seconds(59))
        recorder.tick()
        for _ in 0..<100 {
            _ = client.bool("f", default: false)
            _ = handle.value
            _ = client.string("s", default: "")
        }
        #expect(recorded() == 2)

        // The window ended: one call per flag again, whichever path reads first.
        clock.advance(by: .seconds(1))
        recorder.tick()
        for _ in 0..<100 {
            _ = handle.value
            _ = client.bool("f", default: false)
            _ = client.stringDetail("s", default: "")
        }
        #expect(recorded() == 4, "the slot did not expire with the window")
        #expect(client.stats.exposures.deduplicated == 0)
        #expect(try await Wait.result("flushExposures()") { await client.flushExposures() }.sentEvents == 4)

        // After close, reads record nothing and never call the recorder again.
        client.close()
        for _ in 0..<10 { _ = client.bool("f", default: true) }
        client.recordExposure("f")
        #expect(recorded() == 4)
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

    @Test func oneUploadAtATimeWhateverTheNumberOfFlushers() async throws {
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
        try await Wait.until("every event to be sent") { r.counters.pending == 0 }
        let s = t.state.value
        #expect(s.maxInFlight == 1)
        #expect(s.requests >= 10)  // automatic drains may also take partial batches meanwhile
        #expect(r.counters.sent == 95)
    }

    @Test func aDroppedRecorderStopsItsTicker() async throws {
        let clock = ManualClock()
        do {
            let r = ExposureRecorder(
                options: ExposureOptions(), clock: clock, transport: ScriptedExposureTransport(),
                endpoint: URL(string: "http://127.0.0.1:9")!,
                meta: ExposureMeta(sdk: "s", version: "1", appId: "a", installId: "i"))
            r.recordExposure(key: "k", variant: nil, reason: .split, contextFingerprint: "f")
            try await Wait.until("the ticker to sleep on the clock") { clock.sleeperCount == 1 }
            _ = r.coarseNow()
        }
        try await Wait.until("the dropped recorder's ticker to stop") { clock.sleeperCount == 0 }
    }

    @Test func pythonEndpointSelfCheckPasses() throws {
        let script = ExposureServer.scriptURL.deletingLastPathComponent().appendingPathComponent("exposure_endpoint.py")
        let result = try #require(ExposureGzipTests.run("python3", [script.path]), "python3 is required")
        #expect(result.status == 0)
        #expect(String(decoding: result.output, as: UTF8.self).contains("ok"))
    }
}
