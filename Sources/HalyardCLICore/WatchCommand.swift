import Dispatch
import Foundation
import Halyard

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `halyard watch`: poll the control plane and print every change until Ctrl-C (SIGINT), then
/// close the client cleanly (`shutdown`: pending exposures flushed).
enum WatchCommand {
    static let command = CommandLineParser.Command(
        name: "watch",
        summary: "Poll the control plane and print each change (flag values, status) until interrupted (Ctrl-C).",
        options: Connection.options + [
            .init(name: "interval", valueName: "DURATION", help: "how often to poll (default 5s)"),
            .init(name: "json", help: "print one JSON object per line instead of text"),
        ])

    static func run(_ parsed: CommandLineParser.Parsed, environment: [String: String], console: Console)
        async throws(CommandFailure)
    {
        let connection = try Connection(parsed, environment: environment)
        var interval = Duration.seconds(5)
        if let text = parsed.values["interval"] {
            guard let value = CommandLineParser.duration(text) else {
                throw .usage("--interval \(text) is not a duration (for example 500ms, 5s, 1m)")
            }
            interval = value
        }

        // Ctrl-C closes the client; its event stream then ends and the loop below with it.
        let interrupt = Interrupt()
        let problems = ProblemLog()
        let client = try connection.makeClient(poll: interval, log: problems.handler)
        interrupt.arm(closing: client)
        defer { interrupt.disarm() }

        var printer = ChangePrinter(console: console, json: parsed.flags.contains("json"))
        let events = client.events
        printer.show(flags: client.servedFlags, status: client.status)
        for await event in events {
            if case .error(_, let message) = event { printer.problem(message) }
            printer.show(flags: client.servedFlags, status: client.status)
            if client.status == .fatal { break }
        }
        _ = await client.shutdown(timeout: .seconds(5))
        if !interrupt.fired, client.status == .fatal {
            throw .controlPlane(problems.lastProblem ?? "the control plane refused the key")
        }
    }
}

/// SIGINT handling with a dispatch signal source: the default action (exit at once) is turned
/// off, and each SIGINT closes the client instead.
private final class Interrupt {
    private struct State {
        var fired = false
        var client: FlagClient?
    }
    private let state = Guarded(State())
    private let source: any DispatchSourceSignal

    init() {
        signal(SIGINT, SIG_IGN)
        source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        source.setEventHandler { [state] in
            state.withLock { s -> FlagClient? in
                s.fired = true
                return s.client
            }?.close()
        }
        source.resume()
    }

    /// Closes `client` on SIGINT (at once if one already came).
    func arm(closing client: FlagClient) {
        let firedAlready = state.withLock { s -> Bool in
            s.client = client
            return s.fired
        }
        if firedAlready { client.close() }
    }

    /// Stops listening.
    func disarm() { source.cancel() }

    /// Whether SIGINT came.
    var fired: Bool { state.withLock { $0.fired } }
}

/// Prints what changed since the last call: the status, and each flag whose served result
/// (value, variant, reason or error) changed, appeared or went away.
private struct ChangePrinter {
    let console: Console
    let json: Bool
    private var status: ClientStatus?
    private var flags: [String: ServedFlag] = [:]

    init(console: Console, json: Bool) {
        self.console = console
        self.json = json
    }

    mutating func show(flags current: [ServedFlag], status: ClientStatus) {
        let now = Date()
        if status != self.status {
            let from = self.status?.rawValue ?? "-"
            if json {
                emit(
                    now,
                    [
                        "type": "status", "from": self.status.map { .string($0.rawValue) } ?? .null,
                        "to": .string(status.rawValue),
                    ])
            } else {
                let colour: Console.Style =
                    status == .ready ? .green : (status == .error || status == .fatal ? .red : .yellow)
                console.line("\(clockTime(now))  status  \(from) → \(console.styled(status.rawValue, colour))")
            }
            self.status = status
        }
        let next = Dictionary(current.map { ($0.key, $0) }, uniquingKeysWith: { _, last in last })
        for key in Set(flags.keys).union(next.keys).sorted() where flags[key] != next[key] {
            let old = flags[key], new = next[key]
            if json {
                emit(
                    now,
                    [
                        "type": "change", "key": .string(key), "from": old?.jsonObject ?? .null,
                        "to": new?.jsonObject ?? .null,
                    ])
            } else {
                console.line(
                    "\(clockTime(now))  flag    \(console.styled(key, .bold))  \(summary(old)) → \(summary(new))")
            }
        }
        flags = next
    }

    func problem(_ message: String) {
        let now = Date()
        if json {
            emit(now, ["type": "error", "message": .string(message)])
        } else {
            console.line("\(clockTime(now))  error   \(console.styled(message, .red))")
        }
    }

    private func emit(_ time: Date, _ members: [String: JSONValue]) {
        var members = members
        members["time"] = .string(isoTime(time))
        console.line(JSONValue.object(members).outputLine)
    }

    /// `true (on, TARGETING_MATCH)`, `- (ERROR, FLAG_NOT_FOUND)`, or `(absent)`.
    private func summary(_ flag: ServedFlag?) -> String {
        guard let flag else { return "(absent)" }
        let details = [flag.variant, flag.reason.rawValue, flag.errorCode?.rawValue].compactMap { $0 }
        return flag.valueText + " (" + details.joined(separator: ", ") + ")"
    }
}
