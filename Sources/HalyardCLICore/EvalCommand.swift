import Foundation
import Halyard

/// `halyard eval`: fetch the values for a context once and print one row per flag (or one flag,
/// `--flag KEY`, or just its value, `--raw`).
enum EvalCommand {
    static let command = CommandLineParser.Command(
        name: "eval",
        summary: "Fetch the flag values the control plane serves for a context, once, and print them.",
        options: Connection.options + [
            .init(name: "flag", valueName: "KEY", help: "only this flag"),
            .init(name: "raw", help: "with --flag: print just its value (a string without quotes)"),
            .init(name: "json", help: "print JSON instead of a table"),
        ])

    static func run(_ parsed: CommandLineParser.Parsed, environment: [String: String], console: Console)
        async throws(CommandFailure)
    {
        let only = parsed.values["flag"]
        let raw = parsed.flags.contains("raw")
        if raw && only == nil { throw .usage("--raw needs --flag KEY") }
        if raw && parsed.flags.contains("json") { throw .usage("--raw and --json cannot be used together") }
        let connection = try Connection(parsed, environment: environment, console: console)
        let problems = ProblemLog()
        let client = try connection.makeClient(log: problems.handler)
        let ready = await client.ready(timeout: connection.timeout)
        var flags = client.servedFlags
        let status = client.status
        _ = await client.shutdown(timeout: .seconds(2))
        guard ready else {
            let cause = problems.lastProblem ?? "no answer within \(readable(connection.timeout))"
            let message = "no values from \(connection.baseURL.absoluteString): \(cause)"
            throw status == .fatal || cause.contains("refused") ? .controlPlane(message) : .noAnswer(message)
        }
        if let only {
            flags = flags.filter { $0.key == only }
            guard let flag = flags.first else { throw .noValue("\(only) is not served for this context") }
            if raw {
                guard flag.errorCode == nil, let value = flag.value else {
                    let details = [flag.reason.rawValue, flag.errorCode?.rawValue, flag.errorMessage].compactMap { $0 }
                    throw .noValue("\(only) has no value (\(details.joined(separator: ", "))): use the code default")
                }
                if case .string(let text) = value {
                    console.line(text.terminalSafe)  // the control plane's text: no escape sequence
                } else {
                    console.line(value.outputLine)
                }
                return
            }
        }

        if parsed.flags.contains("json") {
            let fingerprint = (try? connection.context.fitted())?.fingerprint
            let document: JSONValue = .object([
                "contextFingerprint": fingerprint.map(JSONValue.string) ?? .null,
                "flags": .array(flags.map(\.jsonObject)),
            ])
            console.line(document.outputLine)
            return
        }
        let rows =
            [["KEY", "VALUE", "VARIANT", "REASON", "ERROR"]]
            + flags.map { flag in
                [flag.key, flag.valueText, flag.variant ?? "-", flag.reason.rawValue, flag.errorCode?.rawValue ?? "-"]
            }
        console.table(rows) { _, column, cell in column == 4 && cell.first != "-" ? console.styled(cell, .red) : cell }
    }
}
