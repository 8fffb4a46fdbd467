import Foundation
import Testing

@testable import Halyard

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Halyard's RESP2 client against a real `redis-server` the test starts on a random loopback
/// port (docs/fleet.md). Skipped, with a message, where `redis-server` is absent.
@Suite struct RedisIntegrationTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test(.needsRedisServer) func getSetExpiryNXDelAndCompareAndDelete() throws {
        let server = try RedisTestServer()
        let client = server.client()
        defer { client.close() }
        let key = Self.bytes("halyard:v1:test:k")
        #expect(try client.get(key) == nil)
        #expect(try client.set(key, Self.bytes("v1"), expiry: .seconds(60)))
        #expect(try client.get(key) == Self.bytes("v1"))
        #expect(try client.set(key, Self.bytes("v2"), expiry: .seconds(60), onlyIfAbsent: true) == false)
        #expect(try client.get(key) == Self.bytes("v1"))
        let binary: [UInt8] = [0, 13, 10, 255, 36, 42, 13, 10]
        try client.set(key, binary, expiry: .seconds(60))
        #expect(try client.get(key) == binary)
        #expect(try client.delete([key]) == 1)
        #expect(try client.delete([key]) == 0)

        // PX: the key lapses (polled, bounded).
        try client.set(key, Self.bytes("short"), expiry: .milliseconds(30))
        let deadline = ContinuousClock.now + .seconds(20)
        while try client.get(key) != nil {
            guard ContinuousClock.now < deadline else { throw WaitTimedOut(what: "PX expiry", seconds: 20) }
            Thread.sleep(forTimeInterval: 0.01)
        }

        // A lease: taken once with NX, released only by its own token.
        let lease = Self.bytes("halyard:v1:test:k:lease")
        #expect(try client.set(lease, Self.bytes("token-1"), expiry: .seconds(11), onlyIfAbsent: true))
        #expect(try client.set(lease, Self.bytes("token-2"), expiry: .seconds(11), onlyIfAbsent: true) == false)
        #expect(try client.compareAndDelete(lease, token: Self.bytes("token-2")) == false)
        #expect(try client.get(lease) == Self.bytes("token-1"))
        #expect(try client.compareAndDelete(lease, token: Self.bytes("token-1")))
        #expect(try client.get(lease) == nil)

        // An error reply is the command's failure; the connection stays.
        #expect(throws: RedisError.self) { try client.send(RedisCommand("NOSUCHCOMMAND")) }
        try client.ping()
        #expect(client.connectionsOpened == 1)
    }

    @Test(.needsRedisServer) func aHundredPipelinedCommandsInOneExchange() throws {
        let server = try RedisTestServer()
        let client = server.client()
        defer { client.close() }
        let sets = (0..<50).map { RedisCommand.set(Self.bytes("k\($0)"), Self.bytes("v\($0)"), expiry: .seconds(60)) }
        let gets = (0..<50).map { RedisCommand.get(Self.bytes("k\($0)")) }
        let replies = try client.pipeline(sets + gets)
        #expect(replies.count == 100)
        #expect(replies.prefix(50).allSatisfy { $0 == .simple("OK") })
        #expect(Array(replies.suffix(50)) == (0..<50).map { .bulk(Self.bytes("v\($0)")) })
        // A large pipeline: values of 64 KiB each go out while replies come in.
        let big = [UInt8](repeating: 7, count: 64 << 10)
        let many = (0..<100).map { RedisCommand.set(Self.bytes("big\($0)"), big, expiry: .seconds(60)) }
        #expect(try client.pipeline(many).allSatisfy { $0 == .simple("OK") })
        #expect(try client.get(Self.bytes("big99")) == big)
        #expect(client.connectionsOpened == 1)
    }

    /// One client used from many tasks at once: each task's replies are its own (a call holds
    /// the one connection for its whole exchange), and no second connection is opened.
    @Test(.needsRedisServer) func manyTasksShareOneClient() async throws {
        let server = try RedisTestServer()
        let client = server.client()
        defer { client.close() }
        let mismatches = try await withThrowingTaskGroup(of: Int.self) { group in
            for task in 0..<8 {
                group.addTask {
                    var wrong = 0
                    for round in 0..<50 {
                        let key = Self.bytes("task\(task)")
                        let value = Self.bytes("task\(task)-round\(round)")
                        let replies = try client.pipeline([
                            .set(key, value, expiry: .seconds(60)), .get(key),
                        ])
                        if replies != [.simple("OK"), .bulk(value)] { wrong += 1 }
                    }
                    return wrong
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(mismatches == 0)
        #expect(client.connectionsOpened == 1)
    }

    @Test(.needsRedisServer) func authWithRequirepassAndACLUser() throws {
        let secret = "s3cret-Pass-42"
        let server = try RedisTestServer(password: secret)
        let anonymous = RedisClient(endpoint: server.endpoint(password: nil).withoutPassword, timeout: .seconds(5))
        defer { anonymous.close() }
        #expect(throws: RedisError.self) { try anonymous.get(Self.bytes("k")) }  // NOAUTH, an error reply

        let wrongPassword = "wrong-Pass-99"
        let wrong = RedisClient(endpoint: server.endpoint(password: wrongPassword), timeout: .seconds(5))
        defer { wrong.close() }
        do {
            _ = try wrong.get(Self.bytes("k"))
            Issue.record("a wrong password was accepted")
        } catch {
            guard case .handshakeFailed = error else { throw error }
            #expect(!error.description.contains(wrongPassword) && !"\(error)".contains(wrongPassword))
        }

        let right = server.client()
        defer { right.close() }
        try right.set(Self.bytes("k"), Self.bytes("v"), expiry: .seconds(60))
        #expect(try right.get(Self.bytes("k")) == Self.bytes("v"))

        // AUTH user password (ACL form) through a parsed URL.
        let url = try #require(URL(string: "redis://default:\(secret)@127.0.0.1:\(server.port)"))
        let acl = RedisClient(endpoint: try RedisEndpoint(url: url), timeout: .seconds(5))
        defer { acl.close() }
        #expect(try acl.get(Self.bytes("k")) == Self.bytes("v"))
    }

    @Test(.needsRedisServer) func selectChoosesTheDatabase() throws {
        let server = try RedisTestServer()
        let zero = server.client()
        let url = try #require(URL(string: "redis://127.0.0.1:\(server.port)/3"))
        let three = RedisClient(endpoint: try RedisEndpoint(url: url), timeout: .seconds(5))
        defer {
            zero.close()
            three.close()
        }
        try zero.set(Self.bytes("k"), Self.bytes("zero"), expiry: .seconds(60))
        #expect(try three.get(Self.bytes("k")) == nil)
        try three.set(Self.bytes("k"), Self.bytes("three"), expiry: .seconds(60))
        #expect(try zero.get(Self.bytes("k")) == Self.bytes("zero"))
        #expect(try three.get(Self.bytes("k")) == Self.bytes("three"))
    }

    @Test(.needsRedisServer) func aUnixSocket() throws {
        let server = try RedisTestServer()
        let url = try #require(URL(string: "unix://\(server.socketPath)?db=2"))
        let endpoint = try RedisEndpoint(url: url)
        #expect(endpoint.address == .unix(path: server.socketPath) && endpoint.database == 2 && endpoint.isLoopback)
        let client = RedisClient(endpoint: endpoint, timeout: .seconds(5))
        defer { client.close() }
        try client.set(Self.bytes("k"), Self.bytes("over a unix socket"), expiry: .seconds(60))
        #expect(try client.get(Self.bytes("k")) == Self.bytes("over a unix socket"))
        #expect(try server.client(database: 2).get(Self.bytes("k")) == Self.bytes("over a unix socket"))
    }

    /// SIGSTOP: calls fail with a timeout by their deadline; after SIGCONT the next call opens a
    /// new connection (the stopped one may still hold a late reply) and succeeds.
    @Test(.needsRedisServer) func aStoppedServerTimesOutAndTheNextCallReconnects() async throws {
        let server = try RedisTestServer()
        let client = server.client()
        defer { client.close() }
        try client.set(Self.bytes("k"), Self.bytes("v"), expiry: .seconds(60))
        server.pause()
        defer { server.resume() }
        // Each call runs under a bounded wait of the test's own, so a deadline that did not work
        // fails the test instead of hanging it.
        let first = try await Wait.result("a call to a stopped server") {
            Result { () throws(RedisError) in try client.get(Self.bytes("k"), timeout: .milliseconds(100)) }
        }
        #expect(throws: RedisError.timeout) { try first.get() }
        // A new connection is accepted by the kernel but never answered: a timeout again.
        let second = try await Wait.result("a second call to a stopped server") {
            Result { () throws(RedisError) in try client.get(Self.bytes("k"), timeout: .milliseconds(100)) }
        }
        #expect(throws: RedisError.timeout) { try second.get() }
        server.resume()
        let before = client.connectionsOpened
        #expect(try client.get(Self.bytes("k")) == Self.bytes("v"))
        #expect(client.connectionsOpened == before + 1)
        try client.ping()
        #expect(client.connectionsOpened == before + 1)
    }

    @Test(.needsRedisServer) func aKilledServerIsATypedErrorAndARestartWorksAgain() throws {
        let server = try RedisTestServer()
        let client = server.client()
        defer { client.close() }
        try client.ping()
        try server.kill9()
        // The open connection: closed by the peer (or reset). Then connecting is refused.
        #expect(throws: RedisError.self) { try client.ping() }
        do {
            try client.ping()
            Issue.record("a ping to a killed server succeeded")
        } catch {
            guard case .connectionFailed = error else { throw error }
        }
        try server.restart()
        try client.ping()
        try client.set(Self.bytes("k"), Self.bytes("after restart"), expiry: .seconds(60))
        #expect(try client.get(Self.bytes("k")) == Self.bytes("after restart"))
    }

    @Test(.needsRedisServer) func redissWithACAFileThatDoesNotLoadIsATypedError() throws {
        // A listener, so that the connect succeeds and the TLS set-up is what fails.
        let server = try RedisTestServer()
        var endpoint = try RedisEndpoint(url: try #require(URL(string: "rediss://127.0.0.1:\(server.port)")))
        endpoint.trustedCAFile = "/nonexistent/halyard-ca.pem"
        let client = RedisClient(endpoint: endpoint, timeout: .seconds(5))
        defer { client.close() }
        do {
            try client.ping()
            Issue.record("a ping over TLS with no usable CA file succeeded")
        } catch {
            guard case .tlsUnavailable = error else { throw error }
        }
    }

    @Test func aRefusedPortIsAConnectionFailure() throws {
        // Port 1 on loopback: nothing listens there, the kernel refuses at once.
        let client = RedisClient(
            endpoint: RedisEndpoint(address: .tcp(host: "127.0.0.1", port: 1)), timeout: .seconds(5))
        do {
            try client.ping()
            Issue.record("a ping to port 1 succeeded")
        } catch {
            guard case .connectionFailed = error else { throw error }
        }
        let closed = RedisClient(endpoint: RedisEndpoint(address: .unix(path: "/nonexistent/redis.sock")))
        #expect(throws: RedisError.self) { try closed.ping() }
        closed.close()
        #expect(throws: RedisError.closed) { try closed.ping() }
    }
}

extension RedisEndpoint {
    fileprivate var withoutPassword: RedisEndpoint {
        var copy = self
        copy.password = nil
        return copy
    }
}
