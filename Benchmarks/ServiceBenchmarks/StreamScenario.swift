import BenchmarkSupport
import Foundation
import Halyard
import HalyardTesting

// Section 10: the warm path with an event stream connected against the same service polling
// (`changeDetection = .polling`), and what one event costs at many held contexts (also alone:
// `--stream-only`).

/// The workload's in-memory plane, streaming: every 200 advertises an SSE stream, and
/// ``announce()`` writes a `refetchEvaluation` to the open streams. Values never change, so a
/// wave's refreshes are answered 304 (the plane's ETag), as a change to other contexts would be.
final class StreamingBenchPlane: StreamingTransport, Sendable {
    /// The workload's plane, answering every request.
    let inner: InMemoryControlPlane
    private let streams = Locked<[AsyncThrowingStream<Data, any Error>.Continuation]>([])
    private let events = Locked(0)

    /// A streaming plane in front of `inner`.
    init(_ inner: InMemoryControlPlane) { self.inner = inner }

    /// Answers through the inner plane; a 200's body gains the stream advertisement.
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        var response = try await inner.send(request)
        guard response.status == 200, request.url.path.hasSuffix("/ofrep/v1/evaluate/flags"),
            response.body.last == UInt8(ascii: "}")
        else { return response }
        var body = response.body.dropLast()
        body.append(contentsOf: #","eventStreams":[{"type":"sse","endpoint":{"requestUri":"/ofrep/v1/sse"}}]}"#.utf8)
        response.body = Data(body)
        return response
    }

    /// A stream that stays open until cancelled; events come from ``announce()``.
    func openStream(_ request: TransportRequest, inactivityTimeout: Duration) async throws -> TransportStream {
        let (stream, continuation) = AsyncThrowingStream<Data, any Error>.makeStream()
        streams.withLock { $0.append(continuation) }
        return TransportStream(
            status: 200, headers: ["Content-Type": "text/event-stream"], chunks: stream,
            onCancel: { continuation.finish() })
    }

    /// Writes one `refetchEvaluation` to every open stream.
    func announce() {
        let n = events.withLock { e -> Int in
            e += 1
            return e
        }
        let event = Data("data: {\"type\":\"refetchEvaluation\",\"etag\":\"\\\"e\(n)\\\"\"}\n\n".utf8)
        for continuation in streams.withLock({ $0 }) { continuation.yield(event) }
    }
}

extension ServiceBench {
    /// Section 10: two services over the same plane, one streaming and one polling, each holding
    /// the same warm contexts; the warm path timed on both, alternating blocks; then one event
    /// with every held context used, on the streaming service: the time until its wave is queued,
    /// what the uses held cost, and the warm path while the wave's refreshes run.
    func streamWarmPath() async throws -> StreamWarmPath {
        let held = quick ? 2_000 : 10_000
        let samples = options.samples ?? (quick ? 20_000 : 100_000)
        let inner = makePlane(latency: .milliseconds(2))
        let plane = StreamingBenchPlane(inner)
        func service(_ detection: ChangeDetection) throws -> FlagService {
            var o = FlagServiceOptions(baseURL: InMemoryControlPlane.baseURL, key: "srv-bench")
            o.transport = plane
            o.changeDetection = detection
            o.installID = "halyard-bench-service"
            o.maxContexts = held * 2
            o.maxCacheBytes = 512 << 20
            o.coldFetchTimeout = .seconds(5)
            o.refreshAfter = .seconds(3600)
            o.maxStaleness = .seconds(7200)
            o.exposures.enabled = false
            o.maxQueuedFetches = 100_000
            return try FlagService(options: o)
        }
        let streaming = try service(.automatic)
        let polling = try service(.polling)
        defer {
            streaming.close()
            polling.close()
        }
        let contexts = (0..<held).map(context)
        let fitted = try contexts.map { try $0.fitted() }
        // The stream connects after the first 200: connect first, so the contexts warmed after
        // it are fresh (its connect wave marks only what was held before it stale).
        _ = await streaming.flags(for: fitted[0])
        let connectLimit = ContinuousClock.now + .seconds(10)
        while !streaming.stats.stream.connected && ContinuousClock.now < connectLimit {
            try? await Task.sleep(for: .milliseconds(1))
        }
        let connected = streaming.stats.stream.connected
        await warm(streaming, count: held)
        await warm(polling, count: held)
        while streaming.stats.fetching.inFlight > 0 || polling.stats.fetching.inFlight > 0 {
            try? await Task.sleep(for: .milliseconds(5))
        }

        // The warm path, pre-fitted and fitting, alternating blocks of the two services.
        let rounds = 10
        var withStream: (context: [Double], fitted: [Double]) = ([], [])
        var without: (context: [Double], fitted: [Double]) = ([], [])
        for round in 0..<(2 * rounds) {
            let useStream = round % 2 == 0
            let (context, fittedTimes, _) = await measureWarm(
                useStream ? streaming : polling, contexts, fitted, samples: samples / rounds, path: "both")
            if useStream {
                withStream.context += context
                withStream.fitted += fittedTimes
            } else {
                without.context += context
                without.fitted += fittedTimes
            }
        }
        let ratioContextP50 = percentile(withStream.context, 0.5) / percentile(without.context, 0.5)
        let ratioFittedP50 = percentile(withStream.fitted, 0.5) / percentile(without.fitted, 0.5)
        let ratioContextP99 = percentile(withStream.context, 0.99) / percentile(without.context, 0.99)
        let ratioFittedP99 = percentile(withStream.fitted, 0.99) / percentile(without.fitted, 0.99)
        func us(_ values: [Double], _ p: Double) -> String { fmt(percentile(values, p) / 1000) }
        print(
            "\n## 10. warm path with a stream connected vs polling (\(held) held contexts, \(samples) requests per path each, alternating blocks)"
        )
        print(
            "  stream connected: flags(for: EvaluationContext) p50 \(us(withStream.context, 0.5)) µs p99 \(us(withStream.context, 0.99)) µs; FittedContext p50 \(us(withStream.fitted, 0.5)) µs p99 \(us(withStream.fitted, 0.99)) µs"
        )
        print(
            "  polling:          flags(for: EvaluationContext) p50 \(us(without.context, 0.5)) µs p99 \(us(without.context, 0.99)) µs; FittedContext p50 \(us(without.fitted, 0.5)) µs p99 \(us(without.fitted, 0.99)) µs"
        )
        print(
            "  with / without: p50 \(fmt(ratioContextP50))x (pre-fitted \(fmt(ratioFittedP50))x), p99 \(fmt(ratioContextP99))x (pre-fitted \(fmt(ratioFittedP99))x)"
        )
        verdict(
            "warm path with a stream connected <= 1.1x without (p50)", connected && ratioContextP50 <= 1.1,
            connected ? "\(fmt(ratioContextP50))x (pre-fitted \(fmt(ratioFittedP50))x)" : "the stream did not connect")

        // One event with every held context used since the last wave.
        for context in fitted { _ = streaming.flagsIfCached(for: context) }
        let usesHeld = streaming.stats.streaming.usesHeld
        let useBytes = streaming.stats.streaming.useBytes
        let wavesBefore = streaming.stats.streaming.waves
        let cpuBefore = cpuSeconds()
        let start = ContinuousClock.now
        plane.announce()
        let waveLimit = start + .seconds(30)
        while streaming.stats.streaming.waves == wavesBefore && ContinuousClock.now < waveLimit {}
        let queued = ContinuousClock.now - start
        let queuedCPU = cpuSeconds() - cpuBefore
        let queuedMs = queued.fractionalSeconds * 1e3
        // The warm path while the wave's refreshes run (200 requests/s: the whole wave takes
        // held / 200 s; this samples its first seconds).
        let (duringContext, duringFitted, _) = await measureWarm(
            streaming, contexts, fitted, samples: samples / rounds, path: "both")
        let duringRatio = percentile(duringContext, 0.5) / percentile(withStream.context, 0.5)
        print(
            "  one event, \(held) held contexts all used: \(usesHeld) uses held (\(useBytes / 1024) KiB, \(fmt(Double(useBytes) / Double(max(usesHeld, 1)), 0)) B each); wave queued \(fmt(queuedMs)) ms after the event (CPU \(fmt(queuedCPU * 1e3)) ms, the spinning reader included)"
        )
        print(
            "  warm path during the wave: p50 \(us(duringContext, 0.5)) µs p99 \(us(duringContext, 0.99)) µs (pre-fitted p50 \(us(duringFitted, 0.5)) µs): \(fmt(duringRatio))x the quiet p50"
        )
        return StreamWarmPath(
            held: held, connected: connected, samples: samples,
            streamP50us: percentile(withStream.context, 0.5) / 1000,
            streamP99us: percentile(withStream.context, 0.99) / 1000,
            pollingP50us: percentile(without.context, 0.5) / 1000,
            pollingP99us: percentile(without.context, 0.99) / 1000,
            ratioP50: ratioContextP50, ratioP99: ratioContextP99, fittedRatioP50: ratioFittedP50,
            fittedRatioP99: ratioFittedP99, usesHeld: usesHeld, useBytes: useBytes, waveQueuedMs: queuedMs,
            duringWaveP50us: percentile(duringContext, 0.5) / 1000,
            duringWaveP99us: percentile(duringContext, 0.99) / 1000)
    }
}
