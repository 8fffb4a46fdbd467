import Foundation
import Halyard
import Testing

/// The `halyard` command run as a subprocess against the loopback control plane
/// (Tests/ControlPlaneServer/server.py): normal output, `--json` parsed back, malformed contexts,
/// an unreachable server, 401, and `watch` seeing a change and exiting 130 on SIGINT (docs/cli.md).
@Suite("CLIProcess", .serialized)
struct CLIProcessTests {
    static let key = "cli-secret-key-42"
    static var flags: [String: Any] {
        [
            "default": [
                ["key": "checkout.new", "value": false, "reason": "DEFAULT", "variant": "off"],
                ["key": "missing", "errorCode": "FLAG_NOT_FOUND", "errorDetails": "no such flag"],
            ],
            "contexts": [
                "user-1": [
                    ["key": "checkout.new", "value": true, "reason": "TARGETING_MATCH", "variant": "on"],
                    ["key": "banner.text", "value": "Hello", "reason": "SPLIT", "variant": "b"],
                    ["key": "max.items", "value": 7, "reason": "STATIC"],
                ]
            ],
            "metadata": ["environment": "test"],
        ]
    }
    static let user1 = Data(#"{"targetingKey": "user-1", "plan": "pro"}"#.utf8)

    private static func json(_ text: String) throws -> JSONValue {
        try JSONValue(parsing: text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    private static func member(_ value: JSONValue, _ name: String) -> JSONValue? {
        guard case .object(let members) = value else { return nil }
        return members[name]
    }

    /// The `flags` array of an `eval --json` document.
    private static func flagItems(_ text: String) throws -> [JSONValue] {
        guard case .array(let items)? = member(try json(text), "flags") else { return [] }
        return items
    }

    private static func keyFile() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("halyard-key-\(UUID().uuidString)")
        try Data((key + "\n").utf8).write(to: url)
        return url
    }

    // MARK: - help, version, usage

    @Test func helpVersionAndUsageErrors() async throws {
        let help = try await HalyardProcess.run(["--help"])
        #expect(help.status == 0)
        for command in ["eval", "context", "watch", "verify"] { #expect(help.stdout.contains("  \(command) ")) }

        let evalHelp = try await HalyardProcess.run(["eval", "--help"])
        #expect(evalHelp.status == 0)
        for option in ["--url URL", "--key-file FILE", "--context FILE|-", "--timeout DURATION", "--json"] {
            #expect(evalHelp.stdout.contains(option), "\(option)")
        }

        let version = try await HalyardProcess.run(["--version"])
        #expect(version.status == 0)
        #expect(version.stdout == "halyard \(FlagClient.sdkVersion)\n")

        for arguments in [
            [], ["bogus"], ["eval", "--nope"], ["context", "a", "b"], ["eval"], ["watch", "--url", "x"],
        ] {
            let run = try await HalyardProcess.run(arguments, environment: ["HALYARD_KEY": Self.key])
            #expect(run.status == 2, "\(arguments): \(run.stderr)")
            #expect(run.stdout.isEmpty)
            #expect(run.stderr.hasPrefix("halyard: "), "\(arguments)")
        }
        // No key at all is a usage error too, and says where the key comes from.
        let noKey = try await HalyardProcess.run(["verify", "--url", "http://127.0.0.1:1"])
        #expect(noKey.status == 2)
        #expect(noKey.stderr.contains("HALYARD_KEY"))
    }

    // MARK: - eval

    @Test func evalPrintsAlignedRowsAndJSON() async throws {
        let server = try await ControlPlaneServer.launched(flags: Self.flags)
        defer { server.stop() }
        let keyFile = try Self.keyFile()
        defer { try? FileManager.default.removeItem(at: keyFile) }
        let url = server.baseURL.absoluteString

        let table = try await HalyardProcess.run(
            ["eval", "--url", url, "--key-file", keyFile.path, "--context", "-"], stdin: Self.user1)
        #expect(table.status == 0, "\(table.stderr)")
        #expect(table.stderr.isEmpty)
        let rows = table.stdout.split(separator: "\n").map(String.init)
        #expect(rows.count == 4)
        #expect(rows.first?.hasPrefix("KEY") == true)
        #expect(rows.contains { $0.hasPrefix("banner.text ") && $0.contains("\"Hello\"") && $0.contains("SPLIT") })
        #expect(
            rows.contains { $0.hasPrefix("checkout.new ") && $0.contains("true") && $0.contains("TARGETING_MATCH") })
        // Aligned: every column starts at the same offset on every row.
        let reasonStarts = rows.map { row in
            ["REASON", "SPLIT", "TARGETING_MATCH", "STATIC"].compactMap { row.range(of: " " + $0)?.lowerBound }
                .map { row.distance(from: row.startIndex, to: $0) }.first
        }
        #expect(Set(reasonStarts.compactMap { $0 }).count == 1, "\(table.stdout)")

        let json = try await HalyardProcess.run(
            ["eval", "--url", url, "--context", "-", "--json"], environment: ["HALYARD_KEY": Self.key],
            stdin: Self.user1)
        #expect(json.status == 0, "\(json.stderr)")
        let expected = try EvaluationContext(json: Self.user1).fitted()
        #expect(Self.member(try Self.json(json.stdout), "contextFingerprint") == .string(expected.fingerprint))
        let items = try Self.flagItems(json.stdout)
        #expect(
            items.compactMap { Self.member($0, "key") }
                == ["banner.text", "checkout.new", "max.items"].map(JSONValue.string))
        let banner = try #require(items.first)
        #expect(Self.member(banner, "value") == .string("Hello"))
        #expect(Self.member(banner, "variant") == .string("b"))
        #expect(Self.member(banner, "reason") == .string("SPLIT"))
        #expect(Self.member(banner, "errorCode") == .null)
        #expect(Self.member(items[2], "value") == .int(7))

        // The anonymous context gets the default set, failure items included.
        let anonymous = try await HalyardProcess.run(
            ["eval", "--url", url, "--json"], environment: ["HALYARD_KEY": Self.key])
        let missing = try #require(
            try Self.flagItems(anonymous.stdout).first { Self.member($0, "key") == .string("missing") })
        #expect(Self.member(missing, "errorCode") == .string("FLAG_NOT_FOUND"))
        #expect(Self.member(missing, "errorMessage") == .string("no such flag"))

        // The key went to the control plane as a bearer token and nowhere else.
        let requests = try await server.requests()
        #expect(requests.contains { $0.header("Authorization") == "Bearer \(Self.key)" })
        for run in [table, json, anonymous] {
            #expect(!run.stdout.contains(Self.key) && !run.stderr.contains(Self.key))
        }
    }

    @Test func evalRejectsAMalformedContextWithItsByteOffset() async throws {
        let server = try await ControlPlaneServer.launched(flags: Self.flags)
        defer { server.stop() }
        let bad = Data(#"{"targetingKey": "user-1", "plan": "pro",}"#.utf8)
        var offset = -1
        do { _ = try JSONValue(parsing: bad) } catch { offset = error.offset }
        #expect(offset > 0)

        let run = try await HalyardProcess.run(
            ["eval", "--url", server.baseURL.absoluteString, "--context", "-"], environment: ["HALYARD_KEY": Self.key],
            stdin: bad)
        #expect(run.status == 1)
        #expect(run.stdout.isEmpty)
        #expect(run.stderr.contains("at byte \(offset)"), "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1)
        #expect(try await server.requests().isEmpty)  // nothing was sent
    }

    @Test func unreachableServerFailsWithOneLineCause() async throws {
        let env = ["HALYARD_KEY": Self.key]
        let eval = try await HalyardProcess.run(
            ["eval", "--url", "http://127.0.0.1:1", "--timeout", "1s"], environment: env)
        #expect(eval.status == 1)
        #expect(eval.stdout.isEmpty)
        #expect(eval.stderr.contains("network error"), "\(eval.stderr)")
        #expect(eval.stderr.split(separator: "\n").count == 1)

        let verify = try await HalyardProcess.run(
            ["verify", "--url", "http://127.0.0.1:1", "--timeout", "1s", "--json"], environment: env)
        #expect(verify.status == 1)
        // With --json, stdout carries the error object (CLIScriptingTests checks its shape).
        #expect(Self.member(try Self.json(verify.stdout), "error") != nil, "\(verify.stdout)")
        #expect(verify.stderr.contains("no answer from http://127.0.0.1:1"), "\(verify.stderr)")
    }

    @Test func refusedKey401() async throws {
        let server = try await ControlPlaneServer.launched(flags: Self.flags)
        defer { server.stop() }
        let url = server.baseURL.absoluteString
        let env = ["HALYARD_KEY": Self.key]

        try await server.script([["action": "status", "status": 401, "count": 1]])
        let eval = try await HalyardProcess.run(["eval", "--url", url], environment: env)
        #expect(eval.status == 1)
        #expect(eval.stdout.isEmpty)
        #expect(eval.stderr.contains("refused the key (401)"), "\(eval.stderr)")

        // verify sends one request (no client start-up fetch besides it).
        try await server.script([["action": "status", "status": 401, "count": 1]])
        let verify = try await HalyardProcess.run(["verify", "--url", url, "--json"], environment: env)
        #expect(verify.status == 1)
        let document = try Self.json(verify.stdout)
        #expect(Self.member(document, "outcome") == .string("rejected"))
        #expect(Self.member(document, "status") == .int(401))
        #expect(verify.stderr.contains("refused the key (401)"))
        #expect(!verify.stdout.contains(Self.key) && !verify.stderr.contains(Self.key))
    }

    // MARK: - verify

    @Test func verifyReportsTheInstallCheck() async throws {
        let server = try await ControlPlaneServer.launched(flags: Self.flags)
        defer { server.stop() }
        let url = server.baseURL.absoluteString
        let env = ["HALYARD_KEY": Self.key]

        let text = try await HalyardProcess.run(["verify", "--url", url], environment: env)
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("accepted (200)"))
        #expect(text.stdout.contains("2 served, 1 failed"))

        let json = try await HalyardProcess.run(
            ["verify", "--url", url, "--context", "-", "--json"], environment: env, stdin: Self.user1)
        #expect(json.status == 0)
        let document = try Self.json(json.stdout)
        #expect(Self.member(document, "outcome") == .string("accepted"))
        #expect(Self.member(document, "status") == .int(200))
        #expect(Self.member(document, "flagCount") == .int(3))
        #expect(Self.member(document, "failedFlagCount") == .int(0))
        #expect(Self.member(document, "metadata") == .object(["environment": .string("test")]))
        #expect(
            Self.member(document, "contextFingerprint")
                == .string(try EvaluationContext(json: Self.user1).fitted().fingerprint))
        guard case .string(let etag)? = Self.member(document, "etag") else {
            Issue.record("no etag in \(json.stdout)")
            return
        }
        #expect(etag.hasPrefix("\""))
    }

    // MARK: - context

    @Test func contextPrintsCanonicalJSONFingerprintAndDropped() async throws {
        let input = Data(#"{"targetingKey": "u1", "kind": "tenant", "plan": "pro", "bio": "a long text to drop"}"#.utf8)
        let fitted = try EvaluationContext(json: input).fitted(limit: 60)
        #expect(fitted.droppedAttributes == ["bio"])

        let text = try await HalyardProcess.run(["context", "--limit", "60", "-"], stdin: input)
        #expect(text.status == 0, "\(text.stderr)")
        let lines = text.stdout.split(separator: "\n").map(String.init)
        #expect(
            lines == [
                "canonical    \(fitted.canonicalJSON)",
                "fingerprint  \(fitted.fingerprint)",
                "length       \(fitted.utf16Length) of 60 UTF-16 code units",
                "dropped      bio",
            ])

        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "halyard-ctx-\(UUID().uuidString).json")
        try input.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let json = try await HalyardProcess.run(["context", "--json", file.path])
        #expect(json.status == 0)
        let whole = try EvaluationContext(json: input).fitted()
        #expect(
            try Self.json(json.stdout)
                == .object([
                    "canonicalJSON": .string(whole.canonicalJSON), "fingerprint": .string(whole.fingerprint),
                    "droppedAttributes": .array([]), "length": .int(Int64(whole.utf16Length)), "limit": .int(4096),
                ]))
    }

    @Test func contextErrors() async throws {
        let malformed = Data("{\"targetingKey\": \"u1\", \"plan\": pro}".utf8)
        var parseError: JSONParseError?
        do { _ = try JSONValue(parsing: malformed) } catch { parseError = error }
        let expected = try #require(parseError)
        #expect(expected.offset == 31)
        let run = try await HalyardProcess.run(["context"], stdin: malformed)
        #expect(run.status == 1)
        #expect(run.stdout.isEmpty)
        #expect(run.stderr == "halyard: invalid context: \(expected.description)\n")
        #expect(run.stderr.contains("at byte 31"))

        let badKind = try await HalyardProcess.run(["context", "-"], stdin: Data(#"{"kind": "Bad Kind"}"#.utf8))
        #expect(badKind.status == 1)
        #expect(badKind.stderr.contains("kind"))

        let missingFile = try await HalyardProcess.run(["context", "/nonexistent/ctx.json"])
        #expect(missingFile.status == 1)
        #expect(missingFile.stderr.contains("/nonexistent/ctx.json"))

        let badLimit = try await HalyardProcess.run(["context", "--limit", "zero"], stdin: Data("{}".utf8))
        #expect(badLimit.status == 2)
    }

    /// Colour only on a terminal without `NO_COLOR` (every other test reads a pipe: no colour).
    /// The terminal is util-linux `script` (Debian's essential bsdutils); Linux only.
    @Test func colourOnlyOnATerminalWithoutNoColor() async throws {
        #if os(Linux)
            let script = try #require(ExternalTool.find("script"))
            let file = FileManager.default.temporaryDirectory.appendingPathComponent(
                "halyard-tty-\(UUID().uuidString).json")
            try Data(#"{"targetingKey": "u1"}"#.utf8).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            func onATerminal(noColor: Bool) async throws -> String {
                let run = try HalyardProcess(
                    ["-qec", "'\(try HalyardProcess.binary().path)' context '\(file.path)'", "/dev/null"],
                    executable: URL(fileURLWithPath: script), environment: noColor ? ["NO_COLOR": "1"] : [:])
                #expect(try await run.exitStatus() == 0)
                return run.stdout
            }
            let coloured = try await onATerminal(noColor: false)
            #expect(coloured.contains("\u{1B}[1mfingerprint\u{1B}[0m"), "\(coloured)")
            let plain = try await onATerminal(noColor: true)
            #expect(plain.contains("fingerprint  "), "\(plain)")
            #expect(!plain.contains("\u{1B}["))
        #endif
    }

    // MARK: - watch

    @Test func watchPrintsChangesAndExits130OnSIGINT() async throws {
        let server = try await ControlPlaneServer.launched(flags: Self.flags)
        defer { server.stop() }
        let watch = try HalyardProcess(
            ["watch", "--url", server.baseURL.absoluteString, "--interval", "200ms", "--json"],
            environment: ["HALYARD_KEY": Self.key])
        defer { watch.interrupt() }

        func events() throws -> [JSONValue] { try watch.lines.map { try Self.json($0) } }
        func change(_ key: String, to value: JSONValue) throws -> Bool {
            try events().contains { event in
                Self.member(event, "type") == .string("change") && Self.member(event, "key") == .string(key)
                    && Self.member(event, "to").flatMap { Self.member($0, "value") } == value
            }
        }
        try await watch.waitForOutput("watch shows the first values") {
            (try? change("checkout.new", to: .bool(false))) == true
        }
        #expect(
            try events().contains {
                Self.member($0, "type") == .string("status") && Self.member($0, "to") == .string("READY")
            })

        var changed = Self.flags
        changed["default"] = [["key": "checkout.new", "value": true, "reason": "DEFAULT", "variant": "on"]]
        try await server.setFlags(changed)
        func removal() throws -> JSONValue? {
            try events().first { Self.member($0, "key") == .string("missing") && Self.member($0, "to") == .null }
        }
        // One snapshot, two lines (written one after the other): wait for both.
        try await watch.waitForOutput("watch shows the change and the removal") {
            (try? change("checkout.new", to: .bool(true))) == true && (try? removal()) != nil
        }
        #expect(try removal().flatMap { Self.member($0, "time") } != nil)

        watch.interrupt()
        #expect(try await watch.exitStatus() == 130)  // 128 + SIGINT, as a shell reports Ctrl-C
        #expect(watch.stderr.isEmpty, "\(watch.stderr)")
    }

    @Test func watchTextOutputAndARefusedKey() async throws {
        let server = try await ControlPlaneServer.launched(flags: Self.flags)
        defer { server.stop() }
        let url = server.baseURL.absoluteString

        let text = try HalyardProcess(["watch", "--url", url], environment: ["HALYARD_KEY": Self.key])
        // The first line is the first status watch sees: NOT_READY when it looks before the
        // first fetch has been answered, READY when it looks after (on a loaded machine): both
        // are right, so the test waits for the READY line and the two flag lines.
        try await text.waitForOutput("watch prints the values") {
            text.stdout.contains("→ READY") && text.stdout.contains("checkout.new") && text.stdout.contains("missing")
        }
        text.interrupt()
        #expect(try await text.exitStatus() == 130)
        #expect(
            text.stdout.contains("status  NOT_READY → READY") || text.stdout.contains("status  - → READY"),
            "\(text.stdout)")
        #expect(text.stdout.contains("flag    checkout.new  (absent) → false (off, DEFAULT)"), "\(text.stdout)")

        // A refused key leaves nothing to watch: watch exits 1 by itself. Every request is
        // refused, so a first one retried (a timeout on a loaded machine) is refused too.
        try await server.script([["action": "status", "status": 403, "count": 100]])
        let refused = try await HalyardProcess.run(["watch", "--url", url], environment: ["HALYARD_KEY": Self.key])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("refused the key (403)"), "\(refused.stderr)")
    }
}
