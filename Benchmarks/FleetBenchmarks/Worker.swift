import BenchmarkSupport
import Foundation
import Halyard
import Synchronization

// A worker process (`halyard-bench-fleet --worker …`): one FlagService, asking for contexts
// drawn from a seeded Zipf distribution at a fixed rate (open loop: the same schedule whatever
// the answers take) while the parent says `run`. Commands on stdin, one a line: `run`,
// `report` (L1 misses and calls so far), `pause` (stop asking, wait for the calls in flight,
// report with the contexts used since the last pause), `stats`, `quit`.

/// The worker's command line (given by the parent).
struct WorkerOptions {
    var index = 0
    var seed: UInt64 = 1
    var baseURL = URL(string: "http://127.0.0.1:1")!
    var redis: URL?
    var contexts = 10_000
    var rate = 200.0
    var zipfS = 1.1

    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--worker": break
            case "--index": index = iterator.next().flatMap { Int($0) } ?? 0
            case "--seed": seed = iterator.next().flatMap { UInt64($0) } ?? 1
            case "--base-url": baseURL = iterator.next().flatMap { URL(string: $0) } ?? baseURL
            case "--redis": redis = iterator.next().flatMap { URL(string: $0) }
            case "--contexts": contexts = iterator.next().flatMap { Int($0) } ?? contexts
            case "--rate": rate = iterator.next().flatMap { Double($0) } ?? rate
            case "--zipf": zipfS = iterator.next().flatMap { Double($0) } ?? zipfS
            default:
                warn("worker: unknown argument \(argument)")
                exit(2)
            }
        }
    }
}

/// What the calls of one worker record, shared by its tasks.
struct WorkerRecord: Sendable {
    var seen = Set<Int>()
    var used = Set<Int>()
    var misses: [Miss] = []
    var calls = 0
    var skipped = 0
    var inFlight = 0
}

enum FleetWorker {
    static func run(_ options: WorkerOptions) async {
        let warnings = Locked<[String]>([])
        var o = FlagServiceOptions(baseURL: options.baseURL, key: "srv-fleet-bench")
        o.installID = "halyard-bench-fleet-\(options.index)"
        o.exposures.enabled = false
        o.maxContexts = max(10_000, options.contexts)
        o.maxCacheBytes = 256 << 20
        o.sharedCache = options.redis.map { .redis(url: $0) }
        o.logHandler = { level, message in
            if level >= .warning { warnings.withLock { $0.append("\(level): \(message)") } }
        }
        let service: FlagService
        do {
            service = try FlagService(options: o)
        } catch {
            warn("worker \(options.index): \(error)")
            exit(1)
        }
        let contexts = (0..<options.contexts).map { ServiceWorkload.context($0) }
        let zipf = Zipf(n: options.contexts, s: options.zipfS)
        let record = Locked(WorkerRecord())
        let stop = Locked(false)
        var rng = SplitMix64(state: options.seed)
        var load: Task<SplitMix64, Never>?

        send(WorkerMessage(type: "ready", warnings: warnings.withLock { $0 }, stats: stats(service)))
        for await command in commands() {
            switch command {
            case "run":
                guard load == nil else { continue }
                stop.withLock { $0 = false }
                load = Task { [rng] in
                    await Self.load(
                        service: service, contexts: contexts, zipf: zipf, rng: rng, rate: options.rate,
                        record: record, stop: stop)
                }
            case "report":
                let (misses, calls, skipped) = record.withLock { r in
                    defer { (r.misses, r.calls, r.skipped) = ([], 0, 0) }
                    return (r.misses, r.calls, r.skipped)
                }
                send(
                    WorkerMessage(type: "report", misses: misses, calls: calls, skipped: skipped, stats: stats(service))
                )
            case "pause":
                stop.withLock { $0 = true }
                if let running = load { rng = await running.value }
                load = nil
                let (used, misses, calls, skipped) = record.withLock { r in
                    defer { (r.used, r.misses, r.calls, r.skipped) = ([], [], 0, 0) }
                    return (r.used, r.misses, r.calls, r.skipped)
                }
                send(
                    WorkerMessage(
                        type: "paused", used: used.sorted(), misses: misses, calls: calls, skipped: skipped,
                        stats: stats(service)))
            case "stats":
                send(WorkerMessage(type: "stats", stats: stats(service)))
            case "quit":
                stop.withLock { $0 = true }
                if let running = load { _ = await running.value }
                let final = stats(service)
                service.close()
                send(WorkerMessage(type: "bye", warnings: warnings.withLock { $0 }, stats: final))
                exit(0)
            default:
                warn("worker \(options.index): unknown command \(command)")
            }
        }
        service.close()
    }

    /// Asks for `rate` contexts a second until `stop`, each in a task of its own (at most 512 in
    /// flight); the first request of a context in this worker is an L1 miss and is timed.
    /// Returns the generator, so the next `run` continues its sequence.
    static func load(
        service: FlagService, contexts: [EvaluationContext], zipf: Zipf, rng: SplitMix64, rate: Double,
        record: Locked<WorkerRecord>, stop: Locked<Bool>
    ) async -> SplitMix64 {
        var rng = rng
        let start = ContinuousClock.now
        var issued = 0
        await withDiscardingTaskGroup { group in
            while !stop.withLock({ $0 }) {
                let elapsed = ContinuousClock.now - start
                let seconds = elapsed.fractionalSeconds
                let due = Int(seconds * rate) - issued
                for _ in 0..<max(due, 0) {
                    issued += 1
                    let id = zipf.sample(rng.unit())
                    let first: Bool? = record.withLock { r in
                        guard r.inFlight < 512 else {
                            r.skipped += 1
                            return nil
                        }
                        r.inFlight += 1
                        r.calls += 1
                        r.used.insert(id)
                        return r.seen.insert(id).inserted
                    }
                    guard let first else { continue }
                    let context = contexts[id]
                    group.addTask {
                        let begin = monotonicNanos()
                        let flags = await service.flags(for: context)
                        let end = monotonicNanos()
                        record.withLock { r in
                            r.inFlight -= 1
                            if first {
                                r.misses.append(Miss(id: id, start: begin, nanos: end - begin, served: flags.hasValues))
                            }
                        }
                    }
                }
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
        return rng
    }

    /// The stats fields the parent reads.
    static func stats(_ service: FlagService) -> WorkerStats {
        let s = service.stats
        return WorkerStats(
            requestsSent: s.fetching.requests, hits: s.cache.hits, misses: s.cache.misses, coldWaits: s.cache.coldWaits,
            timeouts: s.cache.coldWaitTimeouts,
            contextsHeld: s.cache.contextsHeld, notModified: s.fetching.notModified,
            fetchesInFlight: s.fetching.inFlight,
            backgroundRefreshes: s.fetching.backgroundRefreshes, streamConnected: s.stream.connected,
            streamWaves: s.streaming.waves, streamRefreshes: s.streaming.refreshes, fetchTimeouts: s.fetching.timeouts,
            networkErrors: s.fetching.networkErrors, droppedFetches: s.fetching.dropped, shedFetches: s.fetching.shed,
            sharedCache: s.sharedCache.map {
                SharedCacheFigures(
                    hits: $0.hits, misses: $0.misses, writes: $0.writes, leaseWaits: $0.leaseWaits,
                    leaseWaitHits: $0.leaseWaitHits, leasesTaken: $0.leasesTaken, rejectedEntries: $0.rejectedEntries,
                    errors: $0.errors, skippedCalls: $0.skippedCalls, breakerOpenings: $0.breakerOpenings)
            })
    }

    /// One JSON line on stdout.
    static func send(_ message: WorkerMessage) {
        var data = (try? JSONEncoder().encode(message)) ?? Data("{\"type\":\"error\"}".utf8)
        data.append(0x0A)
        FileHandle.standardOutput.write(data)
    }

    /// The command lines of stdin, read on a thread of their own.
    static func commands() -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        let thread = Thread {
            while let line = readLine() {
                continuation.yield(line.trimmingCharacters(in: .whitespaces))
            }
            continuation.finish()
        }
        thread.start()
        return stream
    }
}
