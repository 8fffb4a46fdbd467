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
        let server = try await ControlPlaneServer.launched(flags: Self.flags)
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
        try await watch.waitForOutput("watch shows the big flag") { bigChange() != nil }
        #expect(Self.member(Self.member(bigChange(), "to"), "value") == .int(Self.big))
        #expect(watch.stdout.contains("\"value\":9007199254740993"), "\(watch.stdout)")
        #expect(
            Self.member(Self.member(Self.member(bigChange(), "to"), "metadata"), "version") == .int(Self.big))
    }

    // MARK: - verify

    /// `verify` sends exactly one request (the server counts them), and says why there was no
    /// answer: refused, timeout, TLS; an answer with another status is named with it.
    @Test func verifySendsOneRequestAndNamesTheCause() async throws {
        let server = try await ControlPlaneServer.launched(flags: Self.flags)
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

    // MARK: - inline context, --flag, --raw

    /// `--targeting-key` and repeated `--attr` (JSON values, bare words as strings) build the
    /// context, over `--context`; the request body shows what was sent.
    @Test func inlineContextAttributes() async throws {
        let server = try await ControlPlaneServer.launched(flags: Self.flags)
        defer { server.stop() }
        let url = server.baseURL.absoluteString
        let base = Data(#"{"targetingKey": "someone", "plan": "free", "region": "eu"}"#.utf8)

        let run = try await HalyardProcess.run(
            [
                "eval", "--url", url, "--context", "-", "--targeting-key", "user-1", "--attr", "plan=pro", "--attr",
                "n=3", "--attr", #"x="3""#, "--attr", "beta=true", "--attr", "tags=[1,\"a\"]", "--attr=ratio=0.5",
                "--flag", "plan.seen", "--json",
            ], environment: Self.env, stdin: base)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(Self.member(try Self.item(run.stdout, "plan.seen"), "value") == .string("context user-1"))
        #expect(try Self.flagItems(run.stdout).count == 1)
        let sent = try #require(try await server.requests().last { $0.path.hasPrefix("/ofrep/") })
        let context = Self.member(try Self.json(sent.body), "context")
        #expect(
            context
                == .object([
                    "targetingKey": "user-1", "kind": "user", "plan": "pro", "region": "eu", "n": .int(3), "x": "3",
                    "beta": true, "tags": [1, "a"], "ratio": .double(0.5),
                ]))

        // A value that starts like JSON must be JSON; a repeated name is ambiguous.
        for arguments in [["--attr", "x=[1,"], ["--attr", "a=1", "--attr", "a=2"], ["--attr", "novalue"]] {
            let bad = try await HalyardProcess.run(["eval", "--url", url] + arguments, environment: Self.env)
            #expect(bad.status == 2, "\(arguments): \(bad.stderr)")
            #expect(bad.stderr.contains("run 'halyard eval --help' for usage"), "\(bad.stderr)")
        }
        let reserved = try await HalyardProcess.run(
            ["eval", "--url", url, "--attr", "kind=Not A Kind"], environment: Self.env)
        #expect(reserved.status == 1)
        #expect(reserved.stderr.contains("invalid context"), "\(reserved.stderr)")
    }

    /// `--flag KEY` prints one flag; `--raw` just its value: JSON text, a string without quotes;
    /// no value (code default, error item) or no such flag exits 1 with nothing on stdout.
    @Test func flagAndRaw() async throws {
        let server = try await ControlPlaneServer.launched(flags: Self.flags)
        defer { server.stop() }
        let url = server.baseURL.absoluteString
        func raw(_ key: String) async throws -> (status: Int32, stdout: String, stderr: String) {
            try await HalyardProcess.run(["eval", "--url", url, "--flag", key, "--raw"], environment: Self.env)
        }
        #expect(try await raw("banner").stdout == "Hello \"you\"\n")
        #expect(try await raw("big").stdout == "9007199254740993\n")
        #expect(try await raw("limits").stdout == #"{"max":3,"ratio":1.5}"# + "\n")
        for key in ["code.default", "missing", "not.there"] {
            let run = try await raw(key)
            #expect(run.status == 1, "\(key)")
            #expect(run.stdout.isEmpty, "\(key): \(run.stdout)")
            #expect(run.stderr.hasPrefix("halyard: \(key) "), "\(run.stderr)")
        }
        let table = try await HalyardProcess.run(["eval", "--url", url, "--flag", "banner"], environment: Self.env)
        #expect(table.status == 0)
        #expect(table.stdout.split(separator: "\n").count == 2, "\(table.stdout)")

        let notServed = try await HalyardProcess.run(
            ["eval", "--url", url, "--flag", "not.there", "--json"], environment: Self.env)
        #expect(notServed.status == 1)
        #expect(Self.member(Self.member(try Self.json(notServed.stdout), "error"), "kind") == .string("noValue"))

        for arguments in [["--raw"], ["--flag", "banner", "--raw", "--json"]] {
            let bad = try await HalyardProcess.run(["eval", "--url", url] + arguments, environment: Self.env)
            #expect(bad.status == 2, "\(arguments)")
        }
    }

    // MARK: - URL, key, help, errors

    /// `HALYARD_URL` stands in for `--url` (which wins); `--key-file -` reads the key from
    /// standard input; `halyard help eval` is eval's help; usage errors point at the command's
    /// help; `--json` failures print one JSON error object on stdout, for every command.
    @Test func environmentKeyFromStdinHelpAndJSONErrors() async throws {
        let server = try await ControlPlaneServer.launched(flags: Self.flags)
        defer { server.stop() }
        let url = server.baseURL.absoluteString

        let fromEnvironment = try await HalyardProcess.run(
            ["eval", "--flag", "banner", "--raw"], environment: ["HALYARD_URL": url, "HALYARD_KEY": Self.key])
        #expect(fromEnvironment.status == 0, "\(fromEnvironment.stderr)")
        let overridden = try await HalyardProcess.run(
            ["verify", "--url", url, "--json"],
            environment: ["HALYARD_URL": "http://127.0.0.1:1", "HALYARD_KEY": Self.key])
        #expect(overridden.status == 0, "\(overridden.stderr)")
        #expect(Self.member(try Self.json(overridden.stdout), "url") == .string(url))

        let stdinKey = try await HalyardProcess.run(
            ["verify", "--url", url, "--key-file", "-"], stdin: Data((Self.key + "\n").utf8))
        #expect(stdinKey.status == 0, "\(stdinKey.stderr)")
        #expect(try await server.requests().last?.header("Authorization") == "Bearer \(Self.key)")
        let both = try await HalyardProcess.run(["verify", "--url", url, "--key-file", "-", "--context", "-"])
        #expect(both.status == 2)

        let help = try await HalyardProcess.run(["help", "eval"])
        #expect(help.status == 0)
        #expect(help.stdout == (try await HalyardProcess.run(["eval", "--help"])).stdout)
        for option in ["--flag KEY", "--raw", "--attr NAME=VALUE", "--targeting-key KEY", "--cacert FILE"] {
            #expect(help.stdout.contains(option), "\(option)")
        }
        let unknown = try await HalyardProcess.run(["help", "nope"])
        #expect(unknown.status == 2)

        let usage = try await HalyardProcess.run(["watch", "--interval", "soon"], environment: Self.env)
        #expect(usage.status == 2)
        #expect(usage.stderr.hasSuffix("halyard: run 'halyard watch --help' for usage\n"), "\(usage.stderr)")

        // No answer, with --json: an error object on stdout (and the line on stderr), for every
        // command that talks to a control plane; a malformed context for `context` too.
        for command in ["eval", "verify", "watch"] {
            let run = try await HalyardProcess.run(
                [command, "--url", "http://127.0.0.1:1", "--timeout", "500ms", "--json"]
                    + (command == "watch" ? ["--key-file", "/nonexistent"] : []), environment: Self.env)
            #expect(run.status == 1, "\(command): \(run.stderr)")
            let error = Self.member(try Self.json(run.stdout), "error")
            #expect(Self.member(error, "kind") == .string(command == "watch" ? "input" : "noAnswer"), "\(run.stdout)")
            guard case .string(let message)? = Self.member(error, "message") else {
                Issue.record("no message in \(run.stdout)")
                continue
            }
            #expect(run.stderr.hasPrefix("halyard: \(message)\n"), "\(run.stderr)")
        }
        let badContext = try await HalyardProcess.run(["context", "--json"], stdin: Data("{".utf8))
        #expect(badContext.status == 1)
        #expect(Self.member(Self.member(try Self.json(badContext.stdout), "error"), "kind") == .string("input"))
    }

    /// User info in `--url` is not sent and never printed: not in errors, not in `--json`, not in
    /// `watch` output.
    @Test func userInfoInTheURLIsNeverEchoed() async throws {
        let server = try await ControlPlaneServer.launched(flags: Self.flags)
        defer { server.stop() }
        let secret = "hunter2-secret"
        let url = "http://ops:\(secret)@127.0.0.1:\(server.port)"
        var runs: [(status: Int32, stdout: String, stderr: String)] = []
        runs.append(try await HalyardProcess.run(["verify", "--url", url, "--json"], environment: Self.env))
        runs.append(try await HalyardProcess.run(["eval", "--url", url, "--json"], environment: Self.env))
        runs.append(try await HalyardProcess.run(["eval", "--url", url, "--flag", "nope"], environment: Self.env))
        runs.append(
            try await HalyardProcess.run(
                ["verify", "--url", "http://ops:\(secret)@127.0.0.1:1", "--json"], environment: Self.env))
        runs.append(try await HalyardProcess.run(["eval", "--url", "ht tp://ops:\(secret)@x"], environment: Self.env))
        for run in runs {
            #expect(!run.stdout.contains(secret) && !run.stderr.contains(secret), "\(run)")
            #expect(!run.stdout.contains("ops:") && !run.stderr.contains("ops:"), "\(run)")
        }
        #expect(runs[0].status == 0)
        #expect(Self.member(try Self.json(runs[0].stdout), "url") == .string(server.baseURL.absoluteString))
        let sent = try await server.requests()
        #expect(!sent.isEmpty)
        #expect(sent.allSatisfy { $0.header("Authorization") == "Bearer \(Self.key)" })

        let watch = try HalyardProcess(["watch", "--url", url], environment: Self.env)
        try await watch.waitForOutput("watch prints the values") { watch.lines.count >= 3 }
        watch.interrupt()
        _ = try await watch.exitStatus()
        #expect(!watch.stdout.contains(secret) && !watch.stderr.contains(secret))
    }

    // MARK: - --cacert

    /// `--cacert FILE` (or `HALYARD_CACERT`) trusts a private CA: a self-signed loopback server
    /// is refused without it (the TLS cause named) and answers with it.
    @Test func cacertTrustsAPrivateCA() async throws {
        #if os(Linux)
            let certificate = try TransportTLSTests.makeCertificate()
            defer { try? FileManager.default.removeItem(at: certificate.folder) }
            let server = try await ControlPlaneServer.launched(
                flags: Self.flags, tls: (certificate.certificate, certificate.key))
            defer { server.stop() }
            let url = server.baseURL.absoluteString

            let untrusted = try await HalyardProcess.run(["verify", "--url", url], environment: Self.env)
            #expect(untrusted.status == 1)
            #expect(untrusted.stderr.contains("SSL") || untrusted.stderr.contains("certificate"), "\(untrusted.stderr)")

            let trusted = try await HalyardProcess.run(
                ["eval", "--url", url, "--cacert", certificate.certificate, "--flag", "banner", "--raw"],
                environment: Self.env)
            #expect(trusted.status == 0, "\(trusted.stderr)")
            #expect(trusted.stdout == "Hello \"you\"\n")

            let fromEnvironment = try await HalyardProcess.run(
                ["verify", "--url", url],
                environment: ["HALYARD_KEY": Self.key, "HALYARD_CACERT": certificate.certificate])
            #expect(fromEnvironment.status == 0, "\(fromEnvironment.stderr)")

            let missing = try await HalyardProcess.run(
                ["verify", "--url", url, "--cacert", "/nonexistent/ca.pem"], environment: Self.env)
            #expect(missing.status == 1)
            #expect(missing.stderr.contains("/nonexistent/ca.pem"))
        #endif
    }
}
