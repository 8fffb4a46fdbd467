import Foundation
import HalyardTesting

@testable import Halyard

/// One propagation run (docs/testing.md, "The propagation checker"): a schedule drawn from a
/// seed, played in real time against a ``SimulatedControlPlane`` by one `FlagService` (two
/// sharing a real `redis-server` when one is given: a fleet), four `FlagClient`s, and reader
/// tasks recording every read into a ``PropagationHistory`` for ``PropagationChecker``.
///
/// The schedule (times in the run's real time): flag changes all along, each announced 0-300 ms
/// late, sometimes twice, sometimes never (so events overtake each other); in the first third,
/// the disruptions: windows of 429/503 bulk answers with `Retry-After` (seconds or an HTTP
/// date), a stream outage (every stream closed, opens answered 503 with one shared HTTP date,
/// sometimes the URL rotated, sometimes one client told 600 s and then sent to the background
/// and back), key rotations (a change announced just before, so old-key answers cross
/// `setKey`; the old key revoked 50-250 ms after), clients going inactive and identifying;
/// cache churn bursts that evict held contexts all along. The last 2.5 s change nothing, so
/// every window closes inside the run.
struct PropagationWorkload: Sendable {
    /// Reader ids: 0 and 1 are services (1 only with Redis), 2... are clients.
    static let clientIDs = [2, 3, 4, 5]
    static let hotContexts = (0..<8).map { "h\($0)" }
    /// Held contexts read about every 650 ms: often not used between two events (a wave's
    /// uses), which is when a crossed refresh must still be marked.
    static let warmContexts = (0..<8).map { "w\($0)" }
    static let maxCacheBytes = 48 << 10

    enum Step: Sendable {
        case change(env: Int, flags: [Int], delays: [Duration])
        case bulkFaults(length: Duration, probability: Double)
        case streamOutage(rotate: Bool, window: Duration, longReader: Int?)
        case rotateKeys(group: [Int])
        case deactivate(reader: Int, length: Duration)
        case identify(reader: Int)
        case churn(count: Int)
    }

    let seed: UInt64
    let duration: Duration
    let perAnswerToken: Bool
    let steps: [(at: Duration, step: Step)]

    /// Draws the schedule of `seed` for a run of `duration` (at least 8 s).
    init(seed: UInt64, duration: Duration, fleet: Bool) {
        self.seed = seed
        self.duration = duration
        var random = SplitMix64(seed: seed)
        perAnswerToken = random.chance(0.3)
        var steps: [(at: Duration, step: Step)] = []
        let quiet = duration - .milliseconds(2500)
        let disrupt = Duration.seconds(4)
        func at(_ from: Duration, _ to: Duration) -> Duration {
            from + random.duration(upTo: to - from)
        }
        // A stream outage (every stream closed; opens refused with one HTTP date for 1-2 s),
        // sometimes with the URL rotated, sometimes followed by a lull: no change and no key
        // rotation for 3.5 s (a re-learn fetch is then answered 304, as on a quiet plane), and
        // no cold fetch for 7.5 s (a cold context's 200 would carry the new URL): after it,
        // only a service that re-learned the stream sees the changes.
        var lull: Range<Duration>?
        var coldLull: Range<Duration>?
        if random.chance(0.7) {
            let long = random.chance(0.5) ? random.element(of: Self.clientIDs) : nil
            let when = at(.milliseconds(500), .milliseconds(1500))
            let rotate = random.chance(0.6)
            if rotate, random.chance(0.5) {
                lull = when..<(when + .milliseconds(3500))
                coldLull = when..<(when + .milliseconds(7500))
            }
            steps.append(
                (
                    when,
                    .streamOutage(
                        rotate: rotate, window: at(.milliseconds(1000), .milliseconds(2000)), longReader: long)
                ))
        }
        // Changes all along: mostly spaced, sometimes in bursts closer than a round trip.
        var t = Duration.milliseconds(300)
        while t < quiet {
            if let lull, lull.contains(t) {
                t = lull.upperBound
                continue
            }
            let env = 1 + random.below(2)
            var flags = [random.below(SimulatedControlPlane.flagCount)]
            if random.chance(0.2) { flags.append(random.below(SimulatedControlPlane.flagCount)) }
            var delays: [Duration] = []
            let roll = random.unit()
            if roll >= 0.1 { delays.append(random.duration(upTo: .milliseconds(300))) }
            if roll >= 0.85 { delays.append(random.duration(upTo: .milliseconds(400))) }
            steps.append((t, .change(env: env, flags: flags, delays: delays)))
            t +=
                random.chance(0.3)
                ? random.duration(upTo: .milliseconds(60)) : at(.milliseconds(120), .milliseconds(600))
        }
        for _ in 0..<random.below(3) {
            steps.append(
                (
                    at(.milliseconds(500), disrupt - .milliseconds(1000)),
                    .bulkFaults(
                        length: at(.milliseconds(200), .milliseconds(800)), probability: 0.3 + 0.5 * random.unit())
                ))
        }
        func rotation(_ when: Duration, _ group: [Int]) {
            if let lull, when >= lull.lowerBound - .milliseconds(500), when < lull.upperBound { return }
            steps.append((when, .rotateKeys(group: group)))
        }
        if random.chance(0.7) { rotation(at(.milliseconds(1000), disrupt - .milliseconds(500)), fleet ? [0, 1] : [0]) }
        for client in Self.clientIDs {
            if random.chance(0.5) { rotation(at(.milliseconds(800), disrupt), [client]) }
            if random.chance(0.35) {
                steps.append(
                    (
                        at(.milliseconds(500), disrupt - .milliseconds(1000)),
                        .deactivate(reader: client, length: at(.milliseconds(300), .milliseconds(1500)))
                    ))
            }
            if random.chance(0.4) { steps.append((at(.milliseconds(300), quiet), .identify(reader: client))) }
        }
        var c = Duration.milliseconds(400)
        while c < quiet {
            if let coldLull, coldLull.contains(c) {
                c = coldLull.upperBound
                continue
            }
            steps.append((c, .churn(count: random.chance(0.3) ? 10 + random.below(30) : 1 + random.below(4))))
            c += at(.milliseconds(200), .milliseconds(900))
        }
        self.steps = steps.sorted { $0.at < $1.at }
    }

    /// The schedule, one line a step (printed with a failure).
    var described: [String] {
        steps.map { "\($0.at.ms) \($0.step)" }
    }

    static func serviceKey(generation: Int) -> String { "srv-fleet-g\(generation)" }
    static func clientKey(_ reader: Int, generation: Int) -> String { "cli-\(reader)-g\(generation)" }
    /// Odd key generations belong to environment 1, even ones to environment 2.
    static func env(generation: Int) -> Int { generation % 2 == 1 ? 1 : 2 }

    // MARK: - Running it

    /// Plays the schedule; returns the history once every reader, service and client stopped.
    func run(redisPort: Int?) async throws -> PropagationHistory {
        let history = PropagationHistory(seed: seed)
        let plane = SimulatedControlPlane(history: history, seed: seed, perAnswerToken: perAnswerToken)
        for generation in 1...2 {
            plane.addKey(
                Self.serviceKey(generation: generation), env: Self.env(generation: generation), generation: generation)
            for client in Self.clientIDs {
                plane.addKey(
                    Self.clientKey(client, generation: generation), env: Self.env(generation: generation),
                    generation: generation)
            }
        }
        var serviceMap: [Int: FlagService] = [:]
        for id in redisPort == nil ? [0] : [0, 1] {
            var options = FlagServiceOptions(
                baseURL: SimulatedControlPlane.baseURL, key: Self.serviceKey(generation: 1))
            options.transport = SimulatedControlPlane.Endpoint(plane: plane, reader: id)
            options.exposures.enabled = false
            options.installID = "propagation-\(id)"
            options.refreshAfter = .seconds(60)
            options.maxStaleness = .seconds(120)
            options.maxContexts = 32
            options.maxCacheBytes = Self.maxCacheBytes
            options.initialBackoff = .milliseconds(200)
            options.maxBackoff = .seconds(1)
            options.requestTimeout = .seconds(2)
            if let redisPort { options.sharedCache = .redis(url: URL(string: "redis://127.0.0.1:\(redisPort)")!) }
            serviceMap[id] = try FlagService(options: options)
            history.addReader(.init(id: id, name: "service\(id)", isService: true, group: 0))
        }
        let services = serviceMap
        var clientMap: [Int: FlagClient] = [:]
        let contexts = Locked<[Int: String]>([:])
        for id in Self.clientIDs {
            var options = FlagClientOptions(
                baseURL: SimulatedControlPlane.baseURL, key: Self.clientKey(id, generation: 1))
            options.transport = SimulatedControlPlane.Endpoint(plane: plane, reader: id)
            options.installIDStorage = .fixed("propagation-\(id)")
            options.initialContext = EvaluationContext(targetingKey: "client\(id)")
            options.pollInterval = .seconds(3600)
            options.maxCachedContexts = 0
            options.streamInactivityDelay = .milliseconds(300)
            options.initialBackoff = .milliseconds(200)
            options.maxBackoff = .seconds(1)
            options.requestTimeout = .seconds(2)
            options.exposures.enabled = false
            clientMap[id] = try FlagClient(options: options)
            contexts.withLock { $0[id] = "client\(id)" }
            history.addReader(.init(id: id, name: "client\(id)", isService: false, group: id))
        }
        let clients = clientMap
        let stop = Locked(false)
        var background: [Task<Void, Never>] = []
        // The stall monitor: how late a 5 ms sleep wakes (a loaded machine's lost time).
        background.append(
            Task {
                while !stop.withLock({ $0 }) {
                    let before = history.now
                    try? await Task.sleep(for: .milliseconds(5))
                    let overshoot = history.now - before - .milliseconds(5)
                    if overshoot > .milliseconds(5) { history.recordStall(at: before, overshoot: overshoot) }
                }
            })
        let fitted = try Self.hotContexts.map { try EvaluationContext(targetingKey: $0).fitted() }
        for (id, service) in services {
            background.append(
                Task {
                    var i = 0
                    var previous = history.now
                    while !stop.withLock({ $0 }) {
                        let context = fitted[i % fitted.count]
                        let name = Self.hotContexts[i % fitted.count]
                        i += 1
                        let start = history.now
                        if start - previous > .milliseconds(60) {
                            history.recordReaderStall(
                                reader: id, at: previous, overshoot: start - previous - .milliseconds(10))
                        }
                        previous = start
                        let flags = await service.flags(for: context)
                        let waited = history.now - start
                        if waited > .milliseconds(150) {
                            history.recordSlowWait(.init(reader: id, context: name, start: start, duration: waited))
                        }
                        for flag in 0..<SimulatedControlPlane.flagCount {
                            let value = flags.int("f\(flag)", default: PropagationValue.missing)
                            history.recordRead(reader: id, context: name, flag: flag, value: value, at: start)
                        }
                        if i % fitted.count == 0 { try? await Task.sleep(for: .milliseconds(10)) }
                    }
                })
            let warm = try Self.warmContexts.map { try EvaluationContext(targetingKey: $0).fitted() }
            background.append(
                Task {
                    var i = 0
                    while !stop.withLock({ $0 }) {
                        let name = Self.warmContexts[i % warm.count]
                        let start = history.now
                        let flags = await service.flags(for: warm[i % warm.count])
                        i += 1
                        let waited = history.now - start
                        if waited > .milliseconds(150) {
                            history.recordSlowWait(.init(reader: id, context: name, start: start, duration: waited))
                        }
                        for flag in 0..<SimulatedControlPlane.flagCount {
                            let value = flags.int("f\(flag)", default: PropagationValue.missing)
                            history.recordRead(reader: id, context: name, flag: flag, value: value, at: start)
                        }
                        try? await Task.sleep(for: .milliseconds(80))
                    }
                })
            background.append(
                Task {
                    while !stop.withLock({ $0 }) {
                        history.recordBytes(reader: id, bytes: service.stats.cache.bytesHeld, limit: Self.maxCacheBytes)
                        try? await Task.sleep(for: .milliseconds(50))
                    }
                })
        }
        for (id, client) in clients {
            background.append(
                Task {
                    var previous = history.now
                    while !stop.withLock({ $0 }) {
                        let start = history.now
                        if start - previous > .milliseconds(60) {
                            history.recordReaderStall(
                                reader: id, at: previous, overshoot: start - previous - .milliseconds(10))
                        }
                        previous = start
                        let name = contexts.withLock { $0[id] ?? "" }
                        for flag in 0..<SimulatedControlPlane.flagCount {
                            let value = client.int("f\(flag)", default: PropagationValue.missing)
                            history.recordRead(reader: id, context: name, flag: flag, value: value, at: start)
                        }
                        try? await Task.sleep(for: .milliseconds(10))
                    }
                })
        }
        // The schedule.
        var random = SplitMix64(seed: seed ^ 0xC0FF_EE)
        var generations: [Int: Int] = [:]
        let clock = ContinuousClock()
        var work: [Task<Void, Never>] = []
        for (at, step) in steps {
            try? await clock.sleep(until: history.start + at)
            switch step {
            case .change(let env, let flags, let delays):
                var id = 0
                for flag in flags { id = plane.change(env: env, flag: flag) }
                for delay in delays {
                    work.append(
                        Task { [id] in
                            if (try? await Task.sleep(for: delay)) != nil { plane.publish(env: env, changeID: id) }
                        })
                }
            case .bulkFaults(let length, let probability):
                plane.setBulkFaults(.init(until: history.now + length, probability: probability))
            case .streamOutage(let rotate, let window, let longReader):
                let now1970 = Date().timeIntervalSince1970
                let date = Date(timeIntervalSince1970: (now1970 + window.fractionalSeconds + 1).rounded(.up))
                let floor = history.now + .seconds(date.timeIntervalSince1970 - now1970)
                plane.dropStreams(
                    rotate: rotate,
                    outage: .init(until: history.now + window, date: date, floor: floor, longReader: longReader))
                if let longReader, let client = clients[longReader] {
                    // A long `Retry-After`, then the background and back (issue 47, bug 5).
                    work.append(
                        Task {
                            try? await Task.sleep(for: .milliseconds(1000))
                            let start = history.now
                            client.setActive(false)
                            try? await Task.sleep(for: .milliseconds(2500))
                            client.setActive(true)
                            history.recordOperation(
                                .init(
                                    reader: longReader, kind: .deactivate, start: start, end: history.now,
                                    detail: "after a 600 s Retry-After"))
                        })
                }
            case .rotateKeys(let group):
                let generation = (generations[group[0]] ?? 1) + 1
                for member in group { generations[member] = generation }
                let oldEnv = Self.env(generation: generation - 1)
                let pause = random.duration(upTo: .milliseconds(20))
                let revokeAfter = .milliseconds(50) + random.duration(upTo: .milliseconds(200))
                let raceFlag = random.below(SimulatedControlPlane.flagCount)
                work.append(
                    Task {
                        // A change of the old environment just before: its refetches are in
                        // flight, with the old key, when the key changes.
                        let id = plane.change(env: oldEnv, flag: raceFlag)
                        plane.publish(env: oldEnv, changeID: id)
                        try? await Task.sleep(for: pause)
                        await withTaskGroup(of: Void.self) { tasks in
                            for member in group {
                                tasks.addTask {
                                    let start = history.now
                                    let key: String
                                    if let service = services[member] {
                                        key = Self.serviceKey(generation: generation)
                                        try? await service.setKey(key)
                                    } else if let client = clients[member] {
                                        key = Self.clientKey(member, generation: generation)
                                        try? await client.setKey(key)
                                    } else {
                                        return
                                    }
                                    history.recordOperation(
                                        .init(
                                            reader: member, kind: .setKey, start: start, end: history.now,
                                            env: Self.env(generation: generation), detail: key))
                                }
                            }
                        }
                        try? await Task.sleep(for: revokeAfter)
                        if services[group[0]] != nil {
                            plane.revoke(Self.serviceKey(generation: generation - 1))
                        } else {
                            plane.revoke(Self.clientKey(group[0], generation: generation - 1))
                        }
                    })
            case .deactivate(let reader, let length):
                guard let client = clients[reader] else { break }
                work.append(
                    Task {
                        let start = history.now
                        client.setActive(false)
                        try? await Task.sleep(for: length)
                        client.setActive(true)
                        history.recordOperation(
                            .init(reader: reader, kind: .deactivate, start: start, end: history.now))
                    })
            case .identify(let reader):
                guard let client = clients[reader] else { break }
                let name = "client\(reader)-\(random.below(1000))"
                work.append(
                    Task {
                        let start = history.now
                        _ = await client.identify(EvaluationContext(targetingKey: name))
                        contexts.withLock { $0[reader] = name }
                        history.recordOperation(
                            .init(reader: reader, kind: .identify, start: start, end: history.now, detail: name))
                    })
            case .churn(let count):
                let ids = services.keys.sorted()
                let id = ids[random.below(ids.count)]
                guard let service = services[id] else { break }
                let names = (0..<count).map { _ in "cold\(random.below(400))" }
                work.append(
                    Task {
                        let start = history.now
                        await withTaskGroup(of: Void.self) { tasks in
                            for name in names {
                                tasks.addTask {
                                    let begin = history.now
                                    _ = await service.flags(for: EvaluationContext(targetingKey: name))
                                    let waited = history.now - begin
                                    if waited > .milliseconds(150) {
                                        history.recordSlowWait(
                                            .init(reader: id, context: name, start: begin, duration: waited))
                                    }
                                }
                            }
                        }
                        history.recordOperation(
                            .init(
                                reader: id, kind: .churn, start: start, end: history.now,
                                detail: "\(count) cold contexts"))
                    })
            }
        }
        try? await clock.sleep(until: history.start + duration)
        history.finish()
        stop.withLock { $0 = true }
        for task in work { task.cancel() }
        for task in background { _ = await task.value }
        for task in work { _ = await task.value }
        for (id, service) in services {
            history.recordBytes(reader: id, bytes: service.stats.cache.peakBytesHeld, limit: Self.maxCacheBytes)
            service.close()
        }
        for client in clients.values { client.close() }
        plane.shutDown()
        return history
    }
}
