import Foundation

/// A tiny reader of the Gherkin the flagd testbed uses (Feature, Background, Scenario,
/// Scenario Outline with Examples, tags, steps, data tables, comments): it expands each
/// outline's example rows into cases. Nothing else of Gherkin (doc strings, Rule, i18n).
struct GherkinReader {
    /// One step: its keyword (`Given`), its text with outline placeholders filled in, and
    /// its data table (rows of cells) if it has one.
    struct Step: Sendable {
        var keyword: String
        var text: String
        var table: [[String]] = []
    }

    /// One runnable case: a scenario, or one example row of an outline.
    struct Case: Sendable, CustomStringConvertible {
        var feature: String
        var file: String
        var name: String
        var line: Int
        var tags: Set<String>
        var steps: [Step]
        var description: String { "\(file):\(line) \(name)" }
    }

    private struct Examples {
        var tags: Set<String>
        var rows: [(line: Int, cells: [String])] = []
    }

    private struct Scenario {
        var name: String
        var line: Int
        var tags: Set<String>
        var outline: Bool
        var steps: [Step] = []
        var examples: [Examples] = []
    }

    /// Reads one feature file's text into its cases.
    static func cases(in text: String, file: String) -> [Case] {
        var feature = ""
        var featureTags: Set<String> = []
        var pendingTags: Set<String> = []
        var background: [Step] = []
        var scenarios: [Scenario] = []
        enum Section { case none, background, scenario, examples }
        var section = Section.none

        func appendStep(_ step: Step) {
            switch section {
            case .background: background.append(step)
            case .scenario, .examples: scenarios[scenarios.count - 1].steps.append(step)
            case .none: break
            }
        }

        for (offset, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("@") {
                for tag in line.split(separator: " ") where tag.hasPrefix("@") {
                    pendingTags.insert(String(tag.dropFirst()))
                }
                continue
            }
            if let rest = after(line, "Feature:") {
                feature = rest
                featureTags = pendingTags
                pendingTags = []
            } else if after(line, "Background:") != nil {
                section = .background
            } else if let rest = after(line, "Scenario Outline:") ?? after(line, "Scenario Template:") {
                scenarios.append(
                    Scenario(name: rest, line: offset + 1, tags: featureTags.union(pendingTags), outline: true))
                pendingTags = []
                section = .scenario
            } else if let rest = after(line, "Scenario:") ?? after(line, "Example:") {
                scenarios.append(
                    Scenario(name: rest, line: offset + 1, tags: featureTags.union(pendingTags), outline: false))
                pendingTags = []
                section = .scenario
            } else if after(line, "Examples:") != nil || after(line, "Scenarios:") != nil {
                scenarios[scenarios.count - 1].examples.append(Examples(tags: pendingTags))
                pendingTags = []
                section = .examples
            } else if line.hasPrefix("|") {
                let cells = Self.cells(line)
                if section == .examples {
                    let s = scenarios.count - 1
                    let e = scenarios[s].examples.count - 1
                    scenarios[s].examples[e].rows.append((offset + 1, cells))
                } else if section == .background {
                    background[background.count - 1].table.append(cells)
                } else if section == .scenario {
                    let s = scenarios.count - 1
                    scenarios[s].steps[scenarios[s].steps.count - 1].table.append(cells)
                }
            } else if let space = line.firstIndex(of: " "),
                ["Given", "When", "Then", "And", "But", "*"].contains(String(line[..<space]))
            {
                appendStep(Step(keyword: String(line[..<space]), text: String(line[line.index(after: space)...])))
            }
        }

        var result: [Case] = []
        for scenario in scenarios {
            if !scenario.outline {
                result.append(
                    Case(
                        feature: feature, file: file, name: scenario.name, line: scenario.line, tags: scenario.tags,
                        steps: background + scenario.steps))
                continue
            }
            for examples in scenario.examples {
                guard let header = examples.rows.first?.cells else { continue }
                for row in examples.rows.dropFirst() {
                    var values: [String: String] = [:]
                    for (name, value) in zip(header, row.cells) { values[name] = value }
                    func fill(_ text: String) -> String {
                        var text = text
                        for (name, value) in values { text = text.replacingOccurrences(of: "<\(name)>", with: value) }
                        return text
                    }
                    let steps = (background + scenario.steps).map { step in
                        Step(keyword: step.keyword, text: fill(step.text), table: step.table.map { $0.map(fill) })
                    }
                    result.append(
                        Case(
                            feature: feature, file: file,
                            name: "\(scenario.name) [\(row.cells.joined(separator: ", "))]",
                            line: row.line, tags: scenario.tags.union(examples.tags), steps: steps))
                }
            }
        }
        return result
    }

    private static func after(_ line: String, _ keyword: String) -> String? {
        guard line.hasPrefix(keyword) else { return nil }
        return line.dropFirst(keyword.count).trimmingCharacters(in: .whitespaces)
    }

    /// The cells of a table row: split at unescaped `|`, trimmed; `\|`, `\\` and `\n` unescaped.
    static func cells(_ line: String) -> [String] {
        var cells: [String] = []
        var current = ""
        var escaped = false
        var started = false
        for ch in line {
            if escaped {
                switch ch {
                case "|": current.append("|")
                case "\\": current.append("\\")
                case "n": current.append("\n")
                default: current.append("\\"); current.append(ch)
                }
                escaped = false
            } else if ch == "\\" {
                escaped = true
            } else if ch == "|" {
                if started { cells.append(current.trimmingCharacters(in: .whitespaces)) }
                started = true
                current = ""
            } else {
                current.append(ch)
            }
        }
        return cells
    }

    /// A step's text with each double-quoted parameter replaced by `{}`, and the parameters
    /// (`\"` inside one is a quote, `\\` a backslash).
    static func parameters(_ text: String) -> (template: String, values: [String]) {
        var template = ""
        var values: [String] = []
        var current = ""
        var quoted = false
        var escaped = false
        for ch in text {
            if quoted {
                if escaped {
                    current.append(ch == "\"" || ch == "\\" ? ch : ch)
                    if ch != "\"" && ch != "\\" { current.insert("\\", at: current.index(before: current.endIndex)) }
                    escaped = false
                } else if ch == "\\" {
                    escaped = true
                } else if ch == "\"" {
                    values.append(current)
                    current = ""
                    quoted = false
                    template += "{}"
                } else {
                    current.append(ch)
                }
            } else if ch == "\"" {
                quoted = true
            } else {
                template.append(ch)
            }
        }
        return (template, values)
    }
}
