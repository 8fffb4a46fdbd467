import Foundation
import Halyard

/// `halyard eval`: fetch the values for a context once and print one row per flag.
enum EvalCommand {
    static let command = CommandLineParser.Command(
        name: "eval",
        summary: "Fetch the flag values the control plane serves for a context, once, and print them.",
        options: Connection.options + [.init(name: "json", help: "print JSON instead of a table")])

    static func run(_ parsed: CommandLineParser.Parsed, environment: [String: String], console: Console)
        async throws(CommandFailure)
    {
        let connection = try Connection(parsed, environment: environment)
        let problems = ProblemLog()
        let client = try connection.makeClient(log: problems.handler)
        let ready = await client.ready(timeout: connection.timeout)
        let flags = client.servedFlags
        _ = await client.shutdown(timeout: .seconds(2))
        guard ready else {
            let cause = problems.lastProblem ?? "no answer"
            throw .controlPlane("no values from \(connection.baseURL.absoluteString): \(cause)")
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
