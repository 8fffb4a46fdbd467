import Foundation
import Halyard
import Testing

/// A hostile control plane cannot reach the operator's terminal (docs/cli.md, "Control
/// characters"): flag keys, values, variants and error messages holding ANSI/OSC escape
/// sequences are printed escaped in the table, `--raw`, `watch` and error lines. `--json` was
/// already escaped by JSON itself.
@Suite("CLIEscaping", .serialized)
struct CLIEscapingTests {
    static let key = "cli-escape-key"
    static let red = "flag\u{1B}[31m"
    static let osc = "v\u{1B}]0;pwned\u{07}\u{9B}2J"
    static var flags: [String: Any] {
        [
            "default": [
                ["key": Self.red, "value": Self.osc, "reason": "STATIC", "variant": "b\u{1B}[0m"],
                ["key": "broken", "errorCode": "GENERAL", "errorDetails": "bad\u{1B}[2Jthing\r\nX"],
            ]
        ]
    }

    /// No ESC, BEL, CR, C1 CSI or other control byte besides the line ends.
    static func isClean(_ text: String) -> Bool {
        !text.unicodeScalars.contains { scalar in
            scalar != "\n" && (scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value))
        }
    }

    @Test func evalTableRawAndErrorsPrintNoEscapeByte() async throws {
        let server = try await ControlPlaneServer.launched(flags: Self.flags)
        defer { server.stop() }
        let url = server.baseURL.absoluteString
        let env = ["HALYARD_KEY": Self.key]

        let table = try await HalyardProcess.run(["eval", "--url", url], environment: env)
        #expect(table.status == 0, "\(table.stderr)")
        #expect(Self.isClean(table.stdout), "\(table.stdout.debugDescription)")
        #expect(table.stdout.contains("flag\\u001B[31m"), "\(table.stdout.debugDescription)")
        #expect(!table.stdout.contains("\u{1B}"))

        let raw = try await HalyardProcess.run(["eval", "--url", url, "--flag", Self.red, "--raw"], environment: env)
        #expect(raw.status == 0, "\(raw.stderr)")
        #expect(Self.isClean(raw.stdout), "\(raw.stdout.debugDescription)")
        #expect(raw.stdout == "v\\u001B]0;pwned\\u0007\\u009B2J\n", "\(raw.stdout.debugDescription)")

        let failed = try await HalyardProcess.run(
            ["eval", "--url", url, "--flag", "broken", "--raw"], environment: env)
        #expect(failed.status == 1)
        #expect(Self.isClean(failed.stderr), "\(failed.stderr.debugDescription)")
        #expect(failed.stderr.split(separator: "\n").count == 1, "\(failed.stderr.debugDescription)")

        // --json was already safe: JSON escapes every control character.
        let json = try await HalyardProcess.run(["eval", "--url", url, "--json"], environment: env)
        #expect(!json.stdout.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" })
    }

    @Test func watchPrintsNoEscapeByte() async throws {
        let server = try await ControlPlaneServer.launched(flags: Self.flags)
        defer { server.stop() }
        let watch = try HalyardProcess(
            ["watch", "--url", server.baseURL.absoluteString, "--interval", "200ms"],
            environment: ["HALYARD_KEY": Self.key])
        defer { watch.interrupt() }
        try await watch.waitForOutput("watch prints both flags") {
            watch.stdout.contains("31m") && watch.stdout.contains("broken")
        }
        watch.interrupt()
        _ = try await watch.exitStatus()
        #expect(Self.isClean(watch.stdout), "\(watch.stdout.debugDescription)")
        #expect(Self.isClean(watch.stderr), "\(watch.stderr.debugDescription)")
    }
}
