import Halyard
import HalyardLogging
import HalyardTesting
import InMemoryLogging
import Logging
import Testing

/// `Logger.halyardLogHandler()`: Halyard's messages through a swift-log `Logger`, levels mapped,
/// the logger's metadata kept.
@Suite struct LoggingBridgeTests {
    @Test func everyLevelMapsToItsSwiftLogNamesake() {
        #expect(Logger.Level(halyard: .debug) == .debug)
        #expect(Logger.Level(halyard: .info) == .info)
        #expect(Logger.Level(halyard: .warning) == .warning)
        #expect(Logger.Level(halyard: .error) == .error)
    }

    @Test func messagesKeepTheLoggersMetadataAndLevelFilter() {
        let memory = InMemoryLogHandler()
        var logger = Logger(label: "flags") { _ in memory }
        logger.logLevel = .info
        logger[metadataKey: "region"] = "eu-west-1"
        let handler = logger.halyardLogHandler(metadata: ["component": "checkout"])
        handler(.debug, "below the logger's level")
        handler(.warning, "fetch failed; retrying in 2 s")
        handler(.error, "key refused")
        let entries = memory.entries
        #expect(entries.map(\.level) == [.warning, .error])
        #expect(entries.map { "\($0.message)" } == ["fetch failed; retrying in 2 s", "key refused"])
        for entry in entries {
            #expect(entry.metadata["region"] == "eu-west-1")
            #expect(entry.metadata["component"] == "checkout")
        }
    }

    @Test func aClientLogsThroughTheLogger() async throws {
        let memory = InMemoryLogHandler()
        var logger = Logger(label: "flags") { _ in memory }
        logger.logLevel = .debug
        let plane = InMemoryControlPlane(values: ["checkout.new": true])
        var options = plane.makeOptions()
        options.logHandler = logger.halyardLogHandler()
        let client = try FlagClient(options: options)
        defer { client.close() }
        #expect(await client.ready(timeout: .seconds(5)))
        #expect(!memory.entries.isEmpty)
        #expect(memory.entries.allSatisfy { !"\($0.message)".contains("test-key") })
    }

    @Test func recordsKeepTheirMetadata() {
        let memory = InMemoryLogHandler()
        var logger = Logger(label: "flags") { _ in memory }
        logger.logLevel = .debug
        logger[metadataKey: "region"] = "eu-west-1"
        let handler = logger.halyardLogRecordHandler(metadata: ["component": "checkout"])
        handler(
            HalyardLogRecord(
                level: .warning, message: "429 from the control plane",
                metadata: [HalyardLogRecord.Key.httpStatus: "429", HalyardLogRecord.Key.status: "error"]))
        let entry = memory.entries.first
        #expect(memory.entries.count == 1 && entry?.level == .warning)
        #expect(entry.map { "\($0.message)" } == "429 from the control plane")
        #expect(entry?.metadata["halyard.http_status"] == "429")
        #expect(entry?.metadata["halyard.status"] == "error")
        #expect(entry?.metadata["region"] == "eu-west-1" && entry?.metadata["component"] == "checkout")
    }

    @Test func aServiceLogsRecordsThroughTheLogger() async throws {
        let memory = InMemoryLogHandler()
        var logger = Logger(label: "flags") { _ in memory }
        logger.logLevel = .debug
        let plane = InMemoryControlPlane(values: ["checkout.new": true])
        plane.failInitialization(status: 401)
        var options = plane.makeServiceOptions()
        options.logRecordHandler = logger.halyardLogRecordHandler()
        let service = try FlagService(options: options)
        defer { service.close() }
        _ = await service.flags(for: EvaluationContext(targetingKey: "user-1"))
        let refusal = try #require(memory.entries.first { $0.metadata["halyard.http_status"] == "401" })
        #expect(refusal.level == .error)
        #expect(refusal.metadata["halyard.component"] == "service")
        #expect(refusal.metadata["halyard.origin"] == "https://control-plane.halyard.invalid")
        #expect(refusal.metadata["halyard.context"].map { "\($0)".count } == 8)
        #expect(memory.entries.allSatisfy { !"\($0.message)\($0.metadata)".contains("srv-test-key") })
    }
}
