import Foundation
import Halyard

/// `halyard verify`: the install check. Is the key accepted, and how many flags are served?
enum VerifyCommand {
    static let command = CommandLineParser.Command(
        name: "verify",
        summary: "Check the install: is the key accepted, and how many flags does the control plane serve?",
        options: Connection.options + [.init(name: "json", help: "print JSON instead of aligned lines")])

    static func run(_ parsed: CommandLineParser.Parsed, environment: [String: String], console: Console)
        async throws(CommandFailure)
    {
        let connection = try Connection(parsed, environment: environment, console: console)
        // One request and nothing else: no client is started (its start-up fetch would be a
        // second request). The log says why there was no answer.
        let problems = ProblemLog()
        let options = try connection.clientOptions(log: problems.handler)
        let check: InstallCheck?
        do {
            check = try await FlagClient.verify(options: options)
        } catch {
            throw .input(error.description)
        }
        let url = connection.baseURL.absoluteString
        guard let check else {
            let cause = problems.lastProblem.map {
                $0.replacingOccurrences(of: "no answer to the install check: ", with: "")
            }
            throw .noAnswer("no answer from \(url): \(cause ?? "network error or timeout")")
        }

        if parsed.flags.contains("json") {
            let document: JSONValue = .object([
                "outcome": .string(check.outcome.name),
                "status": .int(Int64(check.status)),
                "flagCount": .int(Int64(check.flagCount)),
                "failedFlagCount": .int(Int64(check.failedFlagCount)),
                "etag": check.etag.map(JSONValue.string) ?? .null,
                "metadata": check.metadata.jsonObject,
                "contextFingerprint": .string(check.contextFingerprint),
                "url": .string(url),
            ])
            console.line(document.outputLine)
        } else {
            console.table(
                [
                    ["control plane", url],
                    ["key", "\(check.outcome.explanation) (\(check.status))"],
                    ["flags", "\(check.flagCount) served, \(check.failedFlagCount) failed"],
                    ["etag", check.etag ?? "-"],
                    ["metadata", check.metadata.isEmpty ? "-" : check.metadata.jsonObject.jsonString],
                    ["context", check.contextFingerprint],
                    ["round trip", readable(check.duration)],
                ], header: false
            ) { row, column, cell in
                switch (row, column) {
                case (_, 0): console.styled(cell, .bold)
                case (1, 1): console.styled(cell, check.isAccepted ? .green : .red)
                default: cell
                }
            }
        }
        guard check.isAccepted else { throw .shown(check.outcome.explanation + " (\(check.status))") }
    }
}

extension InstallCheck.Outcome {
    /// The `--json` spelling: `accepted`, `rejected`, `invalidContext`, `unexpected`.
    var name: String {
        switch self {
        case .accepted: "accepted"
        case .rejected: "rejected"
        case .invalidContext: "invalidContext"
        case .unexpected: "unexpected"
        }
    }

    /// A phrase for people.
    var explanation: String {
        switch self {
        case .accepted: "accepted"
        case .rejected: "the control plane refused the key"
        case .invalidContext: "the control plane refused the context"
        case .unexpected: "the control plane answered unexpectedly"
        }
    }
}
