/// Why a command failed: a one-line cause for standard error, the `kind` of the `--json` error
/// object, and the exit status (docs/cli.md).
enum CommandFailure: Error, Sendable, Hashable {
    /// The command line does not fit the grammar or misses something required: exit status 2.
    case usage(String)
    /// A file, a context or a setting could not be used: exit status 1.
    case input(String)
    /// The control plane refused (key, context) or answered unexpectedly: exit status 1.
    case controlPlane(String)
    /// The control plane did not answer, or no values came in time (unreachable, TLS, DNS,
    /// timeout, 5xx): exit status 1.
    case noAnswer(String)
    /// `eval --flag KEY`: the flag is not served for the context, or (`--raw`) it has no value
    /// to print: exit status 1.
    case noValue(String)
    /// The control plane refused, and the command's `--json` document already says so (`verify`
    /// prints its check): exit status 1, the cause on standard error, no JSON error object.
    case shown(String)

    /// The one-line cause.
    var cause: String {
        switch self {
        case .usage(let cause), .input(let cause), .controlPlane(let cause), .noAnswer(let cause),
            .noValue(let cause), .shown(let cause):
            cause
        }
    }

    /// The `kind` member of the `--json` error object.
    var kind: String {
        switch self {
        case .usage: "usage"
        case .input: "input"
        case .controlPlane: "controlPlane"
        case .noAnswer: "noAnswer"
        case .noValue: "noValue"
        case .shown: "controlPlane"
        }
    }

    /// The exit status.
    var exitStatus: Int32 {
        switch self {
        case .usage: ExitStatus.usage
        case .input, .controlPlane, .noAnswer, .noValue, .shown: ExitStatus.failure
        }
    }
}

/// The exit statuses of `halyard` (docs/cli.md).
enum ExitStatus {
    /// Done; for `verify`, the key was accepted.
    static let ok: Int32 = 0
    /// A control-plane or input error.
    static let failure: Int32 = 1
    /// The command line is wrong.
    static let usage: Int32 = 2
    /// Standard output's reader went away (as if killed by SIGPIPE, without a message).
    static let outputClosed: Int32 = 128 + 13
    /// Stopped by `signal` (SIGINT: 130, SIGTERM: 143), as a shell reports a process killed by it.
    static func signalled(_ signal: Int32) -> Int32 { 128 + signal }
}
