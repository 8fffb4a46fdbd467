import Foundation
import Testing

/// Keeps the suite map of docs/testing.md ("How the suite is organised") true: every suite
/// declared in this target is listed there, and every name listed there is a suite.
@Suite struct SuiteMapTests {
    static var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    /// The suites declared in `Tests/HalyardTests` (shared code in `Support/` excluded): every
    /// `struct` or `class` whose name ends in `Tests`, nested ones included. Caseless `enum`
    /// namespaces (`CacheTests`) hold helpers, not tests.
    static func declaredSuites() throws -> Set<String> {
        let tests = root.appendingPathComponent("Tests/HalyardTests")
        let declaration = try Regex(#"(?m)^\s*(?:@Suite[^\n]*\s+)?(?:final\s+)?(?:struct|class)\s+(\w+Tests)\b"#)
        var names: Set<String> = []
        guard let walker = FileManager.default.enumerator(atPath: tests.path) else { return names }
        for case let file as String in walker where file.hasSuffix(".swift") && !file.hasPrefix("Support/") {
            let text = try String(contentsOf: tests.appendingPathComponent(file), encoding: .utf8)
            for match in text.matches(of: declaration) {
                if let name = match.output[1].substring { names.insert(String(name)) }
            }
        }
        return names
    }

    /// The suites the map names: the backticked names of the table's "suites" column, by their
    /// last path component (`CLI/CLIProcessTests` → `CLIProcessTests`).
    static func mappedSuites(in markdown: String) throws -> Set<String> {
        guard let start = markdown.range(of: "## How the suite is organised") else { return [] }
        let rest = markdown[start.upperBound...]
        let section = rest.range(of: "\n## ").map { rest[..<$0.lowerBound] } ?? rest
        let name = try Regex(#"`([\w/]+)`"#)
        var names: Set<String> = []
        for row in section.split(separator: "\n") where row.hasPrefix("|") {
            let columns = row.split(separator: "|", omittingEmptySubsequences: false)
            guard columns.count > 3 else { continue }
            for match in columns[2].matches(of: name) {
                if let path = match.output[1].substring, let last = path.split(separator: "/").last {
                    names.insert(String(last))
                }
            }
        }
        return names
    }

    @Test func everySuiteIsInTheMapAndEveryMappedNameIsASuite() throws {
        let declared = try Self.declaredSuites()
        let markdown = try String(
            contentsOf: Self.root.appendingPathComponent("docs/testing.md"), encoding: .utf8)
        let mapped = try Self.mappedSuites(in: markdown)
        #expect(declared.count > 50, "the walk found only \(declared.count) suites: is the path right?")
        #expect(mapped.count > 50, "the map names only \(mapped.count) suites: did the section move?")
        let missing = declared.subtracting(mapped).sorted()
        let stale = mapped.subtracting(declared).sorted()
        #expect(missing.isEmpty, "suites missing from docs/testing.md's map: \(missing)")
        #expect(stale.isEmpty, "docs/testing.md's map names suites that do not exist: \(stale)")
    }

    @Test func theMapReaderTakesTheSuitesColumnOnly() throws {
        let markdown = """
            ## How the suite is organised

            | area | suites | what they drive |
            | --- | --- | --- |
            | a | `OneTests`, `CLI/TwoTests` | `NotASuiteTests` named in prose |

            ## Next
            | b | `ThreeTests` | after the section |
            """
        #expect(try Self.mappedSuites(in: markdown) == ["OneTests", "TwoTests"])
    }
}
