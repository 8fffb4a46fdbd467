import Foundation
import Halyard

/// Runs the `halyard` binary (the `HalyardCLI` product, built by `swift test` because the test
/// target depends on it) as a subprocess, collecting its standard output and error as they come.
///
/// `@unchecked Sendable`: `Process` is not Sendable; it is set up in `init` and afterwards only
/// asked `isRunning`/`terminationStatus`, signalled, or terminated. The collected output is
/// behind `Locked`.
final class HalyardProcess: @unchecked Sendable {
    struct NotFound: Error, CustomStringConvertible {
        var description: String
    }

    /// The `halyard` binary: `$HALYARD_CLI` when set, else the one SwiftPM built next to the test
    /// bundle (`.build/<triple>/debug/halyard`, beside `HalyardPackageTests.xctest`).
    static func binary() throws -> URL {
        if let path = ProcessInfo.processInfo.environment["HALYARD_CLI"] { return URL(fileURLWithPath: path) }
        let starts = Bundle.allBundles.map(\.bundleURL) + [Bundle.main.executableURL].compactMap { $0 }
        for start in starts {
            var folder = start.deletingLastPathComponent()
            for _ in 0..<4 {
                let candidate = folder.appendingPathComponent("halyard")
                if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
                folder = folder.deletingLastPathComponent()
            }
        }
        throw NotFound(description: "no halyard binary near \(starts.map(\.path)); set HALYARD_CLI")
    }

    private let process = Process()
    private let output = Locked(Data())
    private let errors = Locked(Data())
    private let open = Locked(2)

    /// Starts `halyard arguments` with `environment` added to this process's environment minus
    /// `HALYARD_KEY` and `NO_COLOR`, and `stdin` (empty by default) on its standard input.
    /// `executable` runs another program the same way (one that runs `halyard` itself).
    init(_ arguments: [String], executable: URL? = nil, environment: [String: String] = [:], stdin: Data = Data())
        throws
    {
        process.executableURL = try executable ?? Self.binary()
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env["HALYARD_KEY"] = nil
        env["NO_COLOR"] = nil
        env.merge(environment) { _, new in new }
        process.environment = env
        let input = Pipe(), out = Pipe(), err = Pipe()
        process.standardInput = input
        process.standardOutput = out
        process.standardError = err
        try process.run()
        for (pipe, sink) in [(out, output), (err, errors)] {
            let handle = pipe.fileHandleForReading
            Thread { [open] in
                while true {
                    let chunk = handle.availableData
                    if chunk.isEmpty { break }
                    sink.withLock { $0.append(chunk) }
                }
                open.withLock { $0 -= 1 }
            }.start()
        }
        let writer = input.fileHandleForWriting
        Thread {
            writer.write(stdin)
            try? writer.close()
        }.start()
    }

    deinit {
        if process.isRunning { process.terminate() }
    }

    /// Standard output so far.
    var stdout: String { String(decoding: output.withLock { $0 }, as: UTF8.self) }
    /// Standard error so far.
    var stderr: String { String(decoding: errors.withLock { $0 }, as: UTF8.self) }
    /// The lines of standard output so far.
    var lines: [String] { stdout.split(separator: "\n").map(String.init) }

    /// The bound on waiting for a child's output or exit: starting a debug `halyard` and its first fetch
    /// take well under a second alone, but several seconds while the whole suite runs in
    /// parallel on two cores (CI once gave up at 10 s).
    static let outputSeconds: Double = 30

    /// Waits (bounded) until `condition` holds for this process's output; on timeout the error
    /// carries what the process printed so far, on both streams.
    func waitForOutput(_ what: String, seconds: Double = outputSeconds, _ condition: () -> Bool) async throws {
        do {
            try await Wait.until(what, seconds: seconds, condition)
        } catch let timedOut as WaitTimedOut {
            throw WaitTimedOut(
                what: "\(timedOut.what); stdout so far: \(stdout.debugDescription); stderr: \(stderr.debugDescription)",
                seconds: timedOut.seconds)
        }
    }

    /// Sends SIGINT (Ctrl-C).
    func interrupt() { process.interrupt() }

    /// Sends `signal` (SIGTERM, SIGINT, ...) to the process, if it still runs.
    func send(signal: Int32) {
        if process.isRunning { kill(process.processIdentifier, signal) }
    }

    /// Waits (bounded) until the process exited and both pipes are drained; returns the status.
    /// On timeout the error says whether the process still ran and carries what it printed.
    func exitStatus(seconds: Double = HalyardProcess.outputSeconds) async throws -> Int32 {
        do {
            try await Wait.until("halyard \(process.arguments?.first ?? "") to exit", seconds: seconds) {
                !process.isRunning && open.withLock { $0 == 0 }
            }
        } catch let timedOut as WaitTimedOut {
            let state = process.isRunning ? "still running" : "exited, \(2 - open.withLock { $0 }) of 2 pipes drained"
            throw WaitTimedOut(
                what: "\(timedOut.what) (\((process.arguments ?? []).joined(separator: " ")): \(state)); "
                    + "stdout so far: \(stdout.debugDescription); stderr: \(stderr.debugDescription)",
                seconds: timedOut.seconds)
        }
        return process.terminationStatus
    }

    /// Runs `halyard arguments` to the end (bounded).
    static func run(
        _ arguments: [String], environment: [String: String] = [:], stdin: Data = Data(),
        seconds: Double = HalyardProcess.outputSeconds
    ) async throws -> (status: Int32, stdout: String, stderr: String) {
        let process = try HalyardProcess(arguments, environment: environment, stdin: stdin)
        let status = try await process.exitStatus(seconds: seconds)
        return (status, process.stdout, process.stderr)
    }
}
