/// Why a command failed: a one-line cause for standard error, and the exit status (docs/cli.md).
enum CommandFailure: Error, Sendable, Hashable {
    /// The command line does not fit the grammar or misses something required: exit status 2.
    case usage(String)
    /// A file, a context or a setting could not be used: exit status 1.
    case input(String)
    /// The control plane refused, failed, or did not answer: exit status 1.
    case controlPlane(String)

    /// The one-line cause.
    var cause: String {
        switch self {
        case .usage(let cause), .input(let cause), .controlPlane(let cause): cause
        }
    }

    /// The exit status.
    var exitStatus: Int32 {
        switch self {
        case .usage: ExitStatus.usage
        case .input, .controlPlane: ExitStatus.failure
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
}
