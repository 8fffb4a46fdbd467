import Foundation
import Halyard

/// The options every command that talks to a control plane shares (`--url`, `--key-file` or
/// `HALYARD_KEY`, `--context`, `--timeout`), turned into ``FlagClientOptions``.
///
/// The key is read from a file or the environment, never from the command line (where `ps` and
/// shell history would show it), and it is never printed: errors name the file, not its content.
struct Connection {
    var baseURL: URL
    var key: String
    var context: EvaluationContext
    var timeout: Duration

    /// The options of ``CommandLineParser/Command`` for a connection.
    static let options: [CommandLineParser.Option] = [
        .init(name: "url", valueName: "URL", help: "the control plane's base URL (required)"),
        .init(name: "key-file", valueName: "FILE", help: "a file holding the key (else $HALYARD_KEY)"),
        .init(name: "context", valueName: "FILE|-", help: "the evaluation context as JSON (default: anonymous)"),
        .init(name: "timeout", valueName: "DURATION", help: "how long to wait for the control plane (default 5s)"),
    ]

    init(_ parsed: CommandLineParser.Parsed, environment: [String: String]) throws(CommandFailure) {
        guard let text = parsed.values["url"] else { throw .usage("--url is required") }
        guard let url = URL(string: text), url.scheme != nil, url.host != nil else {
            throw .usage("--url \(text) is not an absolute URL")
        }
        baseURL = url
        key = try Self.key(parsed.values["key-file"], environment: environment)
        context =
            try parsed.values["context"].map { path throws(CommandFailure) in try loadContext(path).context }
            ?? .anonymous
        timeout =
            try parsed.values["timeout"].map { text throws(CommandFailure) in
                guard let duration = CommandLineParser.duration(text) else {
                    throw .usage("--timeout \(text) is not a duration (for example 500ms, 5s, 1m)")
                }
                return duration
            } ?? .seconds(5)
    }

    private static func key(_ keyFile: String?, environment: [String: String]) throws(CommandFailure) -> String {
        if let keyFile {
            guard let data = FileManager.default.contents(atPath: keyFile) else {
                throw .input("cannot read the key file \(keyFile)")
            }
            let key = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard !key.isEmpty else { throw .input("the key file \(keyFile) is empty") }
            return key
        }
        guard let key = environment["HALYARD_KEY"]?.trimmingCharacters(in: .whitespacesAndNewlines), !key.isEmpty
        else { throw .usage("no key: pass --key-file FILE or set HALYARD_KEY") }
        return key
    }

    /// Client options for a command-line client: role `.service` (operators check server keys
    /// too), an install id kept in memory and the on-device cache off (the command writes no
    /// file and shows only what the control plane serves now), the app id `halyard-cli`,
    /// `timeout` for each request and for `ready`, no polling unless `poll`.
    func clientOptions(poll: Duration = .zero, log: HalyardLogHandler? = nil) -> FlagClientOptions {
        var options = FlagClientOptions(baseURL: baseURL, key: key)
        options.role = .service
        options.initialContext = context
        options.installIDStorage = .memory
        options.maxCachedContexts = 0
        options.appID = "halyard-cli"
        options.requestTimeout = timeout
        options.readyTimeout = timeout
        options.pollInterval = poll
        options.pollJitter = 0
        options.logHandler = log
        return options
    }

    /// Creates the client; a configuration the library refuses is an input error.
    func makeClient(poll: Duration = .zero, log: HalyardLogHandler? = nil) throws(CommandFailure) -> FlagClient {
        do {
            return try FlagClient(options: clientOptions(poll: poll, log: log))
        } catch {
            throw .input(error.description)
        }
    }
}

/// A context file (`-` is standard input) parsed, and fitted to `limit` to check it; a parse
/// error carries its byte offset (`invalid context: invalid JSON at byte 12: ...`).
func loadContext(_ path: String, limit: Int = EvaluationContext.defaultFittingLimit) throws(CommandFailure)
    -> (context: EvaluationContext, fitted: FittedContext)
{
    let data: Data
    if path == "-" {
        data = FileHandle.standardInput.readDataToEndOfFile()
    } else {
        guard let contents = FileManager.default.contents(atPath: path) else {
            throw .input("cannot read the context file \(path)")
        }
        data = contents
    }
    do {
        let context = try EvaluationContext(json: data)
        return (context, try context.fitted(limit: limit))
    } catch {
        throw .input(path == "-" ? error.description : "\(path): \(error.description)")
    }
}

/// The last problem the client logged (warnings and errors), kept to say why values did not come.
final class ProblemLog: Sendable {
    private let last = Guarded<String?>(nil)

    /// The handler to put in the options.
    var handler: HalyardLogHandler {
        { [last] level, message in
            guard level >= .warning else { return }
            last.withLock { $0 = message }
        }
    }

    /// The last warning or error, if any.
    var lastProblem: String? { last.withLock { $0 } }
}
