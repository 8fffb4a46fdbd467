import Foundation
// A test-support process for CacheProcessTests: writes cache entries through the real
// FileCacheStore in a loop until it is killed.
//
//   CacheWriterProcess <directory> <entry name> <writer id>
//
// Each entry is a valid envelope whose flags all hold the same number (the write's sequence),
// in sizes from a few bytes to ~120 KB, so that a kill lands inside a write often. The parent
// SIGKILLs it at random points and checks that the entry it then reads is always whole.
@_spi(Fuzzing) import Halyard

let arguments = CommandLine.arguments
guard arguments.count == 4 else {
    FileHandle.standardError.write(Data("usage: CacheWriterProcess <directory> <name> <writer id>\n".utf8))
    exit(2)
}
let store = FileCacheStore(directory: URL(fileURLWithPath: arguments[1], isDirectory: true), sizeLimit: 1 << 20)
let name = arguments[2]
let writer = Int64(arguments[3]) ?? 0
var sequence: Int64 = 0
var random = SystemRandomNumberGenerator()
FileHandle.standardOutput.write(Data("started\n".utf8))
while true {
    sequence += 1
    let count = Int.random(in: 1...3000, using: &random)
    let flags = (0..<count).map {
        ServedFlag(key: "flag-\($0)", value: .int(sequence), variant: "w\(writer)", reason: .targetingMatch)
    }
    let envelope = CacheEnvelope(
        fingerprint: String(repeating: "a", count: 40), kind: "user",
        targetingKeyHash: String(repeating: "b", count: 40),
        etag: "\"\(writer)-\(sequence)\"", writtenAt: 1_800_000_000_000, flags: flags)
    do {
        try store.write(envelope.encoded(), for: name)
    } catch {
        FileHandle.standardError.write(Data("write failed: \(error)\n".utf8))
        exit(1)
    }
}
