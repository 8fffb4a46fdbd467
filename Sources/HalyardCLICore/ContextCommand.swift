import Halyard

/// `halyard context`: parse and fit a context; print its canonical JSON, fingerprint and the
/// attributes fitting dropped. No network.
enum ContextCommand {
    static let command = CommandLineParser.Command(
        name: "context",
        summary: "Parse and fit an evaluation context (a file, or standard input) as a client would send it.",
        options: [
            .init(name: "limit", valueName: "N", help: "the size cap in UTF-16 code units (default 4096)"),
            .init(name: "json", help: "print JSON instead of aligned lines"),
        ],
        positional: "FILE|-")

    static func run(_ parsed: CommandLineParser.Parsed, console: Console) throws(CommandFailure) {
        var limit = EvaluationContext.defaultFittingLimit
        if let text = parsed.values["limit"] {
            guard let value = Int(text), value > 0 else { throw .usage("--limit \(text) is not a positive integer") }
            limit = value
        }
        let fitted = try loadContext(parsed.positional ?? "-", limit: limit).fitted

        if parsed.flags.contains("json") {
            let document: JSONValue = .object([
                "canonicalJSON": .string(fitted.canonicalJSON),
                "fingerprint": .string(fitted.fingerprint),
                "droppedAttributes": .array(fitted.droppedAttributes.map(JSONValue.string)),
                "length": .int(Int64(fitted.utf16Length)),
                "limit": .int(Int64(fitted.limit)),
            ])
            console.line(document.outputLine)
            return
        }
        let dropped = fitted.droppedAttributes.isEmpty ? "none" : fitted.droppedAttributes.joined(separator: ", ")
        console.table(
            [
                ["canonical", fitted.canonicalJSON],
                ["fingerprint", fitted.fingerprint],
                ["length", "\(fitted.utf16Length) of \(fitted.limit) UTF-16 code units"],
                ["dropped", dropped],
            ], header: false
        ) { row, column, cell in
            switch (row, column) {
            case (_, 0): console.styled(cell, .bold)
            case (3, 1) where fitted.wasTrimmed: console.styled(cell, .yellow)
            default: cell
            }
        }
    }
}
