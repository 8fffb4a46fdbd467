import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// A file source: loads, change detection (content, atomic replace, a swapped symbolic link),
/// refused documents keeping the definitions in use, a missing file, the loop on a manual
/// clock, close.
@Suite struct DefinitionsFileSourceTests {
    /// A document with one static boolean flag `f` serving `value`, padded to a fixed size.
    static func document(_ value: Bool, flag: String = "f") -> String {
        #"{"flags": {"\#(flag)": {"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "\#(value ? "on" : "off")"}}}"#
    }

    /// A fresh folder, removed by the caller.
    static func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "halyard-definitions-\(UInt64.random(in: 0 ... .max))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func served(_ feed: DefinitionsFeed, _ key: String = "f") -> JSONValue? {
        feed.current?.evaluate(key, context: EvaluationContext(targetingKey: "u")).value
    }

    final class Lines: Sendable {
        let lines = Locked<[(HalyardLogLevel, String)]>([])
        var handler: HalyardLogHandler { { level, message in self.lines.withLock { $0.append((level, message)) } } }
        var errors: [String] { lines.withLock { $0.filter { $0.0 == .error }.map(\.1) } }
    }

    @Test func loadsThenReloadsOnlyWhatChanged() async throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("flags.json")
        try Self.document(true).write(to: file, atomically: false, encoding: .utf8)
        let published = Locked(0)
        let feed = try DefinitionsFeed(
            source: .file(file), clock: ManualClock(), onPublish: { _ in published.withLock { $0 += 1 } })
        defer { feed.close() }
        #expect(feed.current == nil)
        await feed.check()
        #expect(Self.served(feed) == .bool(true))
        #expect(feed.stats.loads == 1 && feed.stats.flagCount == 1 && feed.stats.lastLoad != nil)

        await feed.check()
        #expect(feed.stats.notModified == 1 && feed.stats.loads == 1)

        // Same size, new content, written in place: the hash decides.
        let sameSize = Self.document(false).replacingOccurrences(of: "\"state\": ", with: "\"state\":")
        #expect(sameSize.utf8.count == Self.document(true).utf8.count)
        try sameSize.write(to: file, atomically: false, encoding: .utf8)
        await feed.check()
        #expect(Self.served(feed) == .bool(false))
        #expect(feed.stats.loads == 2)

        // Replaced by a rename (an atomic write: a new file number).
        try Self.document(true).write(to: file, atomically: true, encoding: .utf8)
        await feed.check()
        #expect(Self.served(feed) == .bool(true))
        #expect(feed.stats.loads == 3 && published.value == 3)
    }

    @Test func anUnchangedStatusIsNotReadAgainOnceTheReadIsNotRacy() async throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("flags.json")
        let old = Date(timeIntervalSinceNow: -3_600)
        try Self.document(true).write(to: file, atomically: false, encoding: .utf8)
        try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: file.path)
        let feed = try DefinitionsFeed(source: .file(file), clock: ManualClock())
        defer { feed.close() }
        await feed.check()
        #expect(Self.served(feed) == .bool(true))
        // Rewritten in place with the same size and its old time put back: the status is the
        // same and the last read was not racy, so the file is not read (no hash, no parse).
        let sameSize = Self.document(false).replacingOccurrences(of: "\"state\": ", with: "\"state\":")
        try sameSize.write(to: file, atomically: false, encoding: .utf8)
        try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: file.path)
        await feed.check()
        #expect(Self.served(feed) == .bool(true))
        #expect(feed.stats.notModified == 1)
        // A new modification time is enough to read it.
        try FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: file.path)
        await feed.check()
        #expect(Self.served(feed) == .bool(false))
    }

    @Test func aSwappedSymbolicLinkIsAChange() async throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let first = dir.appendingPathComponent("v1.json")
        let second = dir.appendingPathComponent("v2.json")
        try Self.document(true).write(to: first, atomically: false, encoding: .utf8)
        try Self.document(false).write(to: second, atomically: false, encoding: .utf8)
        let link = dir.appendingPathComponent("flags.json")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: first)
        let feed = try DefinitionsFeed(source: .file(link), clock: ManualClock())
        defer { feed.close() }
        await feed.check()
        #expect(Self.served(feed) == .bool(true))
        try FileManager.default.removeItem(at: link)
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: second)
        await feed.check()
        #expect(Self.served(feed) == .bool(false))
    }

    @Test func aBadDocumentNeverReplacesTheGoodOne() async throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("flags.json")
        try Self.document(true).write(to: file, atomically: false, encoding: .utf8)
        let log = Lines()
        let feed = try DefinitionsFeed(
            source: .file(file), clock: ManualClock(),
            logHandler: HalyardLogRecord.sink(logHandler: log.handler, recordHandler: nil))
        defer { feed.close() }
        await feed.check()

        try #"{"flags": {"f": {"state": "ENABLED""#.write(to: file, atomically: false, encoding: .utf8)
        await feed.check()
        #expect(Self.served(feed) == .bool(true))
        #expect(feed.stats.refusals == 1)
        guard case .invalidDefinitions(.malformedJSON) = feed.stats.lastError else {
            Issue.record("lastError is \(String(describing: feed.stats.lastError))")
            return
        }
        #expect(log.errors.count == 1)

        // The same bad content is not refused (nor logged) again.
        await feed.check()
        #expect(feed.stats.refusals == 1 && log.errors.count == 1)

        // Schema-invalid: a typed error naming the member.
        try #"{"flags": {"f": {"variants": {"on": true}, "defaultVariant": "on"}}}"#.write(
            to: file, atomically: false, encoding: .utf8)
        await feed.check()
        #expect(feed.stats.refusals == 2)
        if case .invalidDefinitions(.invalid(let path, _)) = feed.stats.lastError {
            #expect(path.hasPrefix("flags.f"))
        } else {
            Issue.record("lastError is \(String(describing: feed.stats.lastError))")
        }
        #expect(Self.served(feed) == .bool(true))

        try Self.document(false).write(to: file, atomically: false, encoding: .utf8)
        await feed.check()
        #expect(Self.served(feed) == .bool(false))
        #expect(feed.stats.lastError == nil)
    }

    @Test func aMissingFileIsAFailureThatKeepsTheDefinitions() async throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("flags.json")
        let feed = try DefinitionsFeed(source: .file(file), clock: ManualClock())
        defer { feed.close() }
        await feed.check()
        #expect(feed.current == nil)
        guard case .unreadable = feed.stats.lastError else {
            Issue.record("lastError is \(String(describing: feed.stats.lastError))")
            return
        }
        try Self.document(true).write(to: file, atomically: false, encoding: .utf8)
        await feed.check()
        try FileManager.default.removeItem(at: file)
        await feed.check()
        #expect(Self.served(feed) == .bool(true))
        #expect(feed.stats.failures == 2 && feed.stats.loads == 1)
        // A folder is not a definitions file.
        try FileManager.default.createDirectory(at: file, withIntermediateDirectories: false)
        await feed.check()
        #expect(feed.stats.failures == 3)
    }

    @Test func theLoopChecksAtThePollIntervalUntilClosed() async throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("flags.json")
        try Self.document(true).write(to: file, atomically: false, encoding: .utf8)
        let clock = ManualClock()
        let feed = try DefinitionsFeed(source: .file(file), clock: clock, pollInterval: .seconds(5), pollJitter: 0)
        var updates = feed.updates().makeAsyncIterator()
        feed.start()
        try await Wait.until("the first load") { feed.stats.loads == 1 }
        #expect(await updates.next()?.keys == ["f"])

        try Self.document(false, flag: "g").write(to: file, atomically: false, encoding: .utf8)
        try await Wait.advance(clock, by: .seconds(5))
        try await Wait.until("the second load") { feed.stats.loads == 2 }
        #expect(Self.served(feed, "g") == .bool(false))
        #expect(await updates.next()?.keys == ["g"])

        feed.close()
        #expect(await updates.next() == nil)
        try await Wait.until("the loop to stop sleeping") { clock.sleeperCount == 0 }
        clock.advance(by: .seconds(60))
        await feed.check()
        #expect(feed.stats.loads == 2 && feed.stats.notModified == 0)
        #expect(Self.served(feed, "g") == .bool(false))
    }

    @Test func aFeedDroppedWithoutCloseStopsItsLoop() async throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("flags.json")
        try Self.document(true).write(to: file, atomically: false, encoding: .utf8)
        let clock = ManualClock()
        weak var dropped: DefinitionsFeed?
        do {
            let feed = try DefinitionsFeed(source: .file(file), clock: clock, pollInterval: .seconds(5))
            dropped = feed
            feed.start()
            try await Wait.until("the first load") { feed.stats.loads == 1 && clock.sleeperCount == 1 }
        }
        try await Wait.until("the feed to be freed") { dropped == nil }
        try await Wait.until("its loop to stop sleeping") { clock.sleeperCount == 0 }
    }

    @Test func anHTTPSourceMustBeSecureOrLoopback() throws {
        let plain = try #require(URL(string: "http://flags.example.com/f.json"))
        let secure = try #require(URL(string: "https://flags.example.com/f.json"))
        let loopback = try #require(URL(string: "http://127.0.0.1:9/f.json"))
        #expect(throws: DefinitionsSourceError.self) { try DefinitionsFeed(source: .http(plain)) }
        #expect(throws: DefinitionsSourceError.self) {
            try DefinitionsFeed(source: .http(secure, headers: ["A": "b\n"]))
        }
        #expect(throws: DefinitionsSourceError.self) { try DefinitionsFeed(source: .file(secure)) }
        let transport = DefinitionsScriptedTransport()
        try DefinitionsFeed(source: .http(loopback), transport: transport).close()
        try DefinitionsFeed(source: .http(secure, headers: ["Authorization": "Bearer t"]), transport: transport).close()
    }
}
