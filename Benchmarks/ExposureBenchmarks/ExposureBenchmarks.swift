import BenchmarkSupport
// halyard-bench-exposures: the exposure pipeline's costs (docs/benchmarks-exposures.md).
//
//   swift run -c release halyard-bench-exposures [--quick]
//
// 1. gzip of a 1,000-event batch: time and ratio, reused z_stream (deflateReset) vs a fresh
//    deflateInit2_ per body, alternated A B A B so machine drift hits both.
// 2. 64 threads recording first exposures of distinct flags at once: throughput, nothing lost.
// 3. The slow path of recordExposure for an event already de-duplicated (and a first exposure).
// 4. Encoding 1,000 events: the SPEC §7 body vs the OTLP/HTTP JSON body, alternated, with gzip.
// 5. The de-duplicated slow path with a value (OTLP recorder) vs without (SPEC §7), alternated,
//    with allocations per call.
import CMallocCounter
import CZlib
import Dispatch
import Foundation
import Halyard

@main
struct ExposureBenchmarks {
    static let quick = CommandLine.arguments.contains("--quick")

    static func nanos() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    static func events(_ n: Int) -> [ExposureEvent] {
        var out: [ExposureEvent] = []
        for i in 0..<n {
            // Realistic: a few hundred flag keys, SHA-1 fingerprints, a handful of variants.
            var fp = ""
            var h = UInt64(i) &* 0x9E37_79B9_7F4A_7C15
            for _ in 0..<3 { fp += String(format: "%016llx", h); h = h &* 6_364_136_223_846_793_005 &+ 1 }
            out.append(
                ExposureEvent(
                    key: "team-\(i % 12).feature-\(i % 300).enabled", variant: i % 6 == 0 ? nil : "variant-\(i % 4)",
                    reason: i % 3 == 0 ? "SPLIT" : "TARGETING_MATCH",
                    contextFingerprint: String(fp.prefix(40)), creationDate: 1_800_000_000 + Int64(i / 10)))
        }
        return out
    }

    static func main() async {
        print(
            "halyard-bench-exposures\(quick ? " --quick" : "")  \(ISO8601DateFormatter().string(from: Date()))  cores: \(ProcessInfo.processInfo.activeProcessorCount)"
        )
        gzipBenchmark()
        await concurrentFirstExposures()
        slowPath()
        encodingComparison()
        slowPathWithValue()
    }

    // MARK: 1. gzip

    static func gzipBenchmark() {
        let meta = ExposureMeta(
            sdk: "halyard-swift", version: "0.1.0", appId: "bench-app", installId: "6f1c2a7e-install")
        let batch = events(1_000)
        var encodeTimes: [Double] = []
        var json: [UInt8] = []
        for _ in 0..<(quick ? 20 : 200) {
            let t0 = nanos()
            json = ExposureEncoder.encode(meta: meta, events: batch)
            encodeTimes.append(Double(nanos() - t0) / 1_000)
        }
        let reused = GzipCompressor(reusesStream: true)
        let fresh = GzipCompressor(reusesStream: false)
        let fast = GzipCompressor(level: 1, reusesStream: true)
        var tReused: [Double] = [], tFresh: [Double] = [], tFast: [Double] = []
        var sizeReused = 0, sizeFast = 0
        let rounds = quick ? 30 : 300
        for _ in 0..<5 { _ = reused.compress(json); _ = fresh.compress(json); _ = fast.compress(json) }
        for _ in 0..<rounds {
            var t0 = nanos()
            sizeReused = reused.compress(json)?.count ?? -1
            tReused.append(Double(nanos() - t0) / 1_000)
            t0 = nanos()
            _ = fresh.compress(json)
            tFresh.append(Double(nanos() - t0) / 1_000)
            t0 = nanos()
            sizeFast = fast.compress(json)?.count ?? -1
            tFast.append(Double(nanos() - t0) / 1_000)
        }
        // Small bodies are where the per-body init cost matters: 10 events.
        let smallJSON = ExposureEncoder.encode(meta: meta, events: events(10))
        var sReused: [Double] = [], sFresh: [Double] = []
        for _ in 0..<(quick ? 200 : 2_000) {
            var t0 = nanos()
            _ = reused.compress(smallJSON)
            sReused.append(Double(nanos() - t0) / 1_000)
            t0 = nanos()
            _ = fresh.compress(smallJSON)
            sFresh.append(Double(nanos() - t0) / 1_000)
        }
        print("")
        print("## gzip, 1,000-event batch")
        print("JSON body: \(json.count) bytes, encoded in \(fmt(median(encodeTimes), 1)) µs (median)")
        print(
            "level 6, reused stream : median \(fmt(median(tReused), 1)) µs  p90 \(fmt(percentile(tReused, 0.9), 1)) µs  -> \(sizeReused) bytes, ratio \(fmt(Double(json.count) / Double(sizeReused), 2))x"
        )
        print(
            "level 6, fresh init    : median \(fmt(median(tFresh), 1)) µs  p90 \(fmt(percentile(tFresh, 0.9), 1)) µs  (fresh/reused \(fmt(median(tFresh) / median(tReused), 3)))"
        )
        print(
            "level 1, reused stream : median \(fmt(median(tFast), 1)) µs  -> \(sizeFast) bytes, ratio \(fmt(Double(json.count) / Double(sizeFast), 2))x"
        )
        print(
            "10-event body (\(smallJSON.count) bytes): reused \(fmt(median(sReused), 1)) µs, fresh \(fmt(median(sFresh), 1)) µs (fresh/reused \(fmt(median(sFresh) / median(sReused), 2)))"
        )
    }

    // MARK: 2. 64 threads

    struct NullTransport: FlagTransport {
        func send(_ request: TransportRequest) async throws -> TransportResponse { TransportResponse(status: 202) }
    }

    static func runThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) -> Double {
        let group = DispatchGroup()
        let ready = DispatchSemaphore(value: 0)
        let go = DispatchSemaphore(value: 0)
        for index in 0..<count {
            group.enter()
            Thread {
                ready.signal()
                go.wait()
                body(index)
                group.leave()
            }.start()
        }
        for _ in 0..<count { ready.wait() }
        let t0 = nanos()
        for _ in 0..<count { go.signal() }
        group.wait()
        return Double(nanos() - t0) / 1e9
    }

    static func concurrentFirstExposures() async {
        let threads = 64
        let perThread = quick ? 1_000 : 5_000
        print("")
        print("## \(threads) threads recording first exposures of distinct flags")
        for trial in 0..<(quick ? 1 : 3) {
            var o = ExposureOptions()
            o.capacity = threads * perThread
            o.dedupCapacity = threads * perThread
            let recorder = ExposureRecorder(
                options: o, clock: SystemClock(), transport: NullTransport(),
                endpoint: URL(string: "http://127.0.0.1:9")!,
                meta: ExposureMeta(sdk: "b", version: "0", appId: "a", installId: "i"),
                startsTicker: false)
            let keys = (0..<perThread).map { "feature-\($0).enabled" }
            let fps = (0..<threads).map { String(format: "%040x", $0 * 104_729) }
            let seconds = runThreads(threads) { t in
                let fp = fps[t]
                for key in keys {
                    _ = recorder.recordExposure(
                        key: key, variant: "on", reason: .targetingMatch, contextFingerprint: fp)
                }
            }
            _ = await recorder.flush()
            let c = recorder.counters
            let total = threads * perThread
            let lost = total - (c.sent + c.pending + c.dropped)
            print(
                "trial \(trial): \(total) events in \(fmt(seconds * 1_000, 1)) ms = \(fmt(Double(total) / seconds / 1e6, 2)) M events/s, \(fmt(seconds * 1e9 / Double(total), 1)) ns/event; recorded \(c.recorded) sent \(c.sent) dropped \(c.dropped) dedup \(c.deduplicated) lost \(lost)"
            )
        }
        // Single-thread baseline, same work.
        var o = ExposureOptions()
        o.capacity = perThread * 8
        let recorder = ExposureRecorder(
            options: o, clock: SystemClock(), transport: NullTransport(),
            endpoint: URL(string: "http://127.0.0.1:9")!,
            meta: ExposureMeta(sdk: "b", version: "0", appId: "a", installId: "i"),
            startsTicker: false)
        let keys = (0..<perThread).map { "feature-\($0).enabled" }
        let seconds = runThreads(1) { _ in
            for t in 0..<8 {
                let fp = String(format: "%040x", t * 104_729)
                for key in keys {
                    _ = recorder.recordExposure(
                        key: key, variant: "on", reason: .targetingMatch, contextFingerprint: fp)
                }
            }
        }
        print("1 thread baseline: \(fmt(seconds * 1e9 / Double(perThread * 8), 1)) ns/event")
        _ = await recorder.flush()
    }

    // MARK: 3. slow path

    static func slowPath() {
        let recorder = ExposureRecorder(
            options: ExposureOptions(), clock: SystemClock(), transport: NullTransport(),
            endpoint: URL(string: "http://127.0.0.1:9")!,
            meta: ExposureMeta(sdk: "b", version: "0", appId: "a", installId: "i"),
            startsTicker: false)
        let fp = String(repeating: "3f", count: 20)
        let key = "checkout.new-flow.enabled"
        _ = recorder.recordExposure(key: key, variant: "treatment", reason: .split, contextFingerprint: fp)
        let batch = 1_000
        var perCall: [Double] = []
        var coarse: [Double] = []
        var hashes: [Double] = []
        var dedupKeys: [Double] = []
        var clockReads: [Double] = []
        var sink: UInt64 = 0
        let clock = SystemClock()
        for _ in 0..<(quick ? 200 : 2_000) {
            var t0 = nanos()
            for _ in 0..<batch {
                sink &+= UInt64(
                    recorder.recordExposure(key: key, variant: "treatment", reason: .split, contextFingerprint: fp))
            }
            perCall.append(Double(nanos() - t0) / Double(batch))
            t0 = nanos()
            for _ in 0..<batch { sink &+= UInt64(recorder.coarseNow()) }
            coarse.append(Double(nanos() - t0) / Double(batch))
            t0 = nanos()
            for _ in 0..<batch { sink &+= ExposureHash.hash(fingerprint: fp, key: key, variant: "treatment") }
            hashes.append(Double(nanos() - t0) / Double(batch))
            t0 = nanos()
            for _ in 0..<batch { sink &+= ExposureHash.dedupKey(fingerprint: fp, key: key, variant: "treatment") }
            dedupKeys.append(Double(nanos() - t0) / Double(batch))
            t0 = nanos()
            for _ in 0..<batch { sink &+= UInt64(truncatingIfNeeded: clock.monotonicNow.components.attoseconds) }
            clockReads.append(Double(nanos() - t0) / Double(batch))
        }
        print("")
        print("## recordExposure slow path, already de-duplicated (1 thread, batches of \(batch))")
        print(
            "median \(fmt(median(perCall), 1)) ns/call  p10 \(fmt(percentile(perCall, 0.1), 1)) p90 \(fmt(percentile(perCall, 0.9), 1)) p99 \(fmt(percentile(perCall, 0.99), 1))"
        )
        print(
            "parts: de-dup key of the triple (\(fp.utf8.count + key.utf8.count + 9) bytes) \(fmt(median(dedupKeys), 1)) ns, clock read \(fmt(median(clockReads), 1)) ns; for comparison FNV-1a (sampling hash, first exposures only) \(fmt(median(hashes), 1)) ns"
        )
        print("coarseNow() (the read path's check): median \(fmt(median(coarse), 2)) ns/call")
        let c = recorder.counters
        print(
            "counters: recorded \(c.recorded) deduplicated \(c.deduplicated) pending \(c.pending)  (sink \(sink % 10))")
    }

    // MARK: 4. SPEC §7 vs OTLP encoding

    /// The benchmark batch with a value on every event that has no variant (what the OTLP
    /// exporter writes as `feature_flag.result.value`).
    static func eventsWithValues(_ n: Int) -> [ExposureEvent] {
        events(n).enumerated().map { i, e in
            var e = e
            if e.variant == nil {
                switch i % 4 {
                case 0: e.value = .bool(true)
                case 1: e.value = .int(Int64(i))
                case 2: e.value = .string("blue")
                default: e.value = .object(["limit": .int(3), "ratio": .double(0.25)])
                }
            }
            return e
        }
    }

    static func encodingComparison() {
        let meta = ExposureMeta(
            sdk: "halyard-swift", version: "0.1.0", appId: "bench-app", installId: "6f1c2a7e-install")
        let resource = OTLPLogsEncoder.Resource(meta: meta, processName: "bench")
        let batch = eventsWithValues(1_000)
        var spec: [Double] = [], otlp: [Double] = [], ratios: [Double] = []
        var specBody: [UInt8] = [], otlpBody: [UInt8] = []
        for _ in 0..<5 {
            specBody = ExposureEncoder.encode(meta: meta, events: batch)
            otlpBody = OTLPLogsEncoder.encode(resource: resource, events: batch)
        }
        for round in 0..<(quick ? 30 : 300) {
            // A B, then B A: drift and cache warmth hit both.
            var a = 0.0, b = 0.0
            for order in (round % 2 == 0 ? [0, 1] : [1, 0]) {
                let t0 = nanos()
                if order == 0 {
                    specBody = ExposureEncoder.encode(meta: meta, events: batch)
                    a = Double(nanos() - t0) / 1_000
                } else {
                    otlpBody = OTLPLogsEncoder.encode(resource: resource, events: batch)
                    b = Double(nanos() - t0) / 1_000
                }
            }
            spec.append(a)
            otlp.append(b)
            ratios.append(b / a)
        }
        let gzip = GzipCompressor(reusesStream: true)
        var gSpec: [Double] = [], gOTLP: [Double] = []
        var zSpec = 0, zOTLP = 0
        for _ in 0..<(quick ? 20 : 100) {
            var t0 = nanos()
            zSpec = gzip.compress(specBody)?.count ?? -1
            gSpec.append(Double(nanos() - t0) / 1_000)
            t0 = nanos()
            zOTLP = gzip.compress(otlpBody)?.count ?? -1
            gOTLP.append(Double(nanos() - t0) / 1_000)
        }
        print("")
        print("## encoding 1,000 events: SPEC §7 body vs OTLP/HTTP JSON body (alternated, same run)")
        print(
            "SPEC §7: median \(fmt(median(spec), 1)) µs per 1,000 events  p90 \(fmt(percentile(spec, 0.9), 1))  -> \(specBody.count) bytes, gzip \(zSpec) bytes in \(fmt(median(gSpec), 1)) µs"
        )
        print(
            "OTLP   : median \(fmt(median(otlp), 1)) µs per 1,000 events  p90 \(fmt(percentile(otlp, 0.9), 1))  -> \(otlpBody.count) bytes, gzip \(zOTLP) bytes in \(fmt(median(gOTLP), 1)) µs"
        )
        print(
            "OTLP/SPEC §7: encode \(fmt(median(ratios), 2))x (median of paired ratios; p10 \(fmt(percentile(ratios, 0.1), 2)) p90 \(fmt(percentile(ratios, 0.9), 2))), body \(fmt(Double(otlpBody.count) / Double(specBody.count), 2))x, gzipped \(fmt(Double(zOTLP) / Double(zSpec), 2))x, encode+gzip \(fmt((median(otlp) + median(gOTLP)) / (median(spec) + median(gSpec)), 2))x"
        )
    }

    // MARK: 5. de-duplicated slow path with a value

    static func slowPathWithValue() {
        func make(_ exporter: ExposureExporter) -> ExposureRecorder {
            var o = ExposureOptions()
            o.exporter = exporter
            return ExposureRecorder(
                options: o, clock: SystemClock(), transport: NullTransport(),
                endpoint: URL(string: "http://127.0.0.1:9")!,
                meta: ExposureMeta(sdk: "b", version: "0", appId: "a", installId: "i"),
                startsTicker: false)
        }
        let spec = make(.halyard)
        let otlp = make(.otlp(endpoint: URL(string: "http://127.0.0.1:9")!, headers: [:]))
        let fp = String(repeating: "3f", count: 20)
        let key = "checkout.new-flow.limits"
        let value: JSONValue = .object(["limit": .int(3), "ratio": .double(0.25)])
        for r in [spec, otlp] {
            r.recordExposure(
                key: key, variant: nil, reason: .split, contextFingerprint: fp, value: value, errorCode: nil)
        }
        let batch = 1_000
        var tSpec: [Double] = [], tOTLP: [Double] = []
        var allocations: [UInt64] = [0, 0]
        var sink: UInt64 = 0
        for round in 0..<(quick ? 200 : 2_000) {
            for which in (round % 2 == 0 ? [0, 1] : [1, 0]) {
                let r = which == 0 ? spec : otlp
                let m0 = halyard_malloc_count()
                let t0 = nanos()
                for _ in 0..<batch {
                    sink &+= UInt64(
                        r.recordExposure(
                            key: key, variant: nil, reason: .split, contextFingerprint: fp,
                            value: value, errorCode: nil))
                }
                let dt = Double(nanos() - t0) / Double(batch)
                allocations[which] += halyard_malloc_count() - m0
                if which == 0 { tSpec.append(dt) } else { tOTLP.append(dt) }
            }
        }
        let calls = Double(tSpec.count * batch)
        print("")
        print("## recordExposure de-duplicated, no variant, value passed (1 thread, batches of \(batch), alternated)")
        print(
            "SPEC §7 recorder (value not kept): median \(fmt(median(tSpec), 1)) ns/call, \(fmt(Double(allocations[0]) / calls, 4)) allocations/call"
        )
        print(
            "OTLP recorder    (value kept)    : median \(fmt(median(tOTLP), 1)) ns/call, \(fmt(Double(allocations[1]) / calls, 4)) allocations/call  (OTLP/SPEC \(fmt(median(tOTLP) / median(tSpec), 2))x)"
        )
        print(
            "counters: SPEC \(spec.counters.deduplicated) deduplicated, OTLP \(otlp.counters.deduplicated) deduplicated (sink \(sink % 10))"
        )
        print(
            "ExposureEvent: \(MemoryLayout<ExposureEvent>.size) bytes inline, stride \(MemoryLayout<ExposureEvent>.stride)"
        )
    }
}
