import Foundation
import Halyard

/// The options every command that talks to a control plane shares (`--url` or `HALYARD_URL`,
/// `--key-file` or `HALYARD_KEY`, `--cacert` or `HALYARD_CACERT`, `--context`,
/// `--targeting-key`, `--attr`, `--timeout`), turned into ``FlagClientOptions``.
///
/// The key is read from a file, standard input or the environment, never from the command line
/// (where `ps` and shell history would show it), and it is never printed: errors name the file,
/// not its content. User info in the URL (`https://user:secret@host`) is removed before the
/// library sees the URL: it is never sent, printed or logged.
struct Connection {
    var baseURL: URL
    var key: String
    var context: EvaluationContext
    var timeout: Duration
    /// The PEM file of certificate authorities to trust instead of the system's, if any.
    var trustedCAFile: String?

    /// The options of ``CommandLineParser/Command`` for a connection.
    static let options: [CommandLineParser.Option] = [
        .init(name: "url", valueName: "URL", help: "the control plane's base URL (else $HALYARD_URL)"),
        .init(name: "key-file", valueName: "FILE|-", help: "a file holding the key, - for stdin (else $HALYARD_KEY)"),
        .init(
            name: "cacert", valueName: "FILE", help: "trust this PEM CA file, not the system's (else $HALYARD_CACERT)"),
        .init(name: "context", valueName: "FILE|-", help: "the evaluation context as JSON (default: anonymous)"),
        .init(name: "targeting-key", valueName: "KEY", help: "the context's targeting key (over --context)"),
        .init(
            name: "attr", valueName: "NAME=VALUE",
            help: "a context attribute, VALUE as JSON or a bare string; repeatable",
            repeatable: true),
        .init(name: "timeout", valueName: "DURATION", help: "how long to wait for the control plane (default 5s)"),
    ]

    init(_ parsed: CommandLineParser.Parsed, environment: [String: String], console: Console) throws(CommandFailure) {
        let given = parsed.values["url"] ?? environment["HALYARD_URL"].flatMap { $0.isEmpty ? nil : $0 }
        guard let text = given else { throw .usage("--url is required (or set HALYARD_URL)") }
        let source = parsed.values["url"] == nil ? "HALYARD_URL" : "--url"
        guard var components = URLComponents(string: text), components.scheme != nil,
            let host = components.host, !host.isEmpty
        else {
            throw .usage("\(source) \(redactingUserInfo(text)) is not an absolute URL")
        }
        if components.user != nil || components.password != nil {
            components.user = nil
            components.password = nil
            console.error("warning: the user info in \(source) is ignored (the key is the credential); it is not sent")
        }
        guard let url = components.url else { throw .usage("\(source) \(redactingUserInfo(text)) is not a URL") }
        baseURL = url
        if parsed.values["key-file"] == "-", parsed.values["context"] == "-" {
            throw .usage("--key-file - and --context - cannot both read standard input")
        }
        key = try Self.key(parsed.values["key-file"], environment: environment)
        trustedCAFile = parsed.values["cacert"] ?? environment["HALYARD_CACERT"].flatMap { $0.isEmpty ? nil : $0 }
        if let trustedCAFile, !FileManager.default.isReadableFile(atPath: trustedCAFile) {
            throw .input("cannot read the CA file \(trustedCAFile)")
        }
        context = try inlineContext(parsed)
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
            let data: Data
            if keyFile == "-" {
                data = FileHandle.standardInput.readDataToEndOfFile()
            } else {
                guard let contents = FileManager.default.contents(atPath: keyFile) else {
                    throw .input("cannot read the key file \(keyFile)")
                }
                data = contents
            }
            let key = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            let name = keyFile == "-" ? "standard input" : "the key file \(keyFile)"
            guard !key.isEmpty else { throw .input("no key: \(name) is empty") }
            return key
        }
        guard let key = environment["HALYARD_KEY"]?.trimmingCharacters(in: .whitespacesAndNewlines), !key.isEmpty
        else { throw .usage("no key: pass --key-file FILE (or -) or set HALYARD_KEY") }
        return key
    }

    /// Client options for a command-line client: role `.service` (operators check server keys
    /// too), an install id kept in memory and the on-device cache off (the command writes no
    /// file and shows only what the control plane serves now), the app id `halyard-cli`,
    /// `timeout` for each request and for `ready`, no polling unless `poll`, and libcurl
    /// trusting `--cacert` when given.
    func clientOptions(poll: Duration = .zero, log: HalyardLogHandler? = nil) throws(CommandFailure)
        -> FlagClientOptions
    {
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
        if let trustedCAFile {
            #if os(Linux)
                options.transport = CurlTransport(trustedCAFile: trustedCAFile)
            #else
                _ = trustedCAFile
                throw .usage("--cacert is supported on Linux only (URLSession uses the system's trust settings)")
            #endif
        }
        return options
    }

    /// Creates the client; a configuration the library refuses is an input error.
    func makeClient(poll: Duration = .zero, log: HalyardLogHandler? = nil) throws(CommandFailure) -> FlagClient {
        let options = try clientOptions(poll: poll, log: log)
        do {
            return try FlagClient(options: options)
        } catch {
            throw .input(error.description)
        }
    }
}

/// `text` with the user info of a URL in it (`scheme://user:secret@host`) replaced by `***`, for
/// messages about a URL that could not be used.
func redactingUserInfo(_ text: String) -> String {
    guard let scheme = text.range(of: "://") else { return text }
    let authorityEnd = text[scheme.upperBound...].firstIndex { "/?#".contains($0) } ?? text.endIndex
    guard let at = text[scheme.upperBound..<authorityEnd].lastIndex(of: "@") else { return text }
    return String(text[..<scheme.upperBound]) + "***" + String(text[at...])
}

/// The context of `--context` (or anonymous), with `--targeting-key` and each `--attr` applied
/// over it, checked by the library's strict parser.
func inlineContext(_ parsed: CommandLineParser.Parsed) throws(CommandFailure) -> EvaluationContext {
    let base = try parsed.values["context"].map { path throws(CommandFailure) in try loadContext(path).context }
    let targetingKey = parsed.values["targeting-key"]
    let attributes = parsed.lists["attr"] ?? []
    if targetingKey == nil && attributes.isEmpty { return base ?? .anonymous }

    var context = base ?? .anonymous
    var given: Set<String> = []
    if let targetingKey {
        context.targetingKey = targetingKey
        given.insert("targetingKey")
    }
    for attribute in attributes {
        guard let equals = attribute.firstIndex(of: "="), equals != attribute.startIndex else {
            throw .usage("--attr \(attribute) is not NAME=VALUE")
        }
        let name = String(attribute[..<equals])
        guard given.insert(name).inserted else { throw .usage("--attr \(name) given more than once") }
        let value = try attributeValue(String(attribute[attribute.index(after: equals)...]), name: name)
        switch (name, value) {
        case ("targetingKey", .string(let text)): context.targetingKey = text
        case ("kind", .string(let text)): context.kind = text
        case ("targetingKey", _), ("kind", _): throw .usage("--attr \(name) must be a string")
        default: context.attributes[name] = value
        }
    }
    do {
        try context.validate()
    } catch {
        throw .input("invalid context: \(error.description)")
    }
    return context
}

/// The value of `--attr NAME=VALUE`: JSON when it is JSON (`3`, `true`, `null`, `"3"`,
/// `[1,2]`, `{"a":1}`), else the text itself as a string (`pro`). Text that starts like a JSON
/// string, array or object (`"`, `[`, `{`) must be valid JSON: a typo there is a usage error,
/// not a string.
func attributeValue(_ text: String, name: String) throws(CommandFailure) -> JSONValue {
    if let first = text.first, "\"[{".contains(first) {
        do {
            return try JSONValue(parsing: text)
        } catch {
            throw .usage("--attr \(name): \(error.description)")
        }
    }
    guard text.trimmingCharacters(in: .whitespacesAndNewlines) == text, !text.isEmpty,
        let value = try? JSONValue(parsing: text)
    else { return .string(text) }
    return value
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
