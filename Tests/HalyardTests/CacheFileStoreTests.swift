import Foundation
import HalyardTesting
import Testing

@_spi(Fuzzing) @testable import Halyard

#if canImport(Glibc)
    import Glibc
#endif

/// The default file store on a real folder: atomic writes, names and contents free of keys,
/// faults of the folder itself, and two clients sharing one folder.
@Suite struct CacheFileStoreTests {
    @Test func writesAreAtomicAndLeaveNoTemporaryFiles() throws {
        let directory = try CacheTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = FileCacheStore(directory: directory.appendingPathComponent("nested/halyard"))
        #expect(try store.read("aaaaaaaaaaaa") == nil)
        try store.write(Data("one".utf8), for: "aaaaaaaaaaaa")
        try store.write(Data("two".utf8), for: "aaaaaaaaaaaa")
        #expect(try store.read("aaaaaaaaaaaa") == Data("two".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.directory.path) == ["aaaaaaaaaaaa"])
        try store.remove("aaaaaaaaaaaa")
        try store.remove("aaaaaaaaaaaa")
        #expect(try store.read("aaaaaaaaaaaa") == nil)
        for bad in ["", "../x", ".hidden", "a/b"] {
            #expect(throws: CacheStoreError.invalidName(bad)) { try store.write(Data(), for: bad) }
        }
    }

    @Test func readsStopAfterTheSizeLimit() throws {
        let directory = try CacheTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = FileCacheStore(directory: directory, sizeLimit: 10)
        try store.write(Data(repeating: 1, count: 100_000), for: "bbbbbbbbbbbb")
        #expect(try store.read("bbbbbbbbbbbb")?.count == 11)
    }

    /// No raw key, targeting key or attribute in a file name or a file; names are 12 hex digits.
    @Test func namesAndContentsHoldNoKeyNorTargetingKey() async throws {
        let directory = try CacheTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        var options = plane.makeOptions(key: "cli-SECRETKEY123")
        options.maxCachedContexts = 5
        options.cacheDirectory = directory
        options.initialContext = EvaluationContext(
            targetingKey: "user-SECRET-42", attributes: ["email": "x@example.com", "tier": "gold"],
            privateAttributes: ["email"])
        let client = try FlagClient(options: options)
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
        try await CacheTests.waitForWrites(client)
        client.close()
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(names.count == 2)
        for name in names {
            #expect(CacheIndex.isSlotName(name), "\(name)")
            let text = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
            for secret in ["SECRETKEY123", "user-SECRET-42", "example.com", "gold", "tier"] {
                #expect(!text.contains(secret), "\(name) holds \(secret)")
            }
        }
    }

    /// The slot's path is a directory, or the cache folder is a regular file: logged once, the
    /// client serves from memory.
    @Test func aDirectoryInPlaceOfAnEntryOrAFileInPlaceOfTheFolder() async throws {
        let directory = try CacheTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        var options = CacheClientTests.options(plane, MemoryCacheStore())
        options.cacheStore = nil
        options.cacheDirectory = directory.appendingPathComponent("cache")
        try await CacheTests.warm(options)
        let cacheFolder = directory.appendingPathComponent("cache")
        let slot = try #require(
            try FileManager.default.contentsOfDirectory(atPath: cacheFolder.path).first {
                let data = FileManager.default.contents(atPath: cacheFolder.appendingPathComponent($0).path)
                return data.map { (try? CacheEnvelope.decode($0, limit: 1 << 20)) != nil } ?? false
            })
        let slotURL = cacheFolder.appendingPathComponent(slot)
        try FileManager.default.removeItem(at: slotURL)
        try FileManager.default.createDirectory(
            at: slotURL.appendingPathComponent("inner"), withIntermediateDirectories: true)

        let file = directory.appendingPathComponent("plain-file")
        try Data("x".utf8).write(to: file)
        var fileAsFolder = options
        fileAsFolder.cacheDirectory = file

        for (name, o) in [("directory as entry", options), ("file as folder", fileAsFolder)] {
            let log = Locked<[String]>([])
            var o = o
            o.logHandler = { level, message in if level >= .warning { log.withLock { $0.append(message) } } }
            let client = try FlagClient(options: o)
            #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) }, "\(name)")
            #expect(client.boolDetail("a", default: false).reason == .staticValue, "\(name)")
            await client.refresh()
            try await CacheTests.waitForWrites(client)
            #expect(log.value.filter { $0.contains("cache store failed") }.count == 1, "\(name): \(log.value)")
            client.close()
        }
    }

    /// Two clients (two contexts, and twice the same one) write one folder at once: every entry
    /// stays whole, and each context then starts from its own values.
    @Test func twoClientsShareAFolder() async throws {
        let directory = try CacheTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let plane = InMemoryControlPlane(values: ["n": .int(0)])
        func options(_ user: String) -> FlagClientOptions {
            var o = CacheClientTests.options(plane, MemoryCacheStore(), context: EvaluationContext(targetingKey: user))
            o.cacheStore = nil
            o.cacheDirectory = directory
            return o
        }
        let clients = try ["u1", "u2", "u1", "u2"].map { try FlagClient(options: options($0)) }
        for client in clients { #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) }) }
        for value in 1...20 {
            plane.setValue(.int(Int64(value)), for: "n")
            await withTaskGroup(of: Void.self) { group in
                for client in clients { group.addTask { await client.refresh() } }
            }
        }
        for client in clients {
            try await CacheTests.waitForWrites(client)
            client.close()
        }
        let store = FileCacheStore(directory: directory)
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            #expect(!name.hasSuffix(".tmp"), "a temporary file was left: \(name)")
            let data = try #require(try store.read(name))
            let isIndex = CacheIndex(data: data).slots.count > 0
            #expect(isIndex || (try? CacheEnvelope.decode(data, limit: 1 << 20)) != nil, "\(name) is torn")
        }
        for user in ["u1", "u2"] {
            let client = try await CacheClientTests.heldClient(plane, options(user))
            #expect(client.intDetail("n", default: -1) == Evaluation(key: "n", value: 20, reason: .cached), "\(user)")
            client.close()
            plane.completeInitialization()
        }
    }

    #if os(Linux)
        /// A real full disk: a 64 KiB tmpfs (Linux, as root; elsewhere the injected store of
        /// `CacheClientTests.aFailingStoreIsLoggedOnceAndTheClientKeepsWorking` stands in).
        /// The failed write leaves no temporary file behind and the previous entry intact, and a
        /// client on that folder logs once and keeps serving.
        @Test(.enabled(if: geteuid() == 0, "mounting a tmpfs needs root"))
        func aFullDiskFailsTheWriteCleanlyAndTheClientKeepsWorking() async throws {
            let directory = try CacheTests.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            func run(_ arguments: [String]) throws -> Int32 {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/bin/" + arguments[0])
                process.arguments = Array(arguments.dropFirst())
                try process.run()
                process.waitUntilExit()
                return process.terminationStatus
            }
            try #require(try run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", directory.path]) == 0)
            defer { _ = try? run(["umount", directory.path]) }

            let store = FileCacheStore(directory: directory, sizeLimit: 1 << 20)
            try store.write(Data("small".utf8), for: "aaaaaaaaaaaa")
            #expect(throws: CacheStoreError.self) { try store.write(Data(count: 200_000), for: "aaaaaaaaaaaa") }
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["aaaaaaaaaaaa"])
            #expect(try store.read("aaaaaaaaaaaa") == Data("small".utf8))
            try store.remove("aaaaaaaaaaaa")

            let big = String(repeating: "x", count: 30_000)
            let plane = InMemoryControlPlane(values: [
                "a": .string(big), "b": .string(big + "y"), "c": .string(big + "z"),
            ])
            let log = Locked<[String]>([])
            var options = CacheClientTests.options(plane, MemoryCacheStore(), log: log)
            options.cacheStore = nil
            options.cacheDirectory = directory
            let client = try FlagClient(options: options)
            #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
            for _ in 0..<3 {
                await client.refresh()
                try await CacheTests.waitForWrites(client)
            }
            #expect(client.string("a", default: "") == big)
            #expect(log.value.filter { $0.contains("cache store failed") }.count == 1, "\(log.value)")
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".tmp") }
                    .isEmpty)
            client.close()
        }

        /// A read-only folder (a read-only tmpfs: as root, `chmod` would deny nothing): every
        /// write fails, logged once; the client keeps serving.
        @Test(.enabled(if: geteuid() == 0, "mounting a tmpfs needs root"))
        func aReadOnlyFolderIsLoggedOnceAndTheClientKeepsWorking() async throws {
            let directory = try CacheTests.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let mount = Process()
            mount.executableURL = URL(fileURLWithPath: "/bin/mount")
            mount.arguments = ["-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", directory.path]
            try mount.run()
            mount.waitUntilExit()
            try #require(mount.terminationStatus == 0)
            defer {
                let umount = Process()
                umount.executableURL = URL(fileURLWithPath: "/bin/umount")
                umount.arguments = [directory.path]
                try? umount.run()
                umount.waitUntilExit()
            }
            #expect(throws: CacheStoreError.self) {
                try FileCacheStore(directory: directory).write(Data("x".utf8), for: "aaaaaaaaaaaa")
            }
            let plane = InMemoryControlPlane(values: ["a": .bool(true)])
            let log = Locked<[String]>([])
            var options = CacheClientTests.options(plane, MemoryCacheStore(), log: log)
            options.cacheStore = nil
            options.cacheDirectory = directory
            let client = try FlagClient(options: options)
            #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
            for value in [false, true, false] {
                plane.setValue(.bool(value), for: "a")
                await client.refresh()
                try await CacheTests.waitForWrites(client)
                #expect(client.bool("a", default: !value) == value)
            }
            #expect(log.value.filter { $0.contains("cache store failed") }.count == 1, "\(log.value)")
            client.close()
        }
    #endif
}
