import Dispatch
import Foundation
import Halyard

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `halyard watch`: poll the control plane and print every change until Ctrl-C (SIGINT) or
/// SIGTERM, then close the client cleanly (`shutdown`: pending exposures flushed) and exit 130 or
/// 143; a second signal during that shutdown exits at once. A reader of standard output that
/// goes away (`watch | head -1`) stops it the same way, quietly, with status 141.
enum WatchCommand {
    static let command = CommandLineParser.Command(
        name: "watch",
        summary: "Poll the control plane and print each change (flag values, status) until interrupted (Ctrl-C).",
        options: Connection.options + [
            .init(name: "interval", valueName: "DURATION", help: "how often to poll (default 5s)"),
            .init(name: "json", help: "print one JSON object per line instead of text"),
        ])

    /// Runs the command; returns its exit status (0 is not possible: it ends on a signal, a
    /// closed output, or a refused key, which throws).
    static func run(_ parsed: CommandLineParser.Parsed, environment: [String: String], console: Console)
        async throws(CommandFailure) -> Int32
    {
        let connection = try Connection(parsed, environment: environment, console: console)
        var interval = Duration.seconds(5)
        if let text = parsed.values["interval"] {
            guard let value = CommandLineParser.duration(text) else {
                throw .usage("--interval \(text) is not a duration (for example 500ms, 5s, 1m)")
            }
            interval = value
        }

        // A signal or a closed output closes the client; its event stream then ends and the
        // loop below with it.
        let stopper = Stopper(console: console)
        let problems = ProblemLog()
        let client = try connection.makeClient(poll: interval, log: problems.handler)
        stopper.arm(closing: client)
        defer { stopper.disarm() }

        var printer = ChangePrinter(console: console, json: parsed.flags.contains("json"))
        let events = client.events()
        printer.show(flags: client.servedFlags, status: client.status)
        // A refusal answered before the subscription above sends no event: the status is
        // already FATAL here, and waiting for an event would wait for ever. A refusal after it
        // arrives as an event and ends the loop.
        if client.status != .fatal {
            for await event in events {
                if case .error(_, let message) = event { printer.problem(message) }
                printer.show(flags: client.servedFlags, status: client.status)
                if console.outputClosed { stopper.outputClosed() }
                if client.status == .fatal { break }
            }
        }
        _ = await client.shutdown(timeout: .seconds(5))
        if let status = stopper.exitStatus { return status }
        if console.outputClosed { return ExitStatus.outputClosed }
        throw .controlPlane(problems.lastProblem ?? "the control plane refused the key")
    }
}

/// What `watch` does when asked to stop: the first signal (or a closed output) starts the clean
/// shutdown and fixes the exit status (128 + the signal, or 141); a second signal during that
/// shutdown exits at once with 128 + that signal. A pure state machine (tested without
/// threads); ``Stopper`` performs its actions.
struct StopPolicy: Sendable, Hashable {
    /// What to do.
    enum Action: Sendable, Hashable {
        /// Close the client and let the shutdown run.
        case shutDown
        /// Exit now with this status.
        case exit(Int32)
        /// Nothing (already stopping).
        case none
    }

    /// The exit status chosen by the first stop request, if one came.
    private(set) var exitStatus: Int32?

    /// A signal arrived.
    mutating func signal(_ number: Int32) -> Action {
        guard exitStatus == nil else { return .exit(ExitStatus.signalled(number)) }
        exitStatus = ExitStatus.signalled(number)
        return .shutDown
    }

    /// Standard output's reader went away.
    mutating func outputClosed() -> Action {
        guard exitStatus == nil else { return .none }
        exitStatus = ExitStatus.outputClosed
        return .shutDown
    }
}

/// SIGINT and SIGTERM handling with dispatch signal sources (their default action, exiting at
/// once, is turned off), and a watcher that notices when standard output's reader goes away
/// (a pipe whose read end closed reports `POLLERR`) even while nothing is printed.
///
/// `@unchecked Sendable`: the signal sources (not Sendable) are set up in `init` and afterwards
/// only cancelled; everything else is immutable or behind `Guarded`.
private final class Stopper: @unchecked Sendable {
    private struct State {
        var policy = StopPolicy()
        var client: FlagClient?
        var stopped = false
    }
    private let state = Guarded(State())
    private let sources: [any DispatchSourceSignal]
    private let console: Console

    init(console: Console) {
        self.console = console
        var sources: [any DispatchSourceSignal] = []
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            sources.append(source)
        }
        self.sources = sources
        for (source, number) in zip(sources, [SIGINT, SIGTERM]) {
            source.setEventHandler { [weak self] in self?.received(number) }
            source.resume()
        }
        if Self.outputIsPipeOrSocket { startOutputWatcher() }
    }

    /// Closes `client` when asked to stop (at once if that happened already).
    func arm(closing client: FlagClient) {
        let stopping = state.withLock { s -> Bool in
            s.client = client
            return s.policy.exitStatus != nil
        }
        if stopping { client.close() }
    }

    /// Stops listening.
    func disarm() {
        state.withLock { $0.stopped = true }
        for source in sources { source.cancel() }
    }

    /// The exit status the first stop request chose, if one came.
    var exitStatus: Int32? { state.withLock { $0.policy.exitStatus } }

    /// Standard output was found closed by a write.
    func outputClosed() {
        perform(state.withLock { s in (s.policy.outputClosed(), s.client) })
    }

    private func received(_ number: Int32) {
        let (action, client) = state.withLock { s in (s.policy.signal(number), s.client) }
        if action == .shutDown, isatty(STDERR_FILENO) == 1 {
            console.error("stopping (press Ctrl-C again to quit at once)")
        }
        perform((action, client))
    }

    private func perform(_ step: (StopPolicy.Action, FlagClient?)) {
        switch step.0 {
        case .shutDown: step.1?.close()
        case .exit(let status): _exit(status)
        case .none: break
        }
    }

    private static var outputIsPipeOrSocket: Bool {
        var info = stat()
        guard fstat(STDOUT_FILENO, &info) == 0 else { return false }
        let type = info.st_mode & S_IFMT
        return type == S_IFIFO || type == S_IFSOCK
    }

    /// Polls standard output for `POLLERR`/`POLLHUP` (no events asked: only those are
    /// reported), a quarter second at a time, until disarmed.
    private func startOutputWatcher() {
        Thread { [weak self] in
            while let self, !self.state.withLock({ $0.stopped }) {
                var descriptor = pollfd(fd: STDOUT_FILENO, events: 0, revents: 0)
                let ready = poll(&descriptor, 1, 250)
                if ready > 0, descriptor.revents & Int16(POLLERR | POLLHUP) != 0 {
                    self.console.markOutputClosed()
                    self.outputClosed()
                    return
                }
            }
        }.start()
    }
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
                let to = status.rawValue.terminalSafe
                console.line("\(clockTime(now))  status  \(from.terminalSafe) → \(console.styled(to, colour))")
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
                let shown = (key: key.terminalSafe, old: summary(old).terminalSafe, new: summary(new).terminalSafe)
                console.line(
                    "\(clockTime(now))  flag    \(console.styled(shown.key, .bold))  \(shown.old) → \(shown.new)")
            }
        }
        flags = next
    }

    func problem(_ message: String) {
        let now = Date()
        if json {
            emit(now, ["type": "error", "message": .string(message)])
        } else {
            console.line("\(clockTime(now))  error   \(console.styled(message.terminalSafe, .red))")
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
