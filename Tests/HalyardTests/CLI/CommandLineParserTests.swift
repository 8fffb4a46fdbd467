import Testing

@testable import HalyardCLICore

/// The hand-written argument parser of the `halyard` command (CommandLineParser.swift).
@Suite("CommandLineParser")
struct CommandLineParserTests {
    typealias Parser = CommandLineParser

    static let command = Parser.Command(
        name: "demo", summary: "A demo.",
        options: [
            .init(name: "url", valueName: "URL", help: "where"),
            .init(name: "context", valueName: "FILE|-", help: "what"),
            .init(name: "json", help: "how"),
        ],
        positional: "FILE|-")

    @Test func topLevelWords() throws {
        #expect(try Parser.topLevel(["--help"]) == .help)
        #expect(try Parser.topLevel(["-h"]) == .help)
        #expect(try Parser.topLevel(["help"]) == .help)
        #expect(try Parser.topLevel(["--version"]) == .version)
        #expect(try Parser.topLevel(["eval", "--url", "x"]) == .command("eval", ["--url", "x"]))
        #expect(throws: Parser.UsageError("missing command")) { try Parser.topLevel([]) }
        #expect(throws: Parser.UsageError("unknown option --verbose")) { try Parser.topLevel(["--verbose"]) }
    }

    @Test func valuesFlagsAndPositional() throws {
        let parsed = try Parser.parse(["--url", "http://x", "--json", "--context=-", "ctx.json"], for: Self.command)
        #expect(parsed.values == ["url": "http://x", "context": "-"])
        #expect(parsed.flags == ["json"])
        #expect(parsed.positional == "ctx.json")
        #expect(!parsed.wantsHelp)

        // `-` is a value or a positional (standard input); `--` ends the options.
        #expect(try Parser.parse(["--context", "-"], for: Self.command).values["context"] == "-")
        #expect(try Parser.parse(["-"], for: Self.command).positional == "-")
        #expect(try Parser.parse(["--", "--json"], for: Self.command).positional == "--json")
        #expect(try Parser.parse(["--url="], for: Self.command).values["url"] == "")
        #expect(try Parser.parse([], for: Self.command) == Parser.Parsed())
    }

    @Test func helpWinsOverEverythingElse() throws {
        #expect(try Parser.parse(["--url", "x", "--help"], for: Self.command).wantsHelp)
        #expect(try Parser.parse(["-h", "a", "b", "c"], for: Self.command).wantsHelp)
        #expect(try Parser.parse(["--", "--help"], for: Self.command).wantsHelp == false)
    }

    @Test(arguments: [
        (["--nope"], "unknown option --nope for demo"),
        (["-x"], "unknown option -x"),
        (["--url"], "--url needs a value"),
        (["--url", "--json"], "--url needs a value"),
        (["--json=yes"], "--json takes no value"),
        (["--url", "a", "--url", "b"], "--url given more than once"),
        (["--json", "--json"], "--json given more than once"),
        (["one", "two"], "unexpected argument two for demo"),
    ])
    func usageErrors(arguments: [String], message: String) {
        #expect(throws: Parser.UsageError(message)) { try Parser.parse(arguments, for: Self.command) }
    }

    @Test func noPositionalAllowedWhenNoneDeclared() {
        var command = Self.command
        command.positional = nil
        #expect(throws: Parser.UsageError("unexpected argument extra for demo")) {
            try Parser.parse(["extra"], for: command)
        }
    }

    @Test func durations() {
        #expect(Parser.duration("5s") == .seconds(5))
        #expect(Parser.duration("5") == .seconds(5))
        #expect(Parser.duration("250ms") == .milliseconds(250))
        #expect(Parser.duration("1.5m") == .seconds(90))
        #expect(Parser.duration("2h") == .seconds(7200))
        for bad in ["", "s", "0s", "-1s", "abc", "5x", "nan", "inf", "0.1ms", "1e300s"] {
            #expect(Parser.duration(bad) == nil, "\(bad)")
        }
    }

    @Test func helpListsEveryOptionAligned() throws {
        let help = Parser.help(for: Self.command)
        #expect(help.hasPrefix("usage: halyard demo [--url URL] [--context FILE|-] [--json] [FILE|-]"))
        let lines = help.split(separator: "\n").map(String.init)
        var columns: [Int] = []
        for text in ["where", "what", "how", "show this help"] {
            let line = try #require(lines.first { $0.hasPrefix("  -") && $0.hasSuffix("  " + text) })
            columns.append(line.count - text.count)
        }
        #expect(Set(columns).count == 1, "help texts start in one column: \(columns)")
    }

    @Test func repeatableOptionsAndHelpForACommand() throws {
        var command = Self.command
        command.options.append(.init(name: "attr", valueName: "NAME=VALUE", help: "an attribute", repeatable: true))
        let parsed = try Parser.parse(["--attr", "a=1", "--attr=b=2", "--json"], for: command)
        #expect(parsed.lists["attr"] == ["a=1", "b=2"])
        #expect(parsed.values["attr"] == nil)
        #expect(Parser.help(for: command).contains("[--attr NAME=VALUE]..."))
        #expect(try Parser.topLevel(["help", "eval"]) == .commandHelp("eval"))
    }
}
