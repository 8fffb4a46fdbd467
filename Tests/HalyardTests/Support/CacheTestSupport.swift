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

/// A ``CacheStore`` in memory with injected faults: a read or write error (permission denied,
/// disk full), and a gate that holds writes (a slow or stuck store).
final class MemoryCacheStore: CacheStore {
    struct State: Sendable {
        var entries: [String: Data] = [:]
        var readError: CacheStoreError?
        var writeError: CacheStoreError?
        var removeError: CacheStoreError?
        var reads = 0
        var writes = 0
        var removes: [String] = []
    }

    let sizeLimit: Int
    let state = Locked(State())
    /// When set, each write waits for one signal (a stuck store).
    let gate: DispatchSemaphore?
    /// When set, each read waits for one signal (a slow disk at start).
    let readGate: DispatchSemaphore?

    /// Whether ``entryNames()`` lists the entries (else `nil`, as a store that cannot list).
    let listing: Bool

    init(sizeLimit: Int = 256 << 10, holdingWrites: Bool = false, holdingReads: Bool = false, listing: Bool = false) {
        self.sizeLimit = sizeLimit
        self.listing = listing
        gate = holdingWrites ? DispatchSemaphore(value: 0) : nil
        readGate = holdingReads ? DispatchSemaphore(value: 0) : nil
    }

    func read(_ name: String) throws -> Data? {
        readGate?.wait()
        return try state.withLock { s in
            s.reads += 1
            if let error = s.readError { throw error }
            return s.entries[name]
        }
    }

    func write(_ data: Data, for name: String) throws {
        gate?.wait()
        try state.withLock { s in
            s.writes += 1
            if let error = s.writeError { throw error }
            s.entries[name] = data
        }
    }

    func remove(_ name: String) throws {
        try state.withLock { s in
            s.removes.append(name)
            if let error = s.removeError { throw error }
            s.entries[name] = nil
        }
    }

    func entryNames() throws -> [String]? {
        listing ? state.withLock { Array($0.entries.keys) } : nil
    }

    var entries: [String: Data] { state.withLock { $0.entries } }
    /// The decodable entries that are not the LRU index.
    var envelopes: [String: CacheEnvelope] {
        var result: [String: CacheEnvelope] = [:]
        for (name, data) in entries {
            if let e = try? CacheEnvelope.decode(data, limit: sizeLimit) { result[name] = e }
        }
        return result
    }
}

/// Builders and helpers shared by the cache tests.
enum CacheTests {
    static let permissionDenied = CacheStoreError.system(operation: "write", name: "x", errno: EACCES)
    static let diskFull = CacheStoreError.system(operation: "write", name: "x", errno: ENOSPC)

    /// Options for a client of `plane` with the cache on, in `store`.
    static func options(
        _ plane: InMemoryControlPlane, store: any CacheStore, context: EvaluationContext = .anonymous,
        clock: ManualClock? = nil, key: String = "test-key", log: Locked<[String]>? = nil
    ) -> FlagClientOptions {
        var options = plane.makeOptions(key: key)
        options.maxCachedContexts = 5
        options.cacheStore = store
        options.initialContext = context
        options.exposures.enabled = false
        if let clock { options.clock = clock }
        if let log {
            options.logHandler = { level, message in
                if level >= .warning { log.withLock { $0.append(message) } }
            }
        }
        return options
    }

    /// Runs a client until its first values are confirmed and written to the cache, then closes it.
    static func warm(_ options: FlagClientOptions) async throws {
        let client = try FlagClient(options: options)
        defer { client.close() }
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
        try await waitForWrites(client)
    }

    /// Waits (bounded) until every cache write the client queued so far is done.
    static func waitForWrites(_ client: FlagClient) async throws {
        let cache = try #require(client.sync?.publisher.cache)
        try await Wait.result("cache writes") {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().async {
                    cache.waitForWrites()
                    c.resume()
                }
            }
        }
    }

    /// A fresh empty directory under the temporary directory.
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "halyard-cache-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
