import Foundation
import Testing

/// Keeps the docs' pointers true. In `docs/*.md`, `README.md` and the comments of the sources
/// (`Sources`, `Tests`, `Benchmarks`, `Fuzz`, `Integrations`: Swift and C), every `.swift` file named exists,
/// every `docs/<name>.md` named exists, and every section cited as `docs/<name>.md, "<Section>"`,
/// `docs/<name>.md ("<Section>")` or `docs/<name>.md "<Section>"` is a heading of that file.
@Suite struct DocsReferenceTests {
    static var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    /// One text to scan: its path (for the report) and its lines (a markdown file's lines, or a
    /// source file's comments, one per source line so that line numbers hold).
    struct Text {
        let path: String
        let lines: [String]
    }

    /// The files under `folders` (relative to `root`) whose names end in one of `suffixes`, as
    /// paths relative to `root`. Hidden folders (`.build`) are skipped.
    static func files(under folders: [String], endingIn suffixes: [String]) -> [String] {
        let manager = FileManager.default
        var found: [String] = []
        var pending = folders
        while let folder = pending.popLast() {
            let url = root.appendingPathComponent(folder)
            guard let names = try? manager.contentsOfDirectory(atPath: url.path) else { continue }
            for name in names where !name.hasPrefix(".") {
                let path = folder.isEmpty ? name : folder + "/" + name
                var isFolder: ObjCBool = false
                guard manager.fileExists(atPath: url.appendingPathComponent(name).path, isDirectory: &isFolder)
                else { continue }
                if isFolder.boolValue {
                    if !folder.isEmpty { pending.append(path) }
                } else if suffixes.contains(where: { name.hasSuffix($0) }) {
                    found.append(path)
                }
            }
        }
        return found.sorted()
    }

    /// A text's lines, empty ones kept so that line numbers hold.
    static func lines(of text: String) -> [String] {
        text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    /// A source file's comments, line for line: the text after a line's first `//` (its leading
    /// slashes removed), or an empty line.
    static func comments(of source: String) -> [String] {
        source.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            guard let start = line.range(of: "//") else { return "" }
            return String(line[start.upperBound...].drop { $0 == "/" })
        }
    }

    /// A markdown file's headings (any level, outside fenced code), backticks removed.
    static func headings(of markdown: String) -> [String] {
        var inFence = false
        var found: [String] = []
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") { inFence.toggle() }
            guard !inFence, line.hasPrefix("#") else { continue }
            let marks = line.prefix { $0 == "#" }
            guard marks.count <= 6, line.dropFirst(marks.count).first == " " else { continue }
            found.append(line.dropFirst(marks.count).filter { $0 != "`" }.trimmingCharacters(in: .whitespaces))
        }
        return found
    }

    /// Every dangling reference in `texts`, as "path:line: …". `files` are the tree's `.swift`
    /// files relative to the root; `docs` maps each existing `docs/<name>.md` to its headings.
    ///
    /// A `.swift` name with a folder (`Service/FlagService.swift`) must be the end of a file's
    /// path; a bare name must be some file's name. A name right after `*` is a glob and is not
    /// checked. A cited section must equal a heading of its file or begin one, backticks
    /// ignored, and may wrap onto the next line.
    static func dangling(in texts: [Text], files: [String], docs: [String: [String]]) throws -> [String] {
        let swiftFile = try Regex(#"[A-Za-z0-9_+./-]*[A-Za-z0-9_+]\.swift(?![A-Za-z0-9_])"#)
        let docFile = try Regex(#"docs/[A-Za-z0-9_-]+\.md"#)
        let section = try Regex(#"(docs/[A-Za-z0-9_-]+\.md)`?(?:,\s*\(?|\s*\(|\s+)"([^"]{1,200})""#)
        let names = Set(files.map { $0.split(separator: "/").last.map(String.init) ?? $0 })
        var found: [String] = []
        for text in texts {
            for (index, line) in text.lines.enumerated() {
                let here = "\(text.path):\(index + 1)"
                if line.contains(".swift") {
                    for match in line.matches(of: swiftFile) {
                        if match.range.lowerBound > line.startIndex,
                            line[line.index(before: match.range.lowerBound)] == "*"
                        {
                            continue
                        }
                        // A relative path is matched by what follows its leading `.` and `..` components.
                        let name = line[match.range].split(separator: "/").drop { $0 == "." || $0 == ".." }
                            .joined(separator: "/")
                        let exists =
                            name.contains("/")
                            ? files.contains { ("/" + $0).hasSuffix("/" + name) } : names.contains(name)
                        if !exists { found.append("\(here): no file \(name)") }
                    }
                }
                guard line.contains("docs/") else { continue }
                for match in line.matches(of: docFile) where docs[String(line[match.range])] == nil {
                    found.append("\(here): no file \(line[match.range])")
                }
                // The next line joins this one so that a citation may wrap; only matches that
                // start on this line count.
                let next = index + 1 < text.lines.count ? text.lines[index + 1] : ""
                let joined = line + " " + next.trimmingCharacters(in: .whitespaces)
                let end = joined.index(joined.startIndex, offsetBy: line.count)
                for match in joined.matches(of: section) where match.range.lowerBound < end {
                    guard let file = match.output[1].substring, let cited = match.output[2].substring,
                        let headings = docs[String(file)]
                    else { continue }
                    let wanted = cited.filter { $0 != "`" }.split(whereSeparator: \.isWhitespace)
                        .joined(separator: " ")
                    if !headings.contains(where: { $0.hasPrefix(wanted) }) {
                        found.append("\(here): no section \"\(wanted)\" in \(file)")
                    }
                }
            }
        }
        return found
    }

    /// The tree as the test reads it: the texts to scan, the `.swift` files, the docs' headings.
    static func tree() throws -> (texts: [Text], files: [String], docs: [String: [String]]) {
        let read = { (path: String) throws -> String in
            try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
        }
        let markdown = files(under: ["docs"], endingIn: [".md"])
        var docs: [String: [String]] = [:]
        var texts: [Text] = []
        for path in markdown {
            let body = try read(path)
            docs[path] = headings(of: body)
            texts.append(Text(path: path, lines: lines(of: body)))
        }
        let readme = try read("README.md")
        texts.append(Text(path: "README.md", lines: lines(of: readme)))
        let folders = ["Sources", "Tests", "Benchmarks", "Fuzz", "Integrations"]
        for path in files(under: folders, endingIn: [".swift", ".c", ".h"]) {
            texts.append(Text(path: path, lines: comments(of: try read(path))))
        }
        let swift = files(under: folders + [""], endingIn: [".swift"])
        return (texts, swift, docs)
    }

    @Test func everyFileAndSectionTheDocsAndCommentsNameExists() throws {
        let tree = try Self.tree()
        #expect(tree.files.count > 300, "the walk found only \(tree.files.count) Swift files: is the path right?")
        #expect(tree.docs.count > 10, "only \(tree.docs.count) docs found: is the path right?")
        let found = try Self.dangling(in: tree.texts, files: tree.files, docs: tree.docs)
        #expect(found.isEmpty, "dangling references:\n\(found.joined(separator: "\n"))")
    }

    /// The scanner itself: a dangling file (bare and with a folder), a missing doc, a missing
    /// section and a section inside a code fence are reported; existing ones, a glob, a wrapped
    /// citation and a name in code rather than in a comment are not.
    @Test func theScannerReportsWhatIsMissingAndOnlyThat() throws {
        let doc = """
            # A

            ## Recovery: when the plane answers again
            ### `Policy` and more
            ```
            ## Fenced
            ```
            """
        let docs = ["docs/a.md": Self.headings(of: doc)]
        #expect(docs["docs/a.md"] == ["A", "Recovery: when the plane answers again", "Policy and more"])
        let markdown = """
            See `Here.swift`, `Service/Here.swift`, `*Here2.swift`, docs/a.md, "Recovery" and
            docs/a.md ("`Policy`"), (docs/a.md, "Policy and"). Gone: `Gone.swift`, `Other/Here.swift`,
            docs/a.md "Fenced", docs/a.md, "Missing", docs/b.md, "A".
            """
        // The slashes are joined at run time so that this file's own comments hold no such text.
        let slashes = "/" + "/"
        let source = """
            let name = "Gone2.swift"  \(slashes) see Y.swift, ../X/Y.swift and docs/a.md, "Recovery: when
            \(slashes)/ the plane answers"; and docs/a.md, "Recovery: when the plane answers never"
            """
        let texts = [
            Self.Text(path: "docs/c.md", lines: markdown.split(separator: "\n").map(String.init)),
            Self.Text(path: "Sources/X/Y.swift", lines: Self.comments(of: source)),
        ]
        let files = ["Sources/X/Y.swift", "Sources/Halyard/Service/Here.swift"]
        let found = try Self.dangling(in: texts, files: files, docs: docs)
        #expect(
            found == [
                "docs/c.md:2: no file Gone.swift",
                "docs/c.md:2: no file Other/Here.swift",
                "docs/c.md:3: no file docs/b.md",
                "docs/c.md:3: no section \"Fenced\" in docs/a.md",
                "docs/c.md:3: no section \"Missing\" in docs/a.md",
                "Sources/X/Y.swift:2: no section \"Recovery: when the plane answers never\" in docs/a.md",
            ])
    }
}
