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
}
