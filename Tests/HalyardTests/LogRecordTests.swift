import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// Structured log records (docs/integrations.md, "Log records"): the record hook and the string
/// hook get the same lines; records carry the `halyard.*` keys; no line carries a secret.
@Suite struct LogRecordTests {
    /// Both hooks, each collecting what it receives.
    final class Collector: Sendable {
        let records = Locked<[HalyardLogRecord]>([])
        let strings = Locked<[String]>([])
        var recordHandler: HalyardLogRecordHandler { { [self] record in records.withLock { $0.append(record) } } }
        var stringHandler: HalyardLogHandler {
            { [self] level, message in strings.withLock { $0.append("\(level): \(message)") } }
        }
        var all: [HalyardLogRecord] { records.value }
    }

    @Test func aRecordIsItsLevelMessageAndSortedMetadata() {
        let record = HalyardLogRecord(
            level: .warning, message: "m", metadata: [HalyardLogRecord.Key.status: "error", "halyard.a": "1"])
        #expect(record.description == "warning: m {halyard.a=1, halyard.status=error}")
        #expect(HalyardLogRecord.seconds(.milliseconds(2500)) == "2.5")
        #expect(HalyardLogRecord.seconds(.seconds(3)) == "3")
        #expect(HalyardLogRecord.seconds(.milliseconds(125)) == "0.125")
        #expect(
            HalyardLogRecord.origin(URL(string: "https://u:p@flags.example.com:8443/a/b?c=d")!)
                == "https://flags.example.com:8443")
    }

    /// A client whose key is refused: both hooks get the same lines, in the same order; the
    /// refusal's record says the status code, the status, the origin and the context's
    /// fingerprint prefix.
    @Test func aClientsRecordsCarryTheKeysAndTheStringHookGetsTheSameLines() async throws {
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        plane.failInitialization(status: 401)
        let collector = Collector()
        var options = plane.makeOptions()
        options.initialContext = EvaluationContext(targetingKey: "user-1")
        options.logHandler = collector.stringHandler
        options.logRecordHandler = collector.recordHandler
        let client = try FlagClient(options: options)
        defer { client.close() }
        try await Wait.until("the refusal's log line") {
            collector.all.contains { $0.metadata[HalyardLogRecord.Key.httpStatus] == "401" }
        }
        client.close()
        let records = collector.all
        #expect(collector.strings.value == records.map { "\($0.level): \($0.message)" })
        let refusal = try #require(records.first { $0.metadata[HalyardLogRecord.Key.httpStatus] == "401" })
        let fingerprint = try EvaluationContext(targetingKey: "user-1").fitted().fingerprint
        #expect(refusal.level == .error)
        #expect(refusal.metadata[HalyardLogRecord.Key.component] == "refresh")
        #expect(refusal.metadata[HalyardLogRecord.Key.origin] == "https://control-plane.halyard.invalid")
        #expect(refusal.metadata[HalyardLogRecord.Key.context] == String(fingerprint.prefix(8)))
        #expect(refusal.metadata[HalyardLogRecord.Key.status] == "\(ClientStatus.fatal)")
        // Every record names its component; every key is a `halyard.` one.
        for record in records {
            #expect(record.metadata[HalyardLogRecord.Key.component] != nil, "\(record)")
            #expect(record.metadata.keys.allSatisfy { $0.hasPrefix("halyard.") }, "\(record)")
        }
        #expect(records.contains { $0.metadata[HalyardLogRecord.Key.previousStatus] != nil })
    }

    /// A service whose key is refused: the record has the status code, the service's status,
    /// the origin and the context's prefix. The string hook alone still gets every line.
    @Test func aServicesRefusalRecordCarriesTheKeys() async throws {
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        plane.failInitialization(status: 401)
        let collector = Collector()
        var options = plane.makeServiceOptions()
        options.logRecordHandler = collector.recordHandler
        let service = try FlagService(options: options)
        defer { service.close() }
        let context = EvaluationContext(targetingKey: "user-2")
        _ = await service.flags(for: context)
        let refusal = try #require(collector.all.first { $0.metadata[HalyardLogRecord.Key.httpStatus] == "401" })
        #expect(refusal.level == .error && refusal.metadata[HalyardLogRecord.Key.component] == "service")
        #expect(refusal.metadata[HalyardLogRecord.Key.status] == "\(ClientStatus.fatal)")
        #expect(refusal.metadata[HalyardLogRecord.Key.origin] == "https://control-plane.halyard.invalid")
        #expect(refusal.metadata[HalyardLogRecord.Key.context] == String(try context.fitted().fingerprint.prefix(8)))

        // The string hook alone gets the same message.
        let strings = Collector()
        var stringOptions = InMemoryControlPlane().makeServiceOptions()
        plane.failInitialization(status: 401)
        stringOptions.transport = plane
        stringOptions.logHandler = strings.stringHandler
        let other = try FlagService(options: stringOptions)
        defer { other.close() }
        _ = await other.flags(for: context)
        #expect(strings.strings.value == ["error: \(refusal.message)"])
    }

    /// The lines tests can provoke (a refused key, failures and a rate limit, a trimmed context,
    /// a shared cache with a password, refused exposure uploads) never carry the key, the Redis
    /// password or an attribute value, in the message or the metadata.
    @Test func noSecretIsEverLogged() async throws {
        let key = "key-SECRET-0123456789"
        let password = "hunter2-PASSWORD-in-url"
        let attribute = "ATTRIBUTE-VALUE-secret"
        let collector = Collector()
        let context = EvaluationContext(
            targetingKey: "user-3",
            attributes: ["plan": .string(attribute), "bulky": .string(String(repeating: "x", count: 9000))])

        // A service: a shared cache with a password (not loopback: a warning at creation; then
        // one on loopback that refuses connections), 500, 429 and 401 answers.
        for redis in ["redis://app:\(password)@10.0.0.5:6379", "redis://app:\(password)@127.0.0.1:1/3"] {
            let plane = InMemoryControlPlane(values: ["a": .bool(true)])
            var options = plane.makeServiceOptions(key: key)
            options.sharedCache = .redis(url: try #require(URL(string: redis)))
            options.logHandler = collector.stringHandler
            options.logRecordHandler = collector.recordHandler
            options.maxContextCodeUnits = 4096
            options.backoffAfterFailures = 1
            let service = try FlagService(options: options)
            defer { service.close() }
            guard redis.contains("127.0.0.1") else { continue }
            for status in [500, 429, 401] {
                plane.failInitialization(status: status)
                _ = await service.flags(
                    for: EvaluationContext(targetingKey: "user-\(status)", attributes: ["plan": .string(attribute)]))
            }
            _ = await service.flags(for: context)
        }
        // A client: a trimmed context, failures, a refusal, and exposure uploads refused.
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        var options = plane.makeOptions(key: key)
        options.initialContext = context
        options.maxContextCodeUnits = 4096
        options.logHandler = collector.stringHandler
        options.logRecordHandler = collector.recordHandler
        plane.failInitialization(status: 500)
        let client = try FlagClient(options: options)
        defer { client.close() }
        await client.refresh()
        plane.failInitialization(status: 401)
        await client.refresh()
        try await Wait.until("the client's refusal") {
            collector.all.contains {
                $0.metadata[HalyardLogRecord.Key.httpStatus] == "401"
                    && $0.metadata[HalyardLogRecord.Key.component] == "refresh"
            }
        }
        _ = try await FlagClient.verify(options: options)

        let records = collector.all
        #expect(records.count >= 5, "\(records)")
        #expect(records.contains { $0.message.contains("trimmed") }, "\(records)")
        #expect(records.contains { $0.metadata[HalyardLogRecord.Key.component] == "shared_cache" }, "\(records)")
        for record in records {
            for text in [record.message] + record.metadata.keys + record.metadata.values {
                for secret in [key, password, attribute, "hunter2"] {
                    #expect(!text.contains(secret), "\(record)")
                }
            }
        }
        for line in collector.strings.value {
            #expect(![key, password, attribute].contains { line.contains($0) }, "\(line)")
        }
    }
}
