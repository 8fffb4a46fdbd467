import Foundation
import Halyard
import HalyardTesting
import Testing

/// `client.verify()`, the install check (docs/protocol.md, "Install check"): one request of its
/// own, reported, never published, and `nil` when the control plane does not answer.
@Suite("InstallCheck")
struct InstallCheckTests {
    private func verifyOrFail(_ client: FlagClient) async throws -> InstallCheck? {
        try await Wait.result("verify()") { await client.verify() }
    }

    @Test func acceptedKeyReportsCountEtagAndLeavesTheClientAlone() async throws {
        let plane = InMemoryControlPlane(values: ["a": .bool(true), "b": .int(2)])
        plane.setFlag(ServedFlag(key: "c", value: nil, reason: .error, errorCode: .flagNotFound))
        let client = try plane.makeClient(context: EvaluationContext(targetingKey: "u1"))
        defer { client.close() }
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
        let before = client.stats.sync
        plane.setValue(.bool(false), for: "a")
        plane.setValue(.string("new"), for: "d")

        let check = try #require(try await verifyOrFail(client))
        #expect(check.outcome == .accepted)
        #expect(check.isAccepted)
        #expect(check.status == 200)
        #expect(check.flagCount == 4)
        #expect(check.failedFlagCount == 1)
        #expect(check.etag == "\"v4\"")
        #expect(check.contextFingerprint == (try EvaluationContext(targetingKey: "u1").fitted().fingerprint))

        // Not published, not counted, and sent without the client's ETag.
        #expect(client.bool("a", default: false) == true)
        #expect(client.string("d", default: "absent") == "absent")
        #expect(client.status == .ready)
        #expect(client.stats.sync == before)
        let last = try #require(plane.requests.last)
        #expect(last.headers["If-None-Match"] == nil)
        #expect(last.headers["Authorization"] == "Bearer test-key")
    }

    @Test func refusedKeyIsRejectedAndTheStatusIsUntouched() async throws {
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        let client = try plane.makeClient()
        defer { client.close() }
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
        plane.failInitialization(status: 401)  // the next OFREP request only

        let check = try #require(try await verifyOrFail(client))
        #expect(check.outcome == .rejected(status: 401))
        #expect(!check.isAccepted)
        #expect(check.flagCount == 0)
        #expect(client.status == .ready)
        #expect(client.bool("a", default: false) == true)
    }

    @Test func nothingToAskGivesNil() async throws {
        let offline = try FlagClient(offlineValues: ["a": .bool(true)])
        #expect(try await verifyOrFail(offline) == nil)

        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        let invalid = try plane.makeClient(context: EvaluationContext(targetingKey: "u", kind: "Not A Kind"))
        #expect(try await verifyOrFail(invalid) == nil)
        invalid.close()

        let closed = try plane.makeClient()
        closed.close()
        #expect(try await verifyOrFail(closed) == nil)
    }

    @Test func loopbackServerAcceptedRefusedAndUnreachable() async throws {
        let server = try await ControlPlaneServer.launched(flags: [
            "default": [["key": "a", "value": true, "reason": "STATIC"], ["key": "b", "errorCode": "GENERAL"]],
            "metadata": ["environment": "test", "version": 7],
        ])
        defer { server.stop() }
        var options = FlagClientOptions(baseURL: server.baseURL, key: "k-loopback")
        options.installIDStorage = .fixed("verify-test")
        options.maxCachedContexts = 0
        options.pollInterval = .zero
        options.requestTimeout = .seconds(60)  // real time: a loaded CI machine must not time the loopback out
        let client = try FlagClient(options: options)
        defer { client.close() }
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })

        // Counted before and after: under load the start-up fetch may have been retried, and
        // the check is that verify() adds exactly one request of its own.
        let before = try await server.requests().filter { $0.path.hasSuffix("/ofrep/v1/evaluate/flags") }.count
        #expect(before >= 1)
        let check = try #require(try await verifyOrFail(client))
        #expect(check.outcome == .accepted)
        #expect(check.flagCount == 2)
        #expect(check.failedFlagCount == 1)
        #expect(check.metadata == ["environment": .string("test"), "version": .int(7)])
        let logged = try await server.requests().filter { $0.path.hasSuffix("/ofrep/v1/evaluate/flags") }
        #expect(logged.count == before + 1)
        let first = try #require(logged.first), last = try #require(logged.last)
        #expect(check.etag != nil)
        #expect(last.header("If-None-Match") == nil)
        #expect(last.body == first.body)

        try await server.script([["action": "status", "status": 401]])
        let refused = try #require(try await verifyOrFail(client))
        #expect(refused.outcome == .rejected(status: 401))
        #expect(refused.status == 401)
        #expect(client.status == .ready)

        try await server.script([["action": "status", "status": 503]])
        let failing = try #require(try await verifyOrFail(client))
        #expect(failing.outcome == .unexpected(status: 503))

        var unreachable = options
        unreachable.baseURL = try #require(URL(string: "http://127.0.0.1:1"))
        let orphan = try FlagClient(options: unreachable)
        defer { orphan.close() }
        #expect(try await verifyOrFail(orphan) == nil)
    }

    /// `FlagClient.verify(options:)`: the same check with exactly one request and nothing
    /// started (no start-up fetch, no polling); configuration errors throw as for a client; no
    /// answer logs its cause once and gives nil.
    @Test func verifyWithOptionsSendsExactlyOneRequest() async throws {
        let plane = InMemoryControlPlane(values: ["a": .bool(true), "b": .int(2)])
        var options = plane.makeOptions()
        options.initialContext = EvaluationContext(targetingKey: "u1")
        options.pollInterval = .milliseconds(1)
        let polling = options
        let check = try #require(
            try await Wait.result("verify(options:)") { try await FlagClient.verify(options: polling) })
        #expect(check.outcome == .accepted)
        #expect(check.flagCount == 2)
        #expect(check.contextFingerprint == (try EvaluationContext(targetingKey: "u1").fitted().fingerprint))
        try await Task.sleep(for: .milliseconds(50))  // a poll (every 1 ms) would show by now
        #expect(plane.requests.count == 1)
        #expect(plane.requests.first?.headers["Authorization"] == "Bearer \(options.key)")

        var blank = options
        blank.key = " "
        let blankKey = blank
        await #expect(throws: FlagClientError.blankKey) { try await FlagClient.verify(options: blankKey) }
        #expect(plane.requests.count == 1)

        let logged = Locked<[String]>([])
        var unreachable = FlagClientOptions(baseURL: try #require(URL(string: "http://127.0.0.1:1")), key: "k")
        unreachable.requestTimeout = .seconds(5)
        unreachable.logHandler = { level, message in if level >= .warning { logged.withLock { $0.append(message) } } }
        let offline = unreachable
        #expect(
            try await Wait.result("verify(options:) unreachable") { try await FlagClient.verify(options: offline) }
                == nil)
        let messages = logged.withLock { $0 }
        #expect(messages.count == 1)
        #expect(messages.first?.hasPrefix("no answer to the install check: ") == true, "\(messages)")
        #expect(messages.allSatisfy { !$0.contains("Bearer") })
    }

    /// A transport that fails every request with one error.
    struct FailingTransport: FlagTransport {
        let error: TransportError
        func send(_ request: TransportRequest) async throws -> TransportResponse { throw error }
    }

    /// `verifyKey()`: each case `verify()` gives nil for is a distinct `VerifyError`, and an
    /// answer, refused or not, is an `InstallCheck`.
    @Test func verifyKeySaysWhy() async throws {
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        let client = try plane.makeClient()
        defer { client.close() }
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
        let accepted = try await Wait.result("verifyKey()") { try await client.verifyKey() }
        #expect(accepted.outcome == .accepted)
        plane.failInitialization(status: 403)
        let refused = try await Wait.result("verifyKey() refused") { try await client.verifyKey() }
        #expect(refused.outcome == .rejected(status: 403))

        let offline = try FlagClient(offlineValues: ["a": .bool(true)])
        await #expect(throws: VerifyError.notRunning) { try await offline.verifyKey() }
        let closed = try plane.makeClient()
        closed.close()
        await #expect(throws: VerifyError.notRunning) { try await closed.verifyKey() }
        let invalid = try plane.makeClient(context: EvaluationContext(targetingKey: "u", kind: "Not A Kind"))
        defer { invalid.close() }
        await #expect {
            try await invalid.verifyKey()
        } throws: { error in
            if case .invalidContext = error as? VerifyError { true } else { false }
        }

        var options = plane.makeOptions()
        options.requestTimeout = .seconds(3)
        for (thrown, expected) in [
            (TransportError.timedOut, VerifyError.timedOut(.seconds(3))),
            (.network("connection refused"), .unreachable("connection refused")),
            (.cancelled, .cancelled),
        ] {
            options.transport = FailingTransport(error: thrown)
            let failing = options
            await #expect(throws: expected) { try await FlagClient.verifyKey(options: failing) }
            #expect(try await FlagClient.verify(options: failing) == nil)
        }
        var blank = options
        blank.key = " "
        let blankKey = blank
        await #expect(throws: VerifyError.invalidOptions(.blankKey)) {
            try await FlagClient.verifyKey(options: blankKey)
        }
        await #expect(throws: FlagClientError.blankKey) { try await FlagClient.verify(options: blankKey) }
    }
}
