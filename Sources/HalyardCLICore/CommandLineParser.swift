/// The `halyard` command line, parsed by hand (swift-argument-parser cannot be fetched here).
///
/// Grammar, for every command: `--name value` or `--name=value` for an option with a value,
/// `--name` for a flag, `-h`/`--help` anywhere before `--`, `--` to end the options, and at most
/// the positional arguments the command declares (`-` is a positional: standard input). An
/// option may be given once unless it is repeatable (`--attr`). Everything else is a
/// ``UsageError`` (exit status 2).
enum CommandLineParser {
    /// One option a command accepts.
    struct Option: Sendable, Hashable {
        /// The name without dashes: `url` for `--url`.
        var name: String
        /// The placeholder of its value in help (`URL`), or nil for a flag without a value.
        var valueName: String?
        /// One line of help.
        var help: String
        /// Whether it may be given more than once (`--attr`); its values are collected in order
        /// in ``Parsed/lists``.
        var repeatable = false
    }

    /// What a command accepts.
    struct Command: Sendable, Hashable {
        /// The command's name (`eval`).
        var name: String
        /// One line saying what it does.
        var summary: String
        /// Its options, in help order.
        var options: [Option]
        /// The placeholder of its one optional positional argument (`FILE|-`), or nil for none.
        var positional: String? = nil

        func option(named name: String) -> Option? { options.first { $0.name == name } }
    }

    /// A parsed command line.
    struct Parsed: Sendable, Hashable {
        /// Option values by name (options with a value).
        var values: [String: String] = [:]
        /// Flags that were given (options without a value).
        var flags: Set<String> = []
        /// The values of repeatable options, in the order given.
        var lists: [String: [String]] = [:]
        /// The positional argument, when one was given.
        var positional: String?
        /// Whether `-h` or `--help` was given (the rest may be incomplete).
        var wantsHelp = false
    }

    /// A command line that does not fit the grammar; `description` is the one-line cause.
    struct UsageError: Error, Sendable, Hashable, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// What the words before a command's own arguments ask for.
    enum TopLevel: Sendable, Hashable {
        case help
        /// `halyard help COMMAND`: that command's help.
        case commandHelp(String)
        case version
        /// A command name and its arguments (the name is not checked here).
        case command(String, [String])
    }

    /// Splits `halyard [--help | --version | COMMAND ARGS...]`.
    static func topLevel(_ arguments: [String]) throws(UsageError) -> TopLevel {
        guard let first = arguments.first else { throw UsageError("missing command") }
        switch first {
        case "help" where arguments.count > 1: return .commandHelp(arguments[1])
        case "-h", "--help", "help": return .help
        case "--version", "version": return .version
        case let word where word.hasPrefix("-"): throw UsageError("unknown option \(word)")
        default: return .command(first, Array(arguments.dropFirst()))
        }
    }

    /// Parses a command's arguments against what it accepts.
    static func parse(_ arguments: [String], for command: Command) throws(UsageError) -> Parsed {
        var parsed = Parsed()
        var positionals: [String] = []
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let word = arguments[index]
            index += 1
            if optionsEnded || word == "-" || !word.hasPrefix("-") {
                positionals.append(word)
                continue
            }
            if word == "--" {
                optionsEnded = true
                continue
            }
            if word == "-h" || word == "--help" {
                parsed.wantsHelp = true
                continue
            }
            guard word.hasPrefix("--") else { throw UsageError("unknown option \(word)") }
            let body = word.dropFirst(2)
            let name = String(body.prefix { $0 != "=" })
            let inlineValue = body.firstIndex(of: "=").map { String(body[body.index(after: $0)...]) }
            guard let option = command.option(named: name) else {
                throw UsageError("unknown option --\(name) for \(command.name)")
            }
            guard option.repeatable || (parsed.values[name] == nil && !parsed.flags.contains(name)) else {
                throw UsageError("--\(name) given more than once")
            }
            guard option.valueName != nil else {
                if inlineValue != nil { throw UsageError("--\(name) takes no value") }
                parsed.flags.insert(name)
                continue
            }
            let value: String
            if let inlineValue {
                value = inlineValue
            } else if index < arguments.count, !arguments[index].hasPrefix("--") {
                value = arguments[index]
                index += 1
            } else {
                throw UsageError("--\(name) needs a value")
            }
            if option.repeatable {
                parsed.lists[name, default: []].append(value)
            } else {
                parsed.values[name] = value
            }
        }
        if parsed.wantsHelp { return parsed }
        let allowed = command.positional == nil ? 0 : 1
        if positionals.count > allowed {
            throw UsageError("unexpected argument \(positionals[allowed]) for \(command.name)")
        }
        parsed.positional = positionals.first
        return parsed
    }

    /// Parses a duration: a number followed by `ms`, `s`, `m` or `h` (`500ms`, `5s`, `1.5m`); a
    /// bare number is seconds. Nil when it is not one, or not above zero.
    static func duration(_ text: String) -> Duration? {
        let units: [(suffix: String, seconds: Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)]
        let unit = units.first { text.hasSuffix($0.suffix) } ?? ("", 1)
        guard let number = Double(text.dropLast(unit.suffix.count)), number.isFinite, number > 0 else { return nil }
        let milliseconds = (number * unit.seconds * 1000).rounded()
        guard milliseconds >= 1, milliseconds < 1e12 else { return nil }
        return .milliseconds(Int64(milliseconds))
    }

    /// The help text of a command: usage line, summary and aligned options.
    static func help(for command: Command) -> String {
        var usage = "usage: halyard \(command.name)"
        for option in command.options {
            usage += option.valueName.map { " [--\(option.name) \($0)]" } ?? " [--\(option.name)]"
            if option.repeatable { usage += "..." }
        }
        if let positional = command.positional { usage += " [\(positional)]" }
        let rows = command.options.map { option in
            ("--\(option.name)" + (option.valueName.map { " \($0)" } ?? ""), option.help)
        }
        let width = max(rows.map(\.0.count).max() ?? 0, "-h, --help".count)
        func pad(_ text: String, _ width: Int) -> String {
            text + String(repeating: " ", count: max(width - text.count, 0))
        }
        var lines = [usage, "", command.summary, "", "options:"]
        for (left, right) in rows {
            lines.append("  " + pad(left, width) + "  " + right)
        }
        lines.append("  " + pad("-h, --help", width) + "  show this help")
        return lines.joined(separator: "\n")
    }
}
