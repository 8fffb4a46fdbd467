import Foundation
import Halyard
import Testing

@testable import HalyardCLICore

#if canImport(Glibc)
    import Glibc
#endif

/// How `halyard watch` ends (docs/cli.md, "Exit status"): real signals sent to the subprocess
/// (SIGINT 130, SIGTERM 143, a second signal during the shutdown), a reader that goes away
/// (`watch | head -1`: 141, quietly), and the completion scripts. Every wait is bounded.
@Suite("CLISignals", .serialized)
struct CLISignalTests {
    static let env = ["HALYARD_KEY": "cli-secret-key-42"]
    static var flags: [String: Any] {
        [
            "default": [
                ["key": "a", "value": true, "reason": "STATIC"], ["key": "b", "value": 2, "reason": "STATIC"],
            ]
        ]
    }

    /// Starts `watch` against `server` and waits until it printed the first values.
    private func watching(_ server: ControlPlaneServer, json: Bool = false) async throws -> HalyardProcess {
        let watch = try HalyardProcess(
            ["watch", "--url", server.baseURL.absoluteString, "--interval", "1h"] + (json ? ["--json"] : []),
            environment: Self.env)
        // The status lines are one or two (watch may first see NOT_READY or already READY);
        // the two flags' lines follow the READY one.
        try await watch.waitForOutput("watch prints the values") {
            watch.stdout.contains("READY") && watch.lines.filter { !$0.contains("status") }.count >= 2
        }
        return watch
    }

    @Test func sigtermShutsDownAndExits143() async throws {
        let server = try await ControlPlaneServer.launched(flags: Self.flags)
        defer { server.stop() }
        let watch = try await watching(server)
        watch.send(signal: SIGTERM)
        #expect(try await watch.exitStatus() == 143)
        #expect(watch.stderr.isEmpty, "\(watch.stderr)")
    }

    @Test func sigintExits130AndASecondOneDuringTheShutdownToo() async throws {
        let server = try await ControlPlaneServer.launched(flags: Self.flags)
        defer { server.stop() }
        let once = try await watching(server, json: true)
        once.interrupt()
        #expect(try await once.exitStatus() == 130)
        #expect(once.stderr.isEmpty, "\(once.stderr)")

        let twice = try await watching(server)
        twice.interrupt()
        twice.interrupt()
        #expect(try await twice.exitStatus() == 130)
    }

    /// `watch | head -1`, and a reader that leaves after the last line watch had to print: watch
    /// ends quietly with 141 in both cases. In the first, a later write fails with `EPIPE`; in
    /// the second nothing more is written (the interval is an hour), so only the watcher of
    /// standard output (`POLLERR` on the pipe) can notice. (`timeout 15` bounds a watch that
    /// would never notice: it then reports 124.)
    @Test(arguments: [
        "head -1",
        #"{ while read -r line; do echo "$line"; case "$line" in *"flag    b "*) break ;; esac; done; }"#,
    ])
    func watchEndsWhenItsReaderGoesAway(reader: String) async throws {
        let server = try await ControlPlaneServer.launched(flags: Self.flags)
        defer { server.stop() }
        let binary = try HalyardProcess.binary().path
        let shell = try HalyardProcess(
            [
                "-c",
                #"timeout 15 "$0" watch --url "$1" --interval 1h | "# + reader
                    + #"; echo "watch=${PIPESTATUS[0]}" >&2"#,
                binary, server.baseURL.absoluteString,
            ], executable: URL(fileURLWithPath: "/bin/bash"), environment: Self.env)
        #expect(try await shell.exitStatus(seconds: 30) == 0)
        #expect(shell.stdout.hasPrefix(shell.lines.first ?? "-"))
        #expect(shell.lines.first?.contains("status") == true, "\(shell.stdout)")
        #expect(shell.stderr == "watch=141\n", "\(shell.stderr)")
    }

    // MARK: - the stop policy (no threads)

    @Test func stopPolicy() {
        var policy = StopPolicy()
        #expect(policy.exitStatus == nil)
        #expect(policy.signal(SIGTERM) == .shutDown)
        #expect(policy.exitStatus == 143)
        #expect(policy.outputClosed() == .none)
        #expect(policy.signal(SIGINT) == .exit(130))
        #expect(policy.exitStatus == 143)

        var closed = StopPolicy()
        #expect(closed.outputClosed() == .shutDown)
        #expect(closed.exitStatus == 141)
        #expect(closed.signal(SIGINT) == .exit(130))
    }

    // MARK: - completion

    /// The bash script parses (`bash -n`) and completes commands and options when sourced; the
    /// zsh one names every command and option (and parses when zsh is installed).
    @Test func completionScripts() async throws {
        let bash = try await HalyardProcess.run(["completion", "bash"])
        #expect(bash.status == 0)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("halyard-\(UUID().uuidString).bash")
        try Data(bash.stdout.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let parses = try HalyardProcess(["-n", file.path], executable: URL(fileURLWithPath: "/bin/bash"))
        #expect(try await parses.exitStatus() == 0, "\(parses.stderr)")
        func complete(_ words: [String]) async throws -> [String] {
            let script =
                "source \"$0\"; COMP_WORDS=(\(words.map { "'\($0)'" }.joined(separator: " "))); "
                + "COMP_CWORD=\(words.count - 1); _halyard; printf '%s\\n' \"${COMPREPLY[@]}\""
            let run = try HalyardProcess(["-c", script, file.path], executable: URL(fileURLWithPath: "/bin/bash"))
            #expect(try await run.exitStatus() == 0, "\(run.stderr)")
            return run.lines
        }
        #expect(try await complete(["halyard", "ev"]) == ["eval"])
        #expect(try await complete(["halyard", "eval", "--fl"]) == ["--flag"])
        #expect(try await complete(["halyard", "watch", "--inter"]) == ["--interval"])
        #expect(try await complete(["halyard", "completion", "z"]) == ["zsh"])
        #expect(try await complete(["halyard", "help", "ver"]) == ["verify"])

        let zsh = try await HalyardProcess.run(["completion", "zsh"])
        #expect(zsh.status == 0)
        #expect(zsh.stdout.hasPrefix("#compdef halyard\n"))
        for command in HalyardCommandLine.commands {
            #expect(zsh.stdout.contains("'\(command.name):"), "\(command.name)")
            #expect(bash.stdout.contains(" \(command.name)) "), "\(command.name)")
            for option in command.options {
                #expect(zsh.stdout.contains("--\(option.name)"), "\(command.name) --\(option.name)")
                #expect(bash.stdout.contains("--\(option.name)"), "\(command.name) --\(option.name)")
            }
        }
        if let zshPath = ExternalTool.find("zsh") {
            let zshFile = file.deletingPathExtension().appendingPathExtension("zsh")
            try Data(zsh.stdout.utf8).write(to: zshFile)
            defer { try? FileManager.default.removeItem(at: zshFile) }
            let run = try HalyardProcess(["-n", zshFile.path], executable: URL(fileURLWithPath: zshPath))
            #expect(try await run.exitStatus() == 0, "\(run.stderr)")
        }

        let bad = try await HalyardProcess.run(["completion", "fish"])
        #expect(bad.status == 2)
    }
}
