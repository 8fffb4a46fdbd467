// The `halyard` command (docs/cli.md). Everything but this line lives in HalyardCLICore, where
// the tests can reach it.
import Foundation
import HalyardCLICore

exit(
    await HalyardCommandLine.run(
        Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment))
