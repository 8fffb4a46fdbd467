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
    /// Bug 2: `cacheEntrySizeLimit = .max` trapped on the first warm start (`sizeLimit + 1`).
    /// Every size option accepts `.max`: a cold start, a write, a warm start and a refresh.
    @Test func everySizeOptionAcceptsMax() async throws {
        let directory = try CacheTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        var options = CacheClientTests.options(plane, MemoryCacheStore())
        options.cacheStore = nil
        options.cacheDirectory = directory
        options.cacheEntrySizeLimit = .max
        options.maxCachedContexts = .max
        options.maxResponseBytes = .max
        options.contextSizeLimit = .max
        try await CacheTests.warm(options)
        let client = try await CacheClientTests.heldClient(plane, options)
        #expect(client.boolDetail("a", default: false).reason == .cached, "the warm start read the entry")
        plane.completeInitialization()
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(5)) })
        try await client.refreshOrFail()
        try await CacheTests.waitForWrites(client)
        client.close()

        let store = FileCacheStore(directory: directory, sizeLimit: .max)
        try store.write(Data("x".utf8), for: "cccccccccccc")
        #expect(try store.read("cccccccccccc") == Data("x".utf8))
    }
}
