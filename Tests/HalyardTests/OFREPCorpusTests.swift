import Foundation
import Testing

@_spi(Fuzzing) @testable import Halyard

/// The FuzzOFREP invariants over its committed seed corpus (`Fuzz/Corpus/FuzzOFREP`), through the
/// real decoder: a typed error, or unique keys with every item a value, a code default or an
/// error. (A 30 s run of the harness found no crash; a finding would be added to the corpus.)
@Suite struct OFREPCorpusTests {
    static var corpus: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fuzz/Corpus/FuzzOFREP")
    }

    @Test func seedCorpusKeepsTheHarnessInvariants() throws {
        let files = try FileManager.default.contentsOfDirectory(at: Self.corpus, includingPropertiesForKeys: nil)
        #expect(files.count >= 10)
        for file in files {
            let body = try Data(contentsOf: file)
            guard let decoded = try? OFREPResponse.decode(body, limit: 4_096) else { continue }
            #expect(Set(decoded.flags.map(\.key)).count == decoded.flags.count, "\(file.lastPathComponent)")
            for flag in decoded.flags where flag.errorCode != nil {
                #expect(flag.value == nil && flag.variant == nil && flag.reason == .error, "\(file.lastPathComponent)")
            }
            #expect(decoded.flags.allSatisfy { $0.value != .null }, "\(file.lastPathComponent)")
        }
    }
}
