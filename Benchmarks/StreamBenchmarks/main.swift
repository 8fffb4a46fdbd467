// Propagation latency of a change on the control plane to the first read that sees it (SPEC §14):
// streaming vs polling at 30 s, one client and a service holding many contexts.
//
//   swift run -c release halyard-bench-stream [--quick] [--loopback] [--json FILE]
//
// By default the control plane is IN-PROCESS (an in-memory StreamingTransport: no sockets), so
// the figures are the client's own pipeline (stream parse → machine → coalesced fetch → decode →
// snapshot publish → read), not loopback networking. With --loopback it is the tests' server.py
// on 127.0.0.1 (advertising a flagd-shaped stream) and the platform's default transport (libcurl
// on Linux): a change is the admin request that replaces the flag set and writes the
// refetchEvaluation event, and its latency runs from before that request to the first read that
// sees the new value. Polling at 30 s is SIMULATED: a change
// lands uniformly within the jittered poll period, so its latency is the wait for the next poll
// plus the measured fetch time (no 30 s sleeps).
import BenchmarkSupport
import Foundation
import Halyard

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

struct Options {
    var quick = false
    var loopback = false
    var json: String?
    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--quick": quick = true
            case "--loopback": loopback = true
            case "--json": json = iterator.next()
            default:
                FileHandle.standardError.write(Data("unknown argument \(argument)\n".utf8))
                exit(2)
            }
        }
    }
}

/// The control plane a run measures against: in process, or server.py on loopback.
protocol BenchPlane: Sendable {
    /// The transport the clients use (nil: the platform's default).
    var transport: (any FlagTransport)? { get }
    var baseURL: URL { get }
    /// Changes the flag set and announces it on the open streams; answers the new version.
    func change() async -> Int
    /// Bulk requests the plane has answered.
    func fetchCount() async -> Int
}

/// server.py (Tests/ControlPlaneServer) on 127.0.0.1, advertising a flagd-shaped stream.
final class LoopbackPlane: BenchPlane, @unchecked Sendable {
    let server: LoopbackServerProcess
    let session = URLSession(configuration: .ephemeral)
    private let lock = NSLock()
    private var version = 1
    var transport: (any FlagTransport)? { nil }
    var baseURL: URL { server.baseURL }

    init() async throws {
        server = try LoopbackServerProcess(document: Self.document(1), label: "halyard-bench-stream")
        _ = try await admin("_admin/stream", ["advertise": "endpoint", "mode": "flagd", "keepAlive": 5.0])
    }

    static func document(_ version: Int) -> [String: Any] {
        ["default": [["key": "version", "value": version, "reason": "STATIC"]]]
    }

    func admin(_ path: String, _ body: [String: Any]?) async throws -> [String: Any] {
        var request = URLRequest(url: server.baseURL.appendingPathComponent(path))
        if let body {
            request.httpMethod = "POST"
            request.httpBody = try JSONSerialization.data(withJSONObject: body)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, _) = try await session.data(for: request)
        return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
    }

    func change() async -> Int {
        let next = lock.withLock { () -> Int in
            version += 1
            return version
        }
        do {
            _ = try await admin("_admin/stream/change", ["flags": Self.document(next)])
        } catch {
            fatalError("the loopback change failed: \(error)")
        }
        return next
    }

    func fetchCount() async -> Int {
        let report = (try? await admin("_admin/streams", nil)) ?? [:]
        return (report["bulk"] as? [Any])?.count ?? 0
    }

    func stop() { server.stop() }
}

/// An in-memory control plane that streams: a versioned flag set and open SSE connections.
final class InProcessControlPlane: StreamingTransport, BenchPlane, @unchecked Sendable {
    var transport: (any FlagTransport)? { self }
    var baseURL: URL { URL(string: "http://127.0.0.1:1")! }

    func change() async -> Int {
        announce()
        return currentVersion
    }

    func fetchCount() async -> Int { fetches }

    private let lock = NSLock()
    private var version = 1
    private var streams: [AsyncThrowingStream<Data, any Error>.Continuation] = []
    private var fetchCount = 0

    var fetches: Int { lock.withLock { fetchCount } }
    var currentVersion: Int { lock.withLock { version } }

    func announce() {
        let targets = lock.withLock { () -> [AsyncThrowingStream<Data, any Error>.Continuation] in
            version += 1
            return streams
        }
        let event = Data("data: {\"type\":\"refetchEvaluation\",\"etag\":\"\\\"v\(currentVersion)\\\"\"}\n\n".utf8)
        for c in targets { c.yield(event) }
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let v = lock.withLock { () -> Int in
            fetchCount += 1
            return version
        }
        let etag = "\"v\(v)\""
        if request.headers["If-None-Match"] == etag { return TransportResponse(status: 304, headers: ["ETag": etag]) }
        let body =
            #"{"flags":[{"key":"version","value":\#(v),"reason":"STATIC"}],"#
            + #""eventStreams":[{"type":"sse","endpoint":{"requestUri":"/ofrep/v1/sse"}}]}"#
        return TransportResponse(status: 200, headers: ["ETag": etag], body: Data(body.utf8))
    }

    func openStream(_ request: TransportRequest, inactivityTimeout: Duration) async throws -> TransportStream {
        let (stream, continuation) = AsyncThrowingStream<Data, any Error>.makeStream()
        lock.withLock { streams.append(continuation) }
        return TransportStream(
            status: 200, headers: ["Content-Type": "text/event-stream"], chunks: stream,
            onCancel: { continuation.finish() })
    }
}

func seconds(_ d: Duration) -> Double { d.fractionalSeconds }
func ms(_ s: Double) -> String { String(format: "%.2f ms", s * 1000) }

/// Waits (real time, bounded, polling every 5 ms) until `condition` holds; returns whether it did.
func spinAsync(upTo limit: Duration = .seconds(10), _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + limit
    while !(await condition()) {
        if ContinuousClock.now > deadline { return false }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return true
}

/// Waits (real time, bounded) until `condition` holds; returns whether it did.
@MainActor func spin(upTo limit: Duration = .seconds(10), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + limit
    while !condition() {
        if ContinuousClock.now > deadline { return false }
        try? await Task.sleep(for: .microseconds(50))
    }
    return true
}

func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
say("starting")
let options = Options(CommandLine.arguments)
let quick = options.quick
var results: [String: Any] = [:]
var verdicts: [(String, Bool, String)] = []
say(
    "# halyard-bench-stream\(quick ? " (quick)" : "") — "
        + (options.loopback ? "server.py on loopback, default transport" : "in-process control plane")
        + ", machine load not controlled")

/// A fresh plane of the kind the run measures.
func makePlane() async throws -> any BenchPlane {
    options.loopback ? try await LoopbackPlane() : InProcessControlPlane()
}
func stopPlane(_ plane: any BenchPlane) { (plane as? LoopbackPlane)?.stop() }

// MARK: - One client

/// First-seen times of each version a reader observed, and the start time of each change:
/// written from the changer and the reader, read once both have stopped.
final class BurstLog: @unchecked Sendable {
    private let lock = NSLock()
    private var starts: [Int: ContinuousClock.Instant] = [:]
    private var seen: [Int: ContinuousClock.Instant] = [:]
    func started(_ version: Int, at instant: ContinuousClock.Instant) { lock.withLock { starts[version] = instant } }
    func saw(_ version: Int, at instant: ContinuousClock.Instant) {
        lock.withLock { if seen[version] == nil { seen[version] = instant } }
    }
    /// Each change's latency: from its start to the first read of it or of a later version.
    func latencies() -> [Double] {
        lock.withLock {
            let seenVersions = seen.keys.sorted()
            return starts.keys.sorted().compactMap { version -> Double? in
                guard let start = starts[version] else { return nil }
                // The first read of this version or of a later one.
                let firsts = seenVersions.filter { $0 >= version }.compactMap { seen[$0] }
                guard let first = firsts.min() else { return nil }
                return seconds(first - start)
            }
        }
    }
}

/// One client's client-side pipeline under two workloads that users meet:
/// - **isolated** changes, each made after the previous one was seen and the client's event-fetch
///   spacing (SPEC §14: the first event fetch at once, then at most 5 per second) has passed: the
///   latency of a kill switch;
/// - a **burst**, a change every 10 ms: each change's latency is bounded by the spacing, and the
///   requests per change show the coalescing.
/// Back-to-back changes (the next one as soon as the previous is seen) would measure the spacing
/// itself (~200 ms each), not the pipeline.
let clientChanges = quick ? 40 : 300
let burstChanges = quick ? 50 : 300
let spacing = 0.2  // EventStreamMachine's minEventFetchSpacing
do {
    let plane = try await makePlane()
    var o = FlagClientOptions(baseURL: plane.baseURL, key: "cli-bench")
    o.transport = plane.transport
    o.pollInterval = .seconds(30)
    o.exposures.enabled = false
    o.maxCachedContexts = 0
    o.installIDStorage = .memory
    let client = try FlagClient(options: o)
    guard await spin({ client.stats.stream.connected && client.int("version", default: 0) == 1 })
    else { fatalError("the stream did not connect") }
    try? await Task.sleep(for: .milliseconds(50))
    var latencies: [Double] = []
    var fetchTimes: [Double] = []
    let fetchesBefore = await plane.fetchCount()
    let sentBefore = client.stats.sync.requestsSent
    var lastFetchStart = ContinuousClock.now
    for _ in 0..<clientChanges {
        // Isolated: past the spacing since the previous change's fetch began (+ 50 ms of margin).
        let wait = lastFetchStart + .milliseconds(Int64(spacing * 1000) + 50) - ContinuousClock.now
        if wait > .zero { try? await Task.sleep(for: wait) }
        let start = ContinuousClock.now
        let target = await plane.change()
        guard await spin({ client.int("version", default: 0) == target }) else { fatalError("change not seen") }
        latencies.append(seconds(ContinuousClock.now - start))
        lastFetchStart = start
        // Let the coalesced fetch settle so that changes do not overlap.
        let answered = await plane.fetchCount()
        _ = await spin { client.stats.sync.requestsSent - sentBefore >= answered - fetchesBefore }
    }
    let perChange = Double(await plane.fetchCount() - fetchesBefore) / Double(clientChanges)

    // Burst: a change every 10 ms while a reader records the first read of every version.
    try? await Task.sleep(for: .milliseconds(Int64(spacing * 1000) + 50))
    let log = BurstLog()
    let burstFetchesBefore = await plane.fetchCount()
    let changer = Task {
        for _ in 0..<burstChanges {
            let start = ContinuousClock.now
            let version = await plane.change()
            log.started(version, at: start)
            try? await Task.sleep(until: start + .milliseconds(10), clock: .continuous)
        }
        return await plane.change()  // unmeasured: its version ends the reader
    }
    let reader = Task.detached {
        let limit = ContinuousClock.now + .seconds(Int64(Double(burstChanges) * 0.01 + 30))
        var last = client.int("version", default: 0)
        while ContinuousClock.now < limit {
            let version = client.int("version", default: 0)
            if version != last {
                log.saw(version, at: ContinuousClock.now)
                last = version
            }
            if Task.isCancelled { break }
            try? await Task.sleep(for: .microseconds(50))
        }
    }
    let finalVersion = await changer.value
    _ = await spin(upTo: .seconds(30)) { client.int("version", default: 0) >= finalVersion }
    reader.cancel()
    _ = await reader.value
    let burst = log.latencies()
    let burstPerChange = Double(await plane.fetchCount() - burstFetchesBefore) / Double(burstChanges + 1)

    // A plain fetch, for the simulated polling figure.
    for _ in 0..<50 {
        let start = ContinuousClock.now
        await client.refresh()
        fetchTimes.append(seconds(ContinuousClock.now - start))
    }
    client.close()
    stopPlane(plane)
    let p50 = percentile(latencies, 0.5)
    let p99 = percentile(latencies, 0.99)
    let burstP50 = percentile(burst, 0.5)
    let burstP99 = percentile(burst, 0.99)
    // Polling at 30 s ± 10 %, simulated: wait for the next poll + a measured fetch.
    var rng = SystemRandomNumberGenerator()
    var polled: [Double] = []
    let fetch = percentile(fetchTimes, 0.5)
    for _ in 0..<100_000 {
        let period = 30 * Double.random(in: 0.9...1.1, using: &rng)
        polled.append(Double.random(in: 0..<period, using: &rng) + fetch)
    }
    say("\n## one client")
    say(
        "isolated changes (\(clientChanges), each past the \(Int(spacing * 1000)) ms event-fetch spacing): "
            + "p50 \(ms(p50)), p99 \(ms(p99)), requests per change \(String(format: "%.2f", perChange))")
    say(
        "burst (\(burstChanges) changes, one every 10 ms; \(burst.count) measured): p50 \(ms(burstP50)), "
            + "p99 \(ms(burstP99)), requests per change \(String(format: "%.2f", burstPerChange))")
    say(
        "polling 30 s (simulated): p50 \(ms(percentile(polled, 0.5))), p99 \(ms(percentile(polled, 0.99))), "
            + "requests: 1 per poll whatever the changes")
    results["client"] = [
        "changes": clientChanges, "streamP50": p50, "streamP99": p99, "requestsPerChange": perChange,
        "burstChanges": burstChanges, "burstMeasured": burst.count, "burstP50": burstP50, "burstP99": burstP99,
        "burstRequestsPerChange": burstPerChange,
        "pollingSimulatedP50": percentile(polled, 0.5), "pollingSimulatedP99": percentile(polled, 0.99),
    ]
    verdicts.append(("one client, isolated changes p99 <= 10 ms", p99 <= 0.010, ms(p99)))
    verdicts.append(("one client, burst p99 <= 250 ms", burstP99 <= 0.25, ms(burstP99)))
    verdicts.append(("one client, burst: every change measured", burst.count == burstChanges, "\(burst.count)"))
}

// MARK: - Service

let held = quick ? 1_000 : 10_000
let serviceChanges = quick ? 10 : 200
do {
    let plane = try await makePlane()
    var o = FlagServiceOptions(baseURL: plane.baseURL, key: "srv-bench")
    o.transport = plane.transport
    o.exposures.enabled = false
    // Room for every context: the cache bounds each shard by its share of maxContexts, so a
    // bound of exactly `held` would evict a few from the fuller shards.
    o.maxContexts = held * 2
    o.refreshAfter = .seconds(3600)
    o.maxStaleness = .seconds(7200)
    o.coldFetchTimeout = .seconds(5)
    let service = try FlagService(options: o)
    let contexts = try (0..<held).map { try EvaluationContext(targetingKey: "user-\($0)").fitted() }
    say("warming \(held) contexts")
    for context in contexts { _ = await service.flags(for: context) }
    if !(await spin({ service.stats.stream.connected && service.stats.fetching.inFlight == 0 })) {
        say("the service stream did not connect")
    }
    // The connect wave refreshes every held context once (held / 200 s at 200 requests/s); let
    // it end: no request for half a second, not only a moment with none in flight (the wave's
    // workers wait for tokens with nothing in flight).
    // The stream opens after the first bulk response, early in the warm-up: most contexts were
    // used after its connect wave began, so one more wave (a change) refreshes them all before
    // the measured changes start.
    func settle() async {
        let settleLimit = ContinuousClock.now + .seconds(Int64(held / 100 + 30))
        var lastCount = -1
        while ContinuousClock.now < settleLimit {
            let count = await plane.fetchCount()
            if count == lastCount && service.stats.fetching.inFlight == 0 && service.stats.streaming.waves >= 1 {
                break
            }
            lastCount = count
            try? await Task.sleep(for: .milliseconds(500))
        }
    }
    await settle()
    _ = await plane.change()
    await settle()
    say("connected; waves \(service.stats.streaming.waves)")
    try? await Task.sleep(for: .seconds(1))
    let hot = Array(contexts.suffix(100))
    var hotFirst: [Double] = []
    var hotAll: [Double] = []
    let before = await plane.fetchCount()
    for _ in 0..<serviceChanges {
        for context in hot { _ = service.flagsIfCached(for: context) }
        let start = ContinuousClock.now
        let target = await plane.change()
        var first: Double?
        let seen = await spin {
            let count = hot.filter { service.flagsIfCached(for: $0).int("version", default: 0) == target }.count
            if count > 0, first == nil { first = seconds(ContinuousClock.now - start) }
            return count == hot.count
        }
        guard seen else {
            say("hot contexts did not see the change within 10 s")
            break
        }
        hotAll.append(seconds(ContinuousClock.now - start))
        hotFirst.append(first ?? 0)
        _ = await spin { service.stats.fetching.inFlight == 0 }
        // Let the token bucket refill (100 tokens at 200/s) so changes do not overlap.
        try? await Task.sleep(for: .milliseconds(520))
    }
    let perChange = Double(await plane.fetchCount() - before) / Double(serviceChanges)
    // All held: one change after every held context was used. A use of a context that an
    // earlier change marked stale refreshes it in the background, and a refresh after the use
    // takes it out of the next wave ("used since its last refresh"): use them all, let those
    // refreshes end, then use them all again.
    for context in contexts { _ = service.flagsIfCached(for: context) }
    await settle()
    for context in contexts { _ = service.flagsIfCached(for: context) }
    _ = await spin { service.stats.fetching.inFlight == 0 }
    let allBefore = await plane.fetchCount()
    let start = ContinuousClock.now
    _ = await plane.change()
    var allSent = 0
    _ = await spinAsync(upTo: .seconds(Int64(held / 100 + 30))) {
        allSent = await plane.fetchCount() - allBefore
        return allSent >= held && service.stats.fetching.inFlight == 0
    }
    let allTime = seconds(ContinuousClock.now - start)
    let st = service.stats
    say(
        "stats after it: held \(st.cache.contextsHeld), bytes \(st.cache.bytesHeld), evictions \(st.cache.evictions), "
            + "shed \(st.fetching.shed), dropped \(st.fetching.dropped), waves \(st.streaming.waves), "
            + "wave refreshes \(st.streaming.refreshes), background \(st.fetching.backgroundRefreshes)")
    service.close()
    stopPlane(plane)
    say("\n## service holding \(held) contexts (\(serviceChanges) changes, hottest 100 used between changes)")
    say(
        "hottest 100 all see it: p50 \(ms(percentile(hotAll, 0.5))), p99 \(ms(percentile(hotAll, 0.99))); "
            + "first of them: p50 \(ms(percentile(hotFirst, 0.5))); requests per change \(String(format: "%.1f", perChange))"
    )
    say(
        "all \(held) held (all used since the last wave): \(allSent) refreshed in \(String(format: "%.1f s", allTime)) "
            + "(bounded by 200 requests/s by design)")
    say("polling: a service does not poll; without a stream a change is seen after refreshAfter (30 s) on next use")
    results["service"] = [
        "held": held, "changes": serviceChanges, "hot100P50": percentile(hotAll, 0.5),
        "hot100P99": percentile(hotAll, 0.99), "requestsPerChange": perChange, "allHeldSeconds": allTime,
    ]
    let hotP99 = percentile(hotAll, 0.99)
    verdicts.append(("service hottest 100 p99 <= 250 ms", hotP99 <= 0.25, ms(hotP99)))
    verdicts.append(("service hottest 100 p99 <= 100 ms (stretch)", hotP99 <= 0.1, ms(hotP99)))
}

say("\n## verdicts")
for (name, pass, detail) in verdicts { say("\(pass ? "PASS" : "FAIL")  \(name): \(detail)") }
results["verdicts"] = verdicts.map { ["name": $0.0, "pass": $0.1, "detail": $0.2] }
if let path = options.json {
    let document: [String: Any] = [
        "benchmark": "halyard-bench-stream", "quick": quick, "loopback": options.loopback,
        "date": ISO8601DateFormatter().string(from: Date()),
        "results": results,
    ]
    // A figure that could not be measured (no sample: NaN) is written as null, not a crash.
    func finite(_ value: Any) -> Any {
        switch value {
        case let number as Double: return number.isFinite ? number : NSNull()
        case let array as [Any]: return array.map(finite)
        case let object as [String: Any]: return object.mapValues(finite)
        default: return value
        }
    }
    let data = try JSONSerialization.data(withJSONObject: finite(document), options: [.prettyPrinted, .sortedKeys])
    try data.write(to: URL(fileURLWithPath: path))
    say("wrote \(path)")
}
exit(0)
