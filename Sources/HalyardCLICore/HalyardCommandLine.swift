import Halyard

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The `halyard` command: dispatches to `eval`, `context`, `watch`, `verify` and `completion`,
/// prints help and the version, and turns failures into a line on standard error (and, with
/// `--json`, an error object on standard output) and an exit status (docs/cli.md).
public enum HalyardCommandLine {
    static let commands = [
        EvalCommand.command, ContextCommand.command, WatchCommand.command, VerifyCommand.command,
        CompletionCommand.command,
    ]

    static var usage: String {
        let width = commands.map(\.name.count).max() ?? 0
        let rows = commands.map {
            "  " + $0.name + String(repeating: " ", count: width - $0.name.count) + "  " + $0.summary
        }
        return
            (["usage: halyard COMMAND [OPTIONS]", "", "commands:"] + rows + [
                "",
                "Run 'halyard help COMMAND' (or 'halyard COMMAND --help') for a command's options; 'halyard --version' for the version.",
                "The key comes from --key-file FILE, --key-file - (standard input) or $HALYARD_KEY; the URL from --url or $HALYARD_URL.",
                "Exit status: 0 ok, 1 control-plane or input error, 2 usage, 130/143 watch stopped by SIGINT/SIGTERM, 141 output closed.",
            ]).joined(separator: "\n")
    }

    /// Runs the command line `arguments` (without the program name) and returns the exit status.
    ///
    /// SIGPIPE is ignored from here on: a reader of standard output that goes away makes writes
    /// fail with `EPIPE`, which ends the command quietly (status 141) instead of killing it.
    public static func run(_ arguments: [String], environment: [String: String]) async -> Int32 {
        signal(SIGPIPE, SIG_IGN)
        let console = Console(environment: environment)
        let status: Int32
        do throws(CommandFailure) {
            status = try await dispatch(arguments, environment: environment, console: console)
        } catch {
            console.error(error.cause)
            if case .usage = error {
                let name = arguments.first.flatMap { word in commands.first { $0.name == word }?.name }
                console.error("run 'halyard \(name.map { "\($0) " } ?? "")--help' for usage")
            }
            if case .shown = error {
            } else if wantsJSON(arguments) {
                console.line(
                    JSONValue.object([
                        "error": .object(["kind": .string(error.kind), "message": .string(error.cause)])
                    ]).outputLine)
            }
            return console.outputClosed ? ExitStatus.outputClosed : error.exitStatus
        }
        return console.outputClosed ? ExitStatus.outputClosed : status
    }

    /// Whether a command's arguments ask for `--json` (before any `--`), even when they could
    /// not be parsed: every failure of such a command prints the JSON error object.
    static func wantsJSON(_ arguments: [String]) -> Bool {
        guard let first = arguments.first, commands.contains(where: { $0.name == first }) else { return false }
        return arguments.dropFirst().prefix { $0 != "--" }.contains("--json")
    }

    private static func dispatch(_ arguments: [String], environment: [String: String], console: Console)
        async throws(CommandFailure) -> Int32
    {
        let topLevel: CommandLineParser.TopLevel
        do {
            topLevel = try CommandLineParser.topLevel(arguments)
        } catch {
            throw .usage(error.description)
        }
        switch topLevel {
        case .help:
            console.line(usage)
        case .commandHelp(let name):
            guard let command = commands.first(where: { $0.name == name }) else {
                throw .usage("unknown command \(name)")
            }
            console.line(CommandLineParser.help(for: command))
        case .version:
            console.line("halyard \(FlagClient.sdkVersion)")
        case .command(let name, let rest):
            guard let command = commands.first(where: { $0.name == name }) else {
                throw .usage("unknown command \(name)")
            }
            let parsed: CommandLineParser.Parsed
            do {
                parsed = try CommandLineParser.parse(rest, for: command)
            } catch {
                throw .usage(error.description)
            }
            if parsed.wantsHelp {
                console.line(CommandLineParser.help(for: command))
                return ExitStatus.ok
            }
            switch name {
            case EvalCommand.command.name: try await EvalCommand.run(parsed, environment: environment, console: console)
            case ContextCommand.command.name: try ContextCommand.run(parsed, console: console)
            case WatchCommand.command.name:
                return try await WatchCommand.run(parsed, environment: environment, console: console)
            case VerifyCommand.command.name:
                try await VerifyCommand.run(parsed, environment: environment, console: console)
            case CompletionCommand.command.name: try CompletionCommand.run(parsed, console: console)
            default: throw .usage("unknown command \(name)")
            }
        }
        return ExitStatus.ok
    }
}
