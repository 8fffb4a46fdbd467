import BenchmarkSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The parent: starts the control plane, Redis and the workers, drives the phases of each mode,
/// and prints the report.
struct FleetBench {
    let options: Options
    let runStart = Date()

    /// The flag set the control plane serves, changed by each event (17 flags).
    static func document(version: Int) -> [String: Any] {
        var items: [[String: Any]] = (0..<16).map { i in
            ["key": "fleet.flag-\(i)", "value": (i + version) % 2 == 0, "reason": "STATIC"]
        }
        items.append(["key": "fleet.version", "value": version, "reason": "STATIC"])
        return ["default": items]
    }

    func run() {
        print("# halyard-bench-fleet\(options.quick ? " (quick)" : "")")
        print(
            "date: \(ISO8601DateFormatter().string(from: Date()))  cores: \(ProcessInfo.processInfo.activeProcessorCount)  load average: \(loadAverage())"
        )
        print(
            "fleet: \(options.processes) processes x \(fmt(options.rate, 0)) flags(for:) a second (open loop), \(options.contexts) contexts Zipf(\(options.zipf)); control plane server.py answering after \(fmt(options.latencyMs, 0)) ms, event stream on"
        )
        print(
            "phases per mode: warm-up \(fmt(options.warmupSeconds, 0)) s, steady \(fmt(options.steadySeconds, 0)) s, 1 unmeasured + \(options.eventCount) change events (load \(fmt(options.windowSeconds, 0)) s before each, paused during its wave)"
        )
        var report = FleetReport(
            date: ISO8601DateFormatter().string(from: Date()), quick: options.quick, processes: options.processes,
            contexts: options.contexts, ratePerProcess: options.rate, zipf: options.zipf, latencyMs: options.latencyMs)
        var redis: RedisServer?
        if !options.withoutL2Only {
            switch RedisServer.start() {
            case .success(let server):
                redis = server
                report.redis = "redis-server on 127.0.0.1:\(server.port) (--save '' --appendonly no)"
                print("redis: \(report.redis!)")
            case .failure(let error):
                print("redis: \(error): only the mode without L2 runs (apt-get install -y redis-server)")
            }
        }
        defer { redis?.stop() }
        do {
            report.modes.append(try runMode(redis: nil))
            if let redis {
                _ = redis.command(["FLUSHALL"])
                report.modes.append(try runMode(redis: redis))
            }
        } catch {
            print("error: \(error)")
            redis?.stop()
            exit(1)
        }
        finish(&report)
        redis?.stop()
        redis = nil
        if let path = options.json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            encoder.nonConformingFloatEncodingStrategy = .convertToString(
                positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
            do {
                try encoder.encode(report).write(to: URL(fileURLWithPath: path))
                print("wrote \(path)")
            } catch { print("could not write \(path): \(error)") }
        }
        print("run took \(Int(Date().timeIntervalSince(runStart))) s")
    }

    /// One mode: a fresh control plane and fresh workers, with or without the L2.
    func runMode(redis: RedisServer?) throws -> ModeFigures {
        var figures = ModeFigures(name: redis == nil ? "without L2" : "with L2", sharedCache: redis != nil)
        print("\n## \(figures.name)")
        let server = try LoopbackServerProcess(document: Self.document(version: 0), label: "halyard-bench-fleet")
        defer { server.stop() }
        let admin = ControlPlaneAdmin(baseURL: server.baseURL)
        try admin.call(
            "POST", "/_admin/settings", json: ["evaluateDelay": options.latencyMs / 1000, "logRequests": false])
        try admin.call("POST", "/_admin/stream", json: ["advertise": "endpoint", "keepAlive": 5])

        var arguments = [
            "--base-url", server.baseURL.absoluteString, "--contexts", "\(options.contexts)", "--rate",
            "\(options.rate)", "--zipf", "\(options.zipf)",
        ]
        if let redis { arguments += ["--redis", redis.url.absoluteString] }
        var workers: [WorkerProcess] = []
        defer { for worker in workers { _ = worker.quit() } }
        for i in 0..<options.processes {
            workers.append(try WorkerProcess(index: i, arguments: arguments + ["--seed", "\(1000 + i)"]))
        }
        var warnings = Set<String>()
        for worker in workers { warnings.formUnion(try worker.receive("ready").warnings ?? []) }
        var misses: [(worker: Int, miss: Miss)] = []
        func collect(_ messages: [WorkerMessage]) {
            for (i, message) in messages.enumerated() { misses += (message.misses ?? []).map { (i, $0) } }
            figures.skippedCalls += messages.reduce(0) { $0 + ($1.skipped ?? 0) }
        }
        func all(_ command: String, _ type: String) throws -> [WorkerMessage] {
            for worker in workers { worker.send(command) }
            return try workers.map { try $0.receive(type) }
        }

        // Warm-up, then the steady state.
        for worker in workers { worker.send("run") }
        sleep(seconds: options.warmupSeconds)
        collect(try all("report", "report"))
        let steadyStart = try admin.counters
        let steadyClock = Date()
        sleep(seconds: options.steadySeconds)
        let steadyEnd = try admin.counters
        let steadyElapsed = Date().timeIntervalSince(steadyClock)
        var paused = try all("pause", "paused")
        let steadyMisses = paused.reduce(0) { $0 + ($1.misses?.count ?? 0) }
        collect(paused)
        figures.controlPlanePerSecond = Double(steadyEnd.evaluate - steadyStart.evaluate) / steadyElapsed
        figures.conditionalPerSecond = Double(steadyEnd.conditional - steadyStart.conditional) / steadyElapsed
        figures.callsPerSecond = Double(paused.reduce(0) { $0 + ($1.calls ?? 0) }) / steadyElapsed
        figures.l1MissesPerSecond = Double(steadyMisses) / steadyElapsed
        figures.streamsConnected = paused.filter { $0.stats?.streamConnected == true }.count
        print(
            "  steady: \(fmt(figures.controlPlanePerSecond, 1)) control-plane requests/s (\(fmt(figures.conditionalPerSecond, 1)) conditional) for \(fmt(figures.callsPerSecond, 0)) flags(for:)/s, \(fmt(figures.l1MissesPerSecond, 1)) L1 misses/s; streams connected: \(figures.streamsConnected)/\(workers.count)"
        )

        // Change events: the first aligns the services' "used since the last wave" with the
        // windows measured here (the uses before it go back to the stream's connect).
        for event in 0...options.eventCount {
            if event > 0 {
                for worker in workers { worker.send("run") }
                sleep(seconds: options.windowSeconds)
                paused = try all("pause", "paused")
                collect(paused)
            }
            var result = try changeEvent(version: event + 1, admin: admin, workers: workers, paused: paused)
            var union = Set<Int>()
            for message in paused { union.formUnion(message.used ?? []) }
            result.hotContexts = union.count
            result.podHotContexts = paused.reduce(0) { $0 + ($1.used?.count ?? 0) }
            var everywhere = Set(paused.first?.used ?? [])
            for message in paused.dropFirst() { everywhere.formIntersection(message.used ?? []) }
            result.usedByEveryProcess = everywhere.count
            if event == 0 {
                print(
                    "  event 0 (unmeasured): \(result.requests) requests, wave over after \(fmt(result.waveSeconds)) s")
                continue
            }
            figures.events.append(result)
            print(
                "  event \(event): \(result.requests) requests (\(result.conditional) conditional) for \(result.hotContexts) hot contexts (\(fmt(result.requestsPerHotContext))x; processes' own hot sets sum to \(result.podHotContexts), \(result.usedByEveryProcess) used by every process); wave over after \(fmt(result.waveSeconds)) s; \(result.processesWaved)/\(workers.count) processes waved"
            )
        }

        let last = try admin.counters
        figures.totalRequests = last.evaluate
        figures.distinctContextsFetched = last.distinctContexts
        for worker in workers {
            let bye = worker.quit()
            warnings.formUnion(bye?.warnings ?? [])
            figures.requestsSent += bye?.stats?.requestsSent ?? 0
            if let l2 = bye?.stats?.sharedCache {
                figures.l2 = (figures.l2 ?? SharedCacheFigures()) + l2
            }
        }
        workers = []
        figures.warnings = warnings.sorted()
        if let redis {
            figures.redisKeys = redis.keys
            figures.redisCommands = redis.info("total_commands_processed")
        }
        print(
            "  requests sent by the services: \(figures.requestsSent) (the control plane counted \(figures.totalRequests))"
        )
        if let l2 = figures.l2 {
            print(
                "  L2 (stats.sharedCache, all processes): \(l2.hits) hits, \(l2.misses) misses, \(l2.writes) writes, \(l2.leasesTaken) leases taken, \(l2.leaseWaits) lease waits (\(l2.leaseWaitHits) ended with the entry), \(l2.errors) errors, \(l2.skippedCalls) calls skipped, \(l2.breakerOpenings) breaker openings, \(l2.rejectedEntries) entries rejected; Redis: \(figures.redisKeys) keys"
            )
        }
        classify(misses, into: &figures)
        for warning in figures.warnings { print("  logged: \(warning)") }
        return figures
    }

    /// Sends one change and waits until its wave is over: every process started a wave and
    /// nothing moved (control-plane requests, requests sent, fetches in flight) for a while.
    func changeEvent(version: Int, admin: ControlPlaneAdmin, workers: [WorkerProcess], paused: [WorkerMessage])
        throws -> EventFigures
    {
        let before = try admin.counters
        let wavesBefore = paused.map { $0.stats?.streamWaves ?? 0 }
        let start = Date()
        try admin.call("POST", "/_admin/stream/change", json: ["flags": Self.document(version: version)])
        var lastMove = start
        var lastEvaluate = before.evaluate
        var lastSent = -1
        var waved = 0
        while Date().timeIntervalSince(start) < 30 {
            usleep(100_000)
            let counters = try admin.counters
            for worker in workers { worker.send("stats") }
            let stats = try workers.map { try $0.receive("stats").stats ?? WorkerStats() }
            let sent = stats.reduce(0) { $0 + $1.requestsSent }
            let inFlight = stats.reduce(0) { $0 + $1.fetchesInFlight }
            waved = zip(stats, wavesBefore).filter { $0.streamWaves > $1 }.count
            if counters.evaluate != lastEvaluate || sent != lastSent || inFlight > 0 {
                if counters.evaluate != lastEvaluate || inFlight > 0 { lastMove = Date() }
                lastEvaluate = counters.evaluate
                lastSent = sent
            }
            if waved == workers.count && Date().timeIntervalSince(lastMove) >= options.quietSeconds { break }
        }
        let after = try admin.counters
        return EventFigures(
            requests: after.evaluate - before.evaluate, conditional: after.conditional - before.conditional,
            waveSeconds: lastMove.timeIntervalSince(start), processesWaved: waved)
    }

    /// Sorts the L1 misses of every process by what the fleet knew when each was asked: the
    /// first of the fleet for its context, one after another process had finished its first
    /// request for it (what the L2 serves once wired), one while that request was in flight.
    func classify(_ misses: [(worker: Int, miss: Miss)], into figures: inout ModeFigures) {
        var first: [Int: (worker: Int, start: UInt64, end: UInt64)] = [:]
        for (worker, miss) in misses {
            if let known = first[miss.id], known.start <= miss.start { continue }
            first[miss.id] = (worker, miss.start, miss.start + miss.nanos)
        }
        var classes: [[Miss]] = [[], [], []]
        for (worker, miss) in misses {
            guard let owner = first[miss.id] else { continue }
            if owner.worker == worker && owner.start == miss.start {
                classes[0].append(miss)
            } else if miss.start >= owner.end {
                classes[1].append(miss)
            } else {
                classes[2].append(miss)
            }
        }
        func latency(_ misses: [Miss]) -> LatencyFigures {
            let ms = misses.map { Double($0.nanos) / 1e6 }
            return LatencyFigures(
                count: misses.count, p50ms: percentile(ms, 0.5), p99ms: percentile(ms, 0.99),
                defaultsServed: misses.filter { !$0.served }.count)
        }
        figures.firstInFleet = latency(classes[0])
        figures.afterAnotherProcess = latency(classes[1])
        figures.whileAnotherFetched = latency(classes[2])
        for (name, l) in [
            ("first in the fleet", figures.firstInFleet), ("after another process had it", figures.afterAnotherProcess),
            ("while another process fetched it", figures.whileAnotherFetched),
        ] {
            print(
                "  L1 miss, \(name): \(l.count) misses, p50 \(fmt(significant: l.p50ms)) ms, p99 \(fmt(significant: l.p99ms)) ms, \(l.defaultsServed) served defaults"
            )
        }
    }

    func sleep(seconds: Double) { usleep(useconds_t(seconds * 1e6)) }

    func loadAverage() -> String {
        var loads = [Double](repeating: 0, count: 3)
        guard getloadavg(&loads, 3) == 3 else { return "?" }
        return loads.map { fmt($0) }.joined(separator: " ")
    }
}
