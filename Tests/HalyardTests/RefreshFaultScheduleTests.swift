import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// A schedule of 1,000 requests mixing 5xx, 429 with Retry-After in every format, timeouts,
/// resets, truncated/garbage/oversized bodies and normal answers (200 or 304), against the
/// loopback control plane. Asserts on order and counts: never a partial or empty snapshot, never
/// a request before a Retry-After instant, backoff within bounds, correct values on recovery.
@Suite(.serialized) struct RefreshFaultScheduleTests {
    static let keys = (0..<20).map { "flag-\($0)" }

    static func flagSet(version: Int) -> [String: Any] {
        ["default": keys.map { ["key": $0, "value": version, "reason": "TARGETING_MATCH", "variant": "v\(version)"] }]
    }

    static func httpDate(_ date: Date) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return f.string(from: date)
    }

    static func batch(_ random: inout SplitMix64, wallNow: Date, count: Int) -> [[String: Any]] {
        (0..<count).map { _ in
            let roll = random.unit()
            let seconds = 1 + Int(random.unit() * 120)
            switch roll {
            case ..<0.15: return ["action": "status", "status": [500, 502, 503, 504][Int(random.unit() * 4)]]
            case ..<0.20: return ["action": "status", "status": 429, "headers": ["Retry-After": "\(seconds)"]]
            case ..<0.23:
                return [
                    "action": "status", "status": 429,
                    "headers": ["Retry-After": httpDate(wallNow.addingTimeInterval(Double(seconds)))],
                ]
            case ..<0.26:
                return [
                    "action": "status", "status": 429,
                    "headers": [
                        "Retry-After": ISO8601DateFormatter().string(from: wallNow.addingTimeInterval(Double(seconds)))
                    ],
                ]
            case ..<0.28: return ["action": "status", "status": 429]
            case ..<0.30: return ["action": "status", "status": 503, "headers": ["Retry-After": "\(seconds)"]]
            case ..<0.315: return ["action": "delay", "seconds": 1.6]  // beyond the 1 s timeout
            case ..<0.335: return ["action": "reset"]
            case ..<0.365: return ["action": "truncate", "bytes": 25]
            case ..<0.415:
                return [
                    "action": "malformed",
                    "body": ["{\"flags\": [", "not json", "{\"flags\": 3}", "[]"][Int(random.unit() * 4)],
                ]
            case ..<0.435: return ["action": "oversize", "bytes": 100_000, "declareLength": random.unit() < 0.5]
            default: return ["action": "pass"]
            }
        }
    }

    @Test(arguments: TransportKind.available)
    func thousandRequestFaultSchedule(kind: TransportKind) async throws {
        let server = try await ControlPlaneServer.launched(flags: Self.flagSet(version: 1))
        defer { server.stop() }
        let clock = ManualClock()
        let transport = RecordingTransport(kind.make(), clock: clock)
        var options = SyncHarness.options(
            server: server, clock: clock, transport: transport, key: "cli-schedule", installID: "install-schedule")
        // 1 s: long enough that an answer the schedule does not delay never times out while the
        // whole suite runs in parallel on two cores (at 500 ms one 304 did, breaking the identity).
        options.requestTimeout = .seconds(1)
        options.maxResponseBytes = 64 * 1024
        let client = try FlagClient(options: options)
        defer { client.close() }
        let engine = try #require(client.sync).engine
        // The first answer is unscripted; on a loaded machine it may still miss the 1 s deadline
        // (CI, 2026-12-07: ERROR before the schedule began), so it is asked for again, past any
        // backoff, a bounded number of times.
        for _ in 0..<20 where client.status != .ready {
            await client.refresh()
            if client.status != .ready { clock.advance(by: .seconds(300)) }
        }
        #expect(client.status == .ready)

        var random = SplitMix64(seed: 20_261_130)
        var version = 1
        var scripted = 0
        var servedVersion = 1
        var steps = 0
        while transport.exchanges.count < 1_000 && steps < 5_000 {
            steps += 1
            if transport.exchanges.count >= scripted - 3 {
                if scripted > 0 {
                    version += 1
                    try await server.setFlags(Self.flagSet(version: version))
                }
                try await server.script(Self.batch(&random, wallNow: clock.wallNow, count: 100))
                scripted += 100
            }
            // Move to the next instant a request is allowed, then ask for one.
            if let wake = engine.nextWake, wake > clock.monotonicNow {
                let remaining = wake - clock.monotonicNow
                #expect(remaining <= .seconds(300), "wake \(remaining) beyond the 5 min cap and the Retry-After delays")
                clock.advance(by: remaining)
            } else if engine.nextWake == nil {
                clock.advance(by: .seconds(1))
            }
            await client.refresh()
            // Invariants after every step: one whole snapshot, never empty, never older.
            let values = Self.keys.map { client.intDetail($0, default: -1) }
            let first = values[0].value
            #expect(
                values.allSatisfy { $0.value == first && $0.errorCode == nil && $0.variant == "v\(first)" },
                "step \(steps): \(values.map { "\($0.value) \($0.variant ?? "-") \($0.errorCode.map { "\($0)" } ?? "ok")" }), status \(client.status)"
            )
            #expect(
                first >= servedVersion && first <= version,
                "step \(steps): served \(first) after \(servedVersion), server at \(version)")
            servedVersion = first
        }
        // Wait for a fetch the timer may have started to finish.
        #expect(await waitUntil { transport.inFlight == 0 })
        let exchanges = transport.exchanges
        #expect(exchanges.count >= 1_000)

        // Never a request before a Retry-After instant.
        var retryAfterChecks = 0
        for (i, exchange) in exchanges.enumerated() {
            guard let header = exchange.retryAfter, let delay = RetryAfter.parse(header, now: exchange.wallAtCompletion)
            else { continue }
            retryAfterChecks += 1
            for later in exchanges[(i + 1)...] {
                #expect(later.sentAt >= exchange.completedAt + delay, "request sent before Retry-After")
            }
        }
        // Backoff bounds: after a failure the next request waits (full jitter: more than nothing,
        // at most the largest backoff or the Retry-After checked above).
        var failures = 0
        for (exchange, next) in zip(exchanges, exchanges.dropFirst()) {
            let ok = exchange.status == 200 || exchange.status == 304
            guard !ok else { continue }
            failures += 1
            #expect(next.sentAt - exchange.completedAt > .zero)
        }
        let statuses = exchanges.compactMap(\.status)
        let stats = client.stats.sync
        #expect(stats.requestsSent == exchanges.count)
        // Every 304 the transport returned is counted as one, except one that came back so near
        // the 1 s deadline that the client's own deadline (GuardedTransport, around this
        // recording transport) ended the request first: that one is a timeout, as it should be.
        // Under a loaded machine a few do (CI: 603 answered, 602 counted); "near" is half the
        // timeout, far from any 304 of an idle loopback server (~1 ms).
        let answered304 = exchanges.filter { $0.status == 304 }
        let late304 = answered304.filter { $0.realDuration >= .milliseconds(500) }.count
        #expect(
            stats.notModified <= answered304.count && stats.notModified >= answered304.count - late304,
            "\(stats.notModified) counted, \(answered304.count) answered, \(late304) of them near the deadline")
        #expect(stats.notModified > 0)
        #expect(retryAfterChecks > 0)
        #expect(failures > 200)

        // Recovery: the server is healthy again; the next fetch serves the newest values.
        try await server.reset()
        version += 1
        try await server.setFlags(Self.flagSet(version: version))
        for _ in 0..<5 where client.int(Self.keys[0], default: -1) != version {
            if let wake = engine.nextWake, wake > clock.monotonicNow { clock.advance(by: wake - clock.monotonicNow) }
            await client.refresh()
        }
        #expect(Self.keys.allSatisfy { client.int($0, default: -1) == version })
        #expect(client.status == .ready)
        print(
            "fault schedule: \(exchanges.count) requests, \(failures) failures, \(stats.notModified) x 304, "
                + "\(stats.timeouts) timeouts, \(stats.networkErrors) network errors, \(stats.invalidBodies) invalid bodies, "
                + "\(stats.oversizedResponses) oversized, \(retryAfterChecks) Retry-After answers, \(steps) steps, "
                + "statuses \(Dictionary(grouping: statuses, by: { $0 }).mapValues(\.count).sorted { $0.key < $1.key })"
        )
    }
}
