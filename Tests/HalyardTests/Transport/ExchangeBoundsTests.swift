import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// The smaller review findings on the transports and the pipeline (SPEC §5, §8, §11): the
/// response-header bound holds for a whole exchange, every redirect hop of an event stream shares
/// one head timeout, a refused redirect on an upload is dropped rather than retried forever, and
/// `curl_global_init`'s result is checked.
@Suite(.serialized) struct ExchangeBoundsTests {
    /// Three same-origin redirects of 30,000 header bytes each pass a 64 KiB bound one by one
    /// (until then each hop had the whole bound), not together.
    @Test(arguments: TransportKind.available)
    func theHeaderBoundHoldsForTheWholeExchange(kind: TransportKind) async throws {
        let server = try await ControlPlaneServer.launched(flags: ["default": [["key": "a", "value": true]]])
        defer { server.stop() }
        let pad = String(repeating: "p", count: 30_000)
        try await server.script([
            [
                "action": "status", "status": 307, "count": 3,
                "headers": ["Location": "/ofrep/v1/evaluate/flags", "X-Pad": pad],
            ]
        ])
        let request = TransportRequest(
            url: server.baseURL.appendingPathComponent("ofrep/v1/evaluate/flags"),
            headers: ["Content-Type": "application/json"], body: Data(#"{"context":{}}"#.utf8), timeout: .seconds(10))
        do {
            let response = try await kind.make().send(request)
            Issue.record("\(kind): 90,000 header bytes in one exchange were accepted (status \(response.status))")
        } catch let error as TransportError {
            guard case .responseTooLarge = error else {
                Issue.record("\(kind): \(error)")
                return
            }
        }
        // One redirect of that size is fine.
        try await server.reset()
        try await server.script([
            ["action": "status", "status": 307, "headers": ["Location": "/ofrep/v1/evaluate/flags", "X-Pad": pad]]
        ])
        let response = try await kind.make().send(request)
        #expect(response.status == 200)
    }

    /// Every hop of a redirected stream shares the request's head timeout (until then each hop
    /// got a fresh one: 3 slow redirects took 4 timeouts, then failed as too many redirects).
    @Test func streamRedirectHopsShareOneHeadTimeout() async throws {
        let url = try #require(URL(string: "https://flags.example/ofrep/v1/stream"))
        let timeouts = Locked([Duration]())
        let request = TransportRequest(method: "GET", url: url, timeout: .seconds(2))
        let started = ContinuousClock.now
        await #expect(throws: TransportError.timedOut) {
            _ = try await RedirectPolicy.openStream(request) { hop in
                timeouts.withLock { $0.append(hop.timeout) }
                try await Task.sleep(for: .milliseconds(800))  // a slow head, each time
                let (chunks, _) = AsyncThrowingStream<Data, any Error>.makeStream()
                return TransportStream(
                    status: 307, headers: ["Location": "/ofrep/v1/stream"], chunks: chunks, onCancel: {})
            }
        }
        let seen = timeouts.withLock { $0 }
        #expect((2...3).contains(seen.count), "\(seen)")
        #expect(seen.first == .seconds(2))
        for (earlier, later) in zip(seen, seen.dropFirst()) {
            #expect(later <= earlier - .milliseconds(700), "\(seen)")
        }
        #expect(ContinuousClock.now - started < .seconds(6))
    }

    /// A redirect the transport refuses would be refused on every retry: the batch is dropped
    /// (counted failed and dropped) instead of being retried until the buffer overflows.
    @Test func aRefusedRedirectOnAnUploadIsDroppedNotRetried() async throws {
        for exporter in [ExposureExporter.halyard, .otlp(endpoint: OTLPDeliveryTests.endpoint, headers: [:])] {
            let transport = OTLPDeliveryTests.ScriptedTransport([
                .failure(.redirectRefused(origin: "elsewhere.example:443", reason: .otherOrigin))
            ])
            let r = OTLPDeliveryTests.recorder(transport, clock: ManualClock(), edit: { $0.exporter = exporter })
            OTLPDeliveryTests.record(r, 3)
            let result = await r.flush()
            #expect(result.retryAfter == nil, "\(exporter)")
            #expect(r.counters.pending == 0, "\(exporter)")
            #expect(r.counters.dropped == 3 && r.counters.failed == 1, "\(exporter)")
            #expect(OTLPDeliveryTests.identityHolds(r.counters))
            #expect(transport.requests.count == 1)
        }
    }

    #if canImport(CHalyardCurl)
        static var libcurlLoads: Bool {
            if case .success = CurlLibrary.shared { return true }
            return false
        }

        /// `curl_global_init`'s result is checked: a library that cannot initialise is not used
        /// (the default transport then falls back to URLSession).
        @Test(.enabled(if: Self.libcurlLoads, "libcurl did not load: no library to initialise"))
        func aFailedGlobalInitMakesLibcurlUnavailable() throws {
            guard case .success(let library) = CurlLibrary.shared else {
                Issue.record("libcurl did not load although the trait said it did")
                return
            }
            guard case .failure(let why) = CurlLibrary.initialize(library, globalInit: { 2 }) else {
                Issue.record("a failed curl_global_init was accepted")
                return
            }
            #expect(why.reason.contains("curl_global_init failed"), "\(why)")
            #expect(throws: Never.self) { try CurlLibrary.initialize(library, globalInit: { 0 }).get() }
        }
    #endif
}
