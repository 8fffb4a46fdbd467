import Foundation
import Testing

@_spi(Fuzzing) @testable import Halyard

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The test-support executable was not built next to the tests.
struct HelperMissing: Error, CustomStringConvertible {
    var description: String { "CacheWriterProcess is not built next to the tests (swift build --build-tests)" }
}

/// Other processes on the same cache folder (docs/cache.md, "Faults"), with the
/// `CacheWriterProcess` helper, which writes through the real `FileCacheStore` until killed.
@Suite(.serialized) struct CacheProcessTests {
    /// The helper next to the test bundle (`swift build --build-tests` builds it).
    static var writerURL: URL? {
        let candidates = [
            Bundle.main.executableURL?.deletingLastPathComponent(),
            Bundle.main.bundleURL.deletingLastPathComponent(),
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
        ]
        for case let directory? in candidates {
            for up in [directory, directory.deletingLastPathComponent()] {
                let url = up.appendingPathComponent("CacheWriterProcess")
                if FileManager.default.isExecutableFile(atPath: url.path) { return url }
            }
        }
        return nil
    }

    static func launch(_ directory: URL, _ name: String, writer id: Int) throws -> (Process, Pipe) {
        let process = Process()
        guard let url = Self.writerURL else { throw HelperMissing() }
        process.executableURL = url
        process.arguments = [directory.path, name, "\(id)"]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        // Bounded: the helper prints "started" before its first write.
        let started = DispatchSemaphore(value: 0)
        let handle = pipe.fileHandleForReading
        DispatchQueue.global().async {
            _ = handle.availableData
            started.signal()
        }
        if started.wait(timeout: .now() + 10) == .timedOut {
            kill(process.processIdentifier, SIGKILL)
            throw WaitTimedOut(what: "CacheWriterProcess to start", seconds: 10)
        }
        return (process, pipe)
    }

    /// Reads the entry and decodes it: nil when absent; an error when it is torn or garbage.
    static func check(_ store: FileCacheStore, _ name: String) throws -> CacheEnvelope? {
        guard let data = try store.read(name) else { return nil }
        return try CacheEnvelope.decode(data, limit: store.sizeLimit)
    }

    /// A crash between the temporary write and the rename, in a loop: the helper is killed at
    /// random points mid-write; whatever is then on disk is a whole entry (or none), never a
    /// torn one, and the next writer still succeeds.
    @Test func killedMidWriteNeverLeavesATornEntry() throws {
        let directory = try CacheTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = FileCacheStore(directory: directory, sizeLimit: 1 << 20)
        var seen = Set<String>()
        for round in 0..<25 {
            let (process, _) = try Self.launch(directory, "aaaaaaaaaaaa", writer: round)
            usleep(UInt32.random(in: 1_000...30_000))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(process.terminationReason == .uncaughtSignal, "round \(round): the helper failed on its own")
            let envelope = try Self.check(store, "aaaaaaaaaaaa")
            if let envelope {
                let values = Set(envelope.flags.map(\.value))
                #expect(values.count == 1, "round \(round): flags of two writes in one entry")
                seen.insert(envelope.etag ?? "")
            }
        }
        #expect(!seen.isEmpty, "no write ever completed")
        // Leftover temporary files are never read as entries.
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(names.filter { !$0.hasPrefix(".") } == ["aaaaaaaaaaaa"])
    }

    /// Two processes write the same entry at once while this one reads it: every read is a
    /// whole entry of one writer.
    @Test func twoProcessesShareOneEntry() throws {
        let directory = try CacheTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = FileCacheStore(directory: directory, sizeLimit: 1 << 20)
        let writers = try [1, 2].map { try Self.launch(directory, "bbbbbbbbbbbb", writer: $0).0 }
        defer {
            for process in writers {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
        var variants = Set<String>()
        var reads = 0
        let deadline = Date().addingTimeInterval(20)
        while (variants.count < 2 || reads < 40) && Date() < deadline {
            if let envelope = try Self.check(store, "bbbbbbbbbbbb") {
                reads += 1
                #expect(Set(envelope.flags.map(\.variant)).count == 1, "flags of two writers in one entry")
                #expect(Set(envelope.flags.map(\.value)).count == 1, "flags of two writes in one entry")
                if let variant = envelope.flags.first?.variant { variants.insert(variant) }
            }
        }
        #expect(variants == ["w1", "w2"], "both writers were seen (\(reads) reads)")
        for process in writers { #expect(process.isRunning, "a writer failed on its own") }
    }
}
