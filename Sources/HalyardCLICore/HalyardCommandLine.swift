import Halyard

/// The `halyard` command: dispatches to `eval`, `context`, `watch` and `verify`, prints help and
/// the version, and turns failures into a line on standard error and an exit status
/// (docs/cli.md).
public enum HalyardCommandLine {
    static let commands = [EvalCommand.command, ContextCommand.command, WatchCommand.command, VerifyCommand.command]

    static var usage: String {
        let width = commands.map(\.name.count).max() ?? 0
        let rows = commands.map {
            "  " + $0.name + String(repeating: " ", count: width - $0.name.count) + "  " + $0.summary
        }
        return
            (["usage: halyard COMMAND [OPTIONS]", "", "commands:"] + rows + [
                "",
                "Run 'halyard COMMAND --help' for a command's options; 'halyard --version' for the version.",
                "The key comes from --key-file FILE or $HALYARD_KEY. Exit status: 0 ok, 1 control-plane or input error, 2 usage.",
            ]).joined(separator: "\n")
    }

    /// Runs the command line `arguments` (without the program name) and returns the exit status.
    public static func run(_ arguments: [String], environment: [String: String]) async -> Int32 {
        let console = Console(environment: environment)
        do throws(CommandFailure) {
            try await dispatch(arguments, environment: environment, console: console)
            return ExitStatus.ok
        } catch {
            console.error(error.cause)
            if case .usage = error { console.error("run 'halyard --help' for usage") }
            return error.exitStatus
        }
    }

    private static func dispatch(_ arguments: [String], environment: [String: String], console: Console)
        async throws(CommandFailure)
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
                return
            }
            switch name {
            case EvalCommand.command.name: try await EvalCommand.run(parsed, environment: environment, console: console)
            case ContextCommand.command.name: try ContextCommand.run(parsed, console: console)
            case WatchCommand.command.name:
                try await WatchCommand.run(parsed, environment: environment, console: console)
            case VerifyCommand.command.name:
                try await VerifyCommand.run(parsed, environment: environment, console: console)
            default: throw .usage("unknown command \(name)")
            }
        }
    }
}
