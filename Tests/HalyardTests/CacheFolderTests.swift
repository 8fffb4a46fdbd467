import Dispatch
import Foundation
import HalyardTesting
import Testing

@_spi(Fuzzing) @testable import Halyard

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Issue 22: the file store on hostile or broken folders (SPEC §8, "Hostile or broken folders"),
/// on real folders: FIFOs, symlinks, devices, modes, foreign owners, a folder removed while the
/// client runs, other software's temporary files, and size limits up to `.max`.
@Suite struct CacheFolderTests {
    /// Bug 2: `maxCacheEntryBytes = .max` trapped on the first warm start (`sizeLimit + 1`).
    /// Every size option accepts `.max`: a cold start, a write, a warm start and a refresh.
    @Test func everySizeOptionAcceptsMax() async throws {
        let directory = try CacheTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        var options = CacheClientTests.options(plane, MemoryCacheStore())
        options.cacheStore = nil
        options.cacheDirectory = directory
        options.maxCacheEntryBytes = .max
        options.maxCachedContexts = .max
        options.maxResponseBytes = .max
        options.maxContextCodeUnits = .max
        try await CacheTests.warm(options)
        let client = try await CacheClientTests.heldClient(plane, options)
        #expect(client.boolDetail("a", default: false).reason == .cached, "the warm start read the entry")
        plane.completeInitialization()
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
        try await client.refreshOrFail()
        try await CacheTests.waitForWrites(client)
        client.close()

        let store = FileCacheStore(directory: directory, sizeLimit: .max)
        try store.write(Data("x".utf8), for: "cccccccccccc")
        #expect(try store.read("cccccccccccc") == Data("x".utf8))
    }

    /// Reads on another thread, bounded: a read that blocks (a FIFO opened for real) fails the
    /// test after the bound instead of hanging the run.
    static func boundedRead(_ store: FileCacheStore, _ name: String) async throws -> Data? {
        try await Wait.result("read \(name)") {
            await withCheckedContinuation { (c: CheckedContinuation<Result<Data?, any Error>, Never>) in
                DispatchQueue.global().async { c.resume(returning: Result { try store.read(name) }) }
            }
        }.get()
    }

    static func exists(_ url: URL) -> Bool {
        var info = stat()
        return lstat(url.path, &info) == 0
    }

    static func mode(_ url: URL) -> mode_t {
        var info = stat()
        guard stat(url.path, &info) == 0 else { return 0 }
        return info.st_mode & 0o777
    }

    /// A FIFO, a symbolic link to a FIFO, a link to a device (`/dev/zero`) and (as root) a
    /// device node at entry names: each read returns at once with no entry and removes the
    /// thing (never its target).
    @Test func fifosLinksAndDevicesAtEntryNamesAreRemovedNeverWaitedOn() async throws {
        let directory = try CacheTests.temporaryDirectory()
        let outside = try CacheTests.temporaryDirectory()
        defer {
            try? FileManager.default.removeItem(at: directory)
            try? FileManager.default.removeItem(at: outside)
        }
        let store = FileCacheStore(directory: directory)
        try store.write(Data("x".utf8), for: "eeeeeeeeeeee")
        let outsideFIFO = outside.appendingPathComponent("fifo")
        try #require(mkfifo(directory.appendingPathComponent("aaaaaaaaaaaa").path, 0o600) == 0)
        try #require(mkfifo(outsideFIFO.path, 0o600) == 0)
        try #require(symlink(outsideFIFO.path, directory.appendingPathComponent("bbbbbbbbbbbb").path) == 0)
        try #require(symlink("/dev/zero", directory.appendingPathComponent("cccccccccccc").path) == 0)
        var names = ["aaaaaaaaaaaa", "bbbbbbbbbbbb", "cccccccccccc"]
        if geteuid() == 0 {
            let mknod = Process()
            mknod.executableURL = URL(fileURLWithPath: "/bin/mknod")
            mknod.arguments = [directory.appendingPathComponent("dddddddddddd").path, "c", "1", "5"]
            try mknod.run()
            mknod.waitUntilExit()
            if mknod.terminationStatus == 0 { names.append("dddddddddddd") }
        }
        for name in names {
            #expect(try await Self.boundedRead(store, name) == nil, "\(name)")
            #expect(!Self.exists(directory.appendingPathComponent(name)), "\(name) was not removed")
        }
        #expect(Self.exists(outsideFIFO), "a link's target is left alone")
        #expect(try store.read("eeeeeeeeeeee") == Data("x".utf8))
    }

    /// FIFOs at the slot's and the index's names stall neither the start (the lookup) nor the
    /// writes: the client is ready, and its entry and index are written in their place.
    @Test func fifosAtTheSlotAndIndexNamesStallNothing() async throws {
        let directory = try CacheTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        for name in [CacheClientTests.slot("u1"), CacheClientTests.index()] {
            try #require(mkfifo(directory.appendingPathComponent(name).path, 0o600) == 0)
        }
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        var options = CacheClientTests.options(plane, MemoryCacheStore())
        options.cacheStore = nil
        options.cacheDirectory = directory
        let client = try FlagClient(options: options)
        defer { client.close() }
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
        try await CacheTests.waitForWrites(client)
        let store = FileCacheStore(directory: directory)
        let read = try await Self.boundedRead(store, CacheClientTests.slot("u1"))
        let entry = try #require(read, "the entry was written in the FIFO's place")
        #expect(try CacheEnvelope.decode(entry, limit: 1 << 20).flags.map(\.key) == ["a"])
        let index = try await Self.boundedRead(store, CacheClientTests.index())
        #expect(CacheIndex.parse(index) != nil)
    }

    /// A cache folder that is a symbolic link is refused: the store throws `folderRefused` on
    /// reads and writes, and a client on it logs one line, writes nothing and keeps serving. A
    /// link among the components above the folder is fine.
    @Test func aSymlinkedFolderIsRefused() async throws {
        let base = try CacheTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: base) }
        let real = base.appendingPathComponent("real")
        try FileManager.default.createDirectory(at: real, withIntermediateDirectories: true)
        let link = base.appendingPathComponent("link")
        try #require(symlink(real.path, link.path) == 0)
        let store = FileCacheStore(directory: link)
        for (name, operation) in [
            ("write", { try store.write(Data("x".utf8), for: "aaaaaaaaaaaa") }),
            ("read", { _ = try store.read("aaaaaaaaaaaa") }),
        ] as [(String, () throws -> Void)] {
            do {
                try operation()
                Issue.record("\(name) through a symlinked folder succeeded")
            } catch let error as CacheStoreError {
                guard case .folderRefused = error else {
                    Issue.record("\(name): \(error)")
                    continue
                }
            }
        }

        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        let log = Locked<[String]>([])
        var options = CacheClientTests.options(plane, MemoryCacheStore(), log: log)
        options.cacheStore = nil
        options.cacheDirectory = link
        let client = try FlagClient(options: options)
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
        try await client.refreshOrFail()
        try await CacheTests.waitForWrites(client)
        #expect(client.bool("a", default: false))
        client.close()
        #expect(log.value.filter { $0.contains("refused") }.count == 1, "\(log.value)")
        #expect(log.value.count == 1, "\(log.value)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: real.path).isEmpty)

        let below = FileCacheStore(directory: link.appendingPathComponent("halyard"))
        try below.write(Data("x".utf8), for: "aaaaaaaaaaaa")
        #expect(Self.exists(real.appendingPathComponent("halyard/aaaaaaaaaaaa")))
    }

    #if os(Linux)
        /// A folder owned by another user is refused (as root: `chown` to another uid).
        @Test(.enabled(if: geteuid() == 0, "chown to another user needs root"))
        func aFolderOfAnotherUserIsRefused() throws {
            let base = try CacheTests.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: base) }
            let folder = base.appendingPathComponent("cache")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try #require(chmod(folder.path, 0o700) == 0)
            try #require(chown(folder.path, 12345, 12345) == 0)
            let store = FileCacheStore(directory: folder)
            #expect(throws: CacheStoreError.self) { try store.write(Data("x".utf8), for: "aaaaaaaaaaaa") }
            #expect(throws: CacheStoreError.self) { try store.read("aaaaaaaaaaaa") }
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
            do {
                _ = try store.read("aaaaaaaaaaaa")
            } catch let error as CacheStoreError {
                guard case .folderRefused(let reason) = error else {
                    Issue.record("\(error)")
                    return
                }
                #expect(reason.contains("another user"))
            }
        }
    #endif

    /// A new folder is created 0700; an existing one open to others is made 0700.
    @Test func foldersAreMade0700() throws {
        let base = try CacheTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: base) }
        let wide = base.appendingPathComponent("wide")
        try FileManager.default.createDirectory(at: wide, withIntermediateDirectories: true)
        try #require(chmod(wide.path, 0o777) == 0)
        try FileCacheStore(directory: wide).write(Data("x".utf8), for: "aaaaaaaaaaaa")
        #expect(Self.mode(wide) == 0o700)
        let fresh = base.appendingPathComponent("a/b/halyard")
        try FileCacheStore(directory: fresh).write(Data("x".utf8), for: "aaaaaaaaaaaa")
        #expect(Self.mode(fresh) == 0o700)
    }

    /// The folder removed while the client runs (`rm -rf ~/.cache`) is re-created by the next
    /// write; nothing is logged.
    @Test func aFolderRemovedWhileTheClientRunsIsRecreated() async throws {
        let base = try CacheTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: base) }
        let folder = base.appendingPathComponent("cache/halyard")
        let plane = InMemoryControlPlane(values: ["n": .int(1)])
        let log = Locked<[String]>([])
        var options = CacheClientTests.options(plane, MemoryCacheStore(), log: log)
        options.cacheStore = nil
        options.cacheDirectory = folder
        let client = try FlagClient(options: options)
        defer { client.close() }
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
        try await CacheTests.waitForWrites(client)
        try FileManager.default.removeItem(at: base.appendingPathComponent("cache"))
        plane.setValue(.int(2), for: "n")
        try await client.refreshOrFail()
        try await CacheTests.waitForWrites(client)
        let entry = try #require(try FileCacheStore(directory: folder).read(CacheClientTests.slot("u1")))
        #expect(try CacheEnvelope.decode(entry, limit: 1 << 20).flags.first?.value == .int(2))
        #expect(log.value.isEmpty, "\(log.value)")
    }

    /// Only Halyard's own temporary files (`.<12 hex>.<digits>.tmp`, older than ten minutes)
    /// are removed; other software's `.*.tmp` files in a shared folder stay.
    @Test func onlyHalyardsOwnOldTemporaryFilesAreRemoved() throws {
        let directory = try CacheTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let old = Date().addingTimeInterval(-3600)
        let files: [(String, Date, Bool)] = [
            (".abcdef012345.123456.tmp", old, false),
            (".abcdef012345.123457.tmp", Date(), true),
            (".other.tmp", old, true),
            (".ABCDEF012345.1.tmp", old, true),
            (".abcdef012345.12a.tmp", old, true),
            (".abcdef012345..tmp", old, true),
            ("abcdef012345.1.tmp", old, true),
            (".abcdef012345.1.tmp.bak", old, true),
        ]
        for (name, date, _) in files {
            let url = directory.appendingPathComponent(name)
            try Data("t".utf8).write(to: url)
            try FileManager.default.setAttributes([.modificationDate: date], ofItemAtPath: url.path)
        }
        try FileCacheStore(directory: directory).write(Data("x".utf8), for: "aaaaaaaaaaaa")
        for (name, _, kept) in files {
            #expect(Self.exists(directory.appendingPathComponent(name)) == kept, "\(name)")
        }
    }
}
