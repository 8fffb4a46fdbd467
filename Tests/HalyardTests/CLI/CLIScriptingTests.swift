import Foundation
import Halyard
import Testing

/// What scripts rely on in the `halyard` command, run as a subprocess against the loopback
/// control plane (docs/cli.md): exact numbers in `--json`, the install check's one request and
/// named causes, inline contexts, `--flag`/`--raw`, `HALYARD_URL`, `--cacert`, `--key-file -`,
/// help and usage pointers, JSON error objects, and user info in `--url` never echoed.
@Suite("CLIScripting", .serialized)
struct CLIScriptingTests {
    static let key = "cli-secret-key-42"
    static let env = ["HALYARD_KEY": key]
    /// 2^53 + 1: the first integer an IEEE double cannot hold (it rounds to 2^53).
    static let big: Int64 = 9_007_199_254_740_993

    static var flags: [String: Any] {
        [
            "default": [
                [
                    "key": "big", "value": big, "reason": "STATIC",
                    "metadata": ["version": big, "ratio": 0.5, "owner": "ops"],
                ],
                ["key": "banner", "value": "Hello \"you\"", "reason": "STATIC"],
                ["key": "limits", "value": ["max": 3, "ratio": 1.5], "reason": "STATIC"],
                ["key": "code.default", "reason": "DEFAULT"],
                ["key": "missing", "errorCode": "FLAG_NOT_FOUND", "errorDetails": "no such flag"],
            ],
            "contexts": [
                "user-1": [["key": "plan.seen", "value": "context user-1", "reason": "TARGETING_MATCH"]]
            ],
            "metadata": ["build": big, "environment": "test"],
        ]
    }

    static func json(_ text: String) throws -> JSONValue {
        try JSONValue(parsing: text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    static func member(_ value: JSONValue?, _ name: String) -> JSONValue? {
        guard case .object(let members)? = value else { return nil }
        return members[name]
    }

    static func flagItems(_ text: String) throws -> [JSONValue] {
        guard case .array(let items)? = member(try json(text), "flags") else { return [] }
        return items
    }

    static func item(_ text: String, _ key: String) throws -> JSONValue? {
        try flagItems(text).first { member($0, "key") == .string(key) }
    }

    // MARK: - exact numbers

    /// A served 2^53 + 1 prints as such in `eval --json`, `watch --json` and metadata (flag and
    /// response metadata), not as the double nearest to it.
    @Test func jsonKeepsIntegersExact() async throws {
        let server = try ControlPlaneServer(flags: Self.flags)
        defer { server.stop() }
        let url = server.baseURL.absoluteString

        let eval = try await HalyardProcess.run(["eval", "--url", url, "--json"], environment: Self.env)
        #expect(eval.status == 0, "\(eval.stderr)")
        #expect(eval.stdout.contains("\"value\":9007199254740993"), "\(eval.stdout)")
        let big = try Self.item(eval.stdout, "big")
        #expect(Self.member(big, "value") == .int(Self.big))
        #expect(Self.member(Self.member(big, "metadata"), "version") == .int(Self.big))
        #expect(Self.member(Self.member(big, "metadata"), "ratio") == .double(0.5))
        // A double stays a double, an integer inside an object stays an integer.
        #expect(
            Self.member(try Self.item(eval.stdout, "limits"), "value")
                == .object(["max": .int(3), "ratio": .double(1.5)]))

        let verify = try await HalyardProcess.run(["verify", "--url", url, "--json"], environment: Self.env)
        #expect(verify.status == 0, "\(verify.stderr)")
        #expect(verify.stdout.contains("\"build\":9007199254740993"), "\(verify.stdout)")
        #expect(Self.member(Self.member(try Self.json(verify.stdout), "metadata"), "build") == .int(Self.big))

        let watch = try HalyardProcess(["watch", "--url", url, "--json"], environment: Self.env)
        defer { watch.interrupt() }
        func bigChange() -> JSONValue? {
            watch.lines.compactMap { try? Self.json($0) }.first {
                Self.member($0, "type") == .string("change") && Self.member($0, "key") == .string("big")
            }
        }
        try await Wait.until("watch shows the big flag") { bigChange() != nil }
        #expect(Self.member(Self.member(bigChange(), "to"), "value") == .int(Self.big))
        #expect(watch.stdout.contains("\"value\":9007199254740993"), "\(watch.stdout)")
        #expect(
            Self.member(Self.member(Self.member(bigChange(), "to"), "metadata"), "version") == .int(Self.big))
    }

    // MARK: - verify

    /// `verify` sends exactly one request (the server counts them), and says why there was no
    /// answer: refused, timeout, TLS; an answer with another status is named with it.
    @Test func verifySendsOneRequestAndNamesTheCause() async throws {
        let server = try ControlPlaneServer(flags: Self.flags)
        defer { server.stop() }
        let url = server.baseURL.absoluteString

        let ok = try await HalyardProcess.run(["verify", "--url", url], environment: Self.env)
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(try await server.requests().count { $0.path.hasPrefix("/ofrep/") } == 1)

        let refused = try await HalyardProcess.run(
            ["verify", "--url", "http://127.0.0.1:1", "--timeout", "5s"], environment: Self.env)
        #expect(refused.status == 1)
        #expect(refused.stderr.hasPrefix("halyard: no answer from http://127.0.0.1:1: "), "\(refused.stderr)")
        #expect(refused.stderr.lowercased().contains("connect"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("within"), "\(refused.stderr)")

        try await server.reset()
        try await server.script([["action": "delay", "seconds": 3]])
        let slow = try await HalyardProcess.run(
            ["verify", "--url", url, "--timeout", "300ms"], environment: Self.env)
        #expect(slow.status == 1)
        #expect(slow.stderr.contains("timed out"), "\(slow.stderr)")

        // TLS to a server that speaks plain HTTP: the handshake fails, and says so.
        let tls = try await HalyardProcess.run(
            ["verify", "--url", "https://127.0.0.1:\(server.port)", "--timeout", "5s"], environment: Self.env)
        #expect(tls.status == 1)
        #expect(tls.stderr.contains("SSL") || tls.stderr.contains("TLS"), "\(tls.stderr)")

        try await server.reset()
        try await server.script([["action": "status", "status": 503]])
        let unavailable = try await HalyardProcess.run(["verify", "--url", url], environment: Self.env)
        #expect(unavailable.status == 1)
        #expect(unavailable.stderr.contains("answered unexpectedly (503)"), "\(unavailable.stderr)")
        #expect(try await server.requests().count { $0.path.hasPrefix("/ofrep/") } == 1)
    }
}
