import Foundation
import Testing

/// Keeps the dependency map of docs/architecture.md true: a folder of `Sources/Halyard` may name
/// a type declared in another folder only if the map allows it.
@Suite struct ArchitectureMapTests {
    /// Which folders each folder may use (docs/architecture.md, "Map").
    static let allowed: [String: Set<String>] = [
        "Client": ["Reads", "Sync", "Exposure", "Cache", "Snapshot", "Context", "Values", "Support"],
        "Service": ["Reads", "Sync", "Exposure", "Snapshot", "Context", "Values", "Support"],
        "Reads": ["Exposure", "Snapshot", "Values", "Support"],
        "Sync": ["Context", "Values", "Support"],
        "Exposure": ["Values", "Support"],
        "Cache": ["Context", "Values", "Support"],
        "Snapshot": ["Values", "Support"],
        "Context": ["Values", "Support"],
        "Values": ["Support"],
        "Support": [],
    ]

    static var sources: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/Halyard")
    }

    /// Each folder's files, with `//` comments removed.
    static func folders() throws -> [String: [String]] {
        var result: [String: [String]] = [:]
        let manager = FileManager.default
        for folder in try manager.contentsOfDirectory(atPath: sources.path) {
            let url = sources.appendingPathComponent(folder)
            for file in try manager.contentsOfDirectory(atPath: url.path) where file.hasSuffix(".swift") {
                let text = try String(contentsOf: url.appendingPathComponent(file), encoding: .utf8)
                let code = text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
                    line.range(of: "//").map { String(line[..<$0.lowerBound]) } ?? String(line)
                }
                result[folder, default: []].append(code.joined(separator: "\n"))
            }
        }
        return result
    }

    @Test func dependenciesPointOneWay() throws {
        let folders = try Self.folders()
        #expect(Set(folders.keys) == Set(Self.allowed.keys), "a folder is missing from the map")
        let declaration = try Regex(
            #"(?m)^(?:@[\w()]+\s+)*(?:(?:public|package|internal|private|fileprivate|final|indirect)\s+)*(?:class|struct|enum|protocol|typealias|actor)\s+(\w+)"#
        )
        var owner: [String: String] = [:]
        for (folder, files) in folders {
            for file in files {
                for match in file.matches(of: declaration) {
                    if let name = match.output[1].substring { owner[String(name), default: folder] = folder }
                }
            }
        }
        for (folder, files) in folders {
            let text = files.joined(separator: "\n")
            for (name, home) in owner where home != folder && !(Self.allowed[folder] ?? []).contains(home) {
                let word = try Regex(#"\b"# + name + #"\b"#)
                #expect(!text.contains(word), "\(folder) uses \(name) from \(home) (docs/architecture.md, Map)")
            }
        }
    }
}
