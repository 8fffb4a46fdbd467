import Foundation
import Testing

/// Keeps the dependency map of docs/architecture.md true: a folder of `Sources/Halyard` may name
/// a type declared in another folder only if the map allows it.
@Suite struct ArchitectureMapTests {
    /// Which folders each top-level folder may use (docs/architecture.md, "Map"). A subfolder
    /// (`Transport/Curl`) belongs to its top-level folder.
    static let allowed: [String: Set<String>] = [
        "Client": [
            "Reads", "Refresh", "Streaming", "OFREP", "Transport", "Exposure", "Cache", "Snapshot", "Layout",
            "Context", "Values", "Support",
        ],
        "Service": [
            "Reads", "Refresh", "Streaming", "OFREP", "Transport", "Exposure", "SharedCache", "Snapshot", "Layout",
            "Context", "Values", "Support", "Definitions",
        ],
        "SharedCache": ["Cache", "OFREP", "Context", "Values", "Support"],
        "Reads": ["Exposure", "Snapshot", "Layout", "Values", "Support"],
        "Refresh": ["Streaming", "OFREP", "Transport", "Context", "Values", "Support"],
        "Streaming": ["OFREP", "Transport", "Values", "Support"],
        "OFREP": ["Transport", "Values", "Support"],
        "Exposure": ["OFREP", "Transport", "Values", "Support"],
        "Cache": ["Context", "Values", "Support"],
        "Definitions": ["Transport", "Context", "Layout", "Values", "Support"],
        "Transport": ["Support"],
        "Snapshot": ["Layout", "Values", "Support"],
        "Layout": ["Values", "Support"],
        "Context": ["Values", "Support"],
        "Values": ["Support"],
        "Support": [],
    ]

    static var sources: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/Halyard")
    }

    /// Each top-level folder's files (its subfolders' included), with `//` comments removed.
    static func folders() throws -> [String: [String]] {
        var result: [String: [String]] = [:]
        let manager = FileManager.default
        for folder in try manager.contentsOfDirectory(atPath: sources.path) {
            let url = sources.appendingPathComponent(folder)
            guard let walker = manager.enumerator(atPath: url.path) else { continue }
            for case let file as String in walker where file.hasSuffix(".swift") {
                let text = try String(contentsOf: url.appendingPathComponent(file), encoding: .utf8)
                let code = text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
                    line.range(of: "//").map { String(line[..<$0.lowerBound]) } ?? String(line)
                }
                result[folder, default: []].append(code.joined(separator: "\n"))
            }
        }
        return result
    }

    /// Every use of a type from a folder that `allowed` does not grant, as "Folder uses Name
    /// from Home".
    ///
    /// A name counts as used where it stands between non-word characters (a letter, a digit or
    /// `_` is a word character; `.` is not, so `Snapshot.block` is two words and a member access
    /// like that is seen: Unicode's word boundaries, UAX #29, made it one word once).
    static func violations(in folders: [String: [String]], allowed: [String: Set<String>]) throws -> [String] {
        let declaration = try Regex(
            #"(?m)^(?:@[\w()]+\s+)*(?:(?:public|package|internal|private|fileprivate|final|indirect)\s+)*(?:class|struct|enum|protocol|typealias|actor)\s+(\w+)"#
        )
        var owner: [String: String] = [:]
        for (folder, files) in folders {
            for file in files {
                for match in file.matches(of: declaration) {
                    if let name = match.output[1].substring { owner[String(name)] = folder }
                }
            }
        }
        var found: [String] = []
        for (folder, files) in folders {
            // The folder's words, split once at every character that is not a word character:
            // one pass over its text, where a regular expression per type name made this test
            // take ~30 s of one thread of the concurrency pool in a debug build, long enough to
            // starve the other suites' real-time waits in a parallel run.
            var words = Set<Substring>()
            for file in files {
                for word in file.split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "_") }) {
                    words.insert(word)
                }
            }
            for (name, home) in owner where home != folder && !(allowed[folder] ?? []).contains(home) {
                if words.contains(Substring(name)) { found.append("\(folder) uses \(name) from \(home)") }
            }
        }
        return found.sorted()
    }

    @Test func dependenciesPointOneWay() throws {
        let folders = try Self.folders()
        #expect(Set(folders.keys) == Set(Self.allowed.keys), "a folder is missing from the map")
        let found = try Self.violations(in: folders, allowed: Self.allowed)
        #expect(found.isEmpty, "upward uses (docs/architecture.md, Map): \(found)")
    }

    /// The checker itself: a lower folder naming a higher one's type through a member access
    /// (`Snapshot.block(…)` from `Values`, as `EvaluationDetail` once did) is reported, as are a
    /// plain use and a use from a subfolder's file.
    @Test func anUpwardMemberAccessIsReported() throws {
        let folders = [
            "Values": ["func size() -> Int { Snapshot.block(16) }"],
            "Snapshot": [
                "package final class Snapshot {}\nextension Snapshot { static func block(_ n: Int) -> Int { n } }"
            ],
            "Support": ["let x: Snapshot? = nil"],
        ]
        let allowed: [String: Set<String>] = ["Values": ["Support"], "Snapshot": ["Values", "Support"], "Support": []]
        let found = try Self.violations(in: folders, allowed: allowed)
        #expect(found == ["Support uses Snapshot from Snapshot", "Values uses Snapshot from Snapshot"])
    }

    /// A subfolder's files count for their top-level folder.
    @Test func subfoldersBelongToTheirTopLevelFolder() throws {
        let folders = try Self.folders()
        let transport = folders["Transport"] ?? []
        #expect(transport.contains { $0.contains("final class CurlMulti") }, "Transport/Curl was not read")
    }
}
