import Foundation
import Testing

@testable import Halyard

/// Error replies of a real `redis-server` put in their classes (docs/fleet.md, "What an
/// operator sees"): a replica's `-READONLY` and `-MASTERDOWN` (the old primary after a
/// failover) drop the connection and fail the call, and the next call connects again, to where
/// the name points now; `-NOAUTH`, `-WRONGPASS`, `-NOPERM` fail as configuration (auth);
/// Cluster's answers fail as cluster; `-OOM` is returned and keeps the connection. Skipped, with
/// a message, where `redis-server` is absent.
@Suite struct RedisErrorClassTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func errorRepliesAreClassifiedByTheirFirstWord() {
        let cases: [(String, RedisError.Category)] = [
            ("READONLY You can't write against a read only replica.", .failover),
            ("LOADING Redis is loading the dataset in memory", .failover),
            ("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.", .failover),
            ("NOAUTH Authentication required.", .auth),
            ("WRONGPASS invalid username-password pair or user is disabled.", .auth),
            ("NOPERM User limited has no permissions to run the 'set' command", .auth),
            ("MOVED 3999 127.0.0.1:6381", .cluster),
            ("ASK 3999 127.0.0.1:6381", .cluster),
            ("CROSSSLOT Keys in request don't hash to the same slot", .cluster),
            ("CLUSTERDOWN Hash slot not served", .cluster),
            ("TRYAGAIN Multiple keys request during rehashing of slot", .cluster),
            ("OOM command not allowed when used memory > 'maxmemory'.", .outOfMemory),
            ("ERR unknown command 'NOSUCHCOMMAND'", .command),
            ("WRONGTYPE Operation against a key holding the wrong kind of value", .command),
            ("READONLYX not a known code", .command),
            ("", .command),
        ]
        for (message, category) in cases {
            #expect(RedisError.category(ofReply: message) == category, "\(message)")
            #expect(RedisError.server(message).category == category, "\(message)")
        }
        #expect(RedisError.timeout.category == .timeout)
        #expect(RedisError.connectionClosed("reset").category == .connection)
        #expect(RedisError.resolutionFailed("redis.internal").category == .connection)
        #expect(RedisError.protocolError(.unsolicitedBytes).category == .protocol)
        #expect(RedisError.handshakeFailed("ERR DB index is out of range").category == .auth)
        #expect(RedisError.handshakeFailed("LOADING Redis is loading the dataset in memory").category == .failover)
        #expect(RedisError.closed.category == .closed)
    }

    /// A managed failover as the client sees it: the primary it is connected to becomes a
    /// replica (of the new primary) and the name moves. The replica's `-READONLY` fails the call
    /// as a failover and drops the connection; the next call looks the name up again and
    /// reaches the new primary.
    @Test(.needsRedisServer) func aFailoverDropsTheConnectionAndTheNextCallReachesTheNewPrimary() throws {
        let old = try RedisTestServer()
        let new = try RedisTestServer()
        let pointsAt = Locked(old.port)
        let client = RedisClient(
            endpoint: RedisEndpoint(address: .tcp(host: "redis.fleet.test", port: 6379)), timeout: .seconds(5),
            limits: .init(),
            lookup: { _, _ in .success(RedisResolver.numeric("127.0.0.1", pointsAt.withLock { $0 }) ?? []) })
        defer { client.close() }
        let admin = old.client()
        defer { admin.close() }
        let key = Self.bytes("k")
        #expect(try client.pipeline([.set(key, Self.bytes("on old"), expiry: .seconds(60))]) == [.simple("OK")])

        // The failover: the old primary follows the new one, the name moves.
        _ = try admin.send(RedisCommand("REPLICAOF", [Self.bytes("127.0.0.1"), Self.bytes("\(new.port)")]))
        pointsAt.withLock { $0 = new.port }
        do {
            _ = try client.pipeline([.set(key, Self.bytes("v"), expiry: .seconds(60)), .get(key)])
            Issue.record("a replica's -READONLY did not fail the call")
        } catch {
            #expect(error.category == .failover, "\(error)")
        }
        let replies = try client.pipeline([.set(key, Self.bytes("on new"), expiry: .seconds(60)), .get(key)])
        #expect(replies == [.simple("OK"), .bulk(Self.bytes("on new"))])
        #expect(try new.client().get(key) == Self.bytes("on new"))
        let stats = client.stats
        #expect(stats.connectionsOpened == 2)
        #expect(stats.reconnects == 1)
        #expect(stats.errors[.failover] == 1)
    }

    /// A replica that refuses reads too (`replica-serve-stale-data no`, its primary gone):
    /// `-MASTERDOWN`, a failover; every call gets a fresh connection.
    @Test(.needsRedisServer) func masterDownIsAFailoverToo() throws {
        let server = try RedisTestServer()
        let client = RedisClient(endpoint: server.endpoint(), timeout: .seconds(5))
        defer { client.close() }
        let admin = server.client()
        defer { admin.close() }
        _ = try admin.send(RedisCommand("CONFIG", ["SET", "replica-serve-stale-data", "no"].map(Self.bytes)))
        _ = try admin.send(RedisCommand("REPLICAOF", ["127.0.0.1", "1"].map(Self.bytes)))
        for _ in 0..<2 {
            do {
                _ = try client.pipeline([.get(Self.bytes("k"))])
                Issue.record("-MASTERDOWN did not fail the call")
            } catch {
                #expect(error.category == .failover, "\(error)")
            }
        }
        #expect(client.connectionsOpened == 2)
        _ = try admin.send(RedisCommand("REPLICAOF", ["NO", "ONE"].map(Self.bytes)))
        #expect(try client.pipeline([.get(Self.bytes("k"))]) == [.bulk(nil)])
    }

    @Test(.needsRedisServer) func authAndPermissionRepliesAreConfigurationFailures() throws {
        let secret = "s3cret-Pass-42"
        let server = try RedisTestServer(password: secret)
        // No password: -NOAUTH fails the call (and drops the connection).
        var anonymous = server.endpoint()
        anonymous.password = nil
        let noAuth = RedisClient(endpoint: anonymous, timeout: .seconds(5))
        defer { noAuth.close() }
        do {
            _ = try noAuth.pipeline([.get(Self.bytes("k"))])
            Issue.record("-NOAUTH did not fail the call")
        } catch {
            #expect(error.category == .auth, "\(error)")
        }
        #expect(noAuth.stats.errors[.auth] == 1)
        // A wrong password: AUTH refused on connect.
        let wrong = RedisClient(endpoint: server.endpoint(password: "wrong-Pass-99"), timeout: .seconds(5))
        defer { wrong.close() }
        #expect(throws: RedisError.self) { try wrong.pipeline([.get(Self.bytes("k"))]) }
        do { _ = try wrong.pipeline([.get(Self.bytes("k"))]) } catch { #expect(error.category == .auth, "\(error)") }
        // An ACL user that may read but not write: -NOPERM.
        let admin = server.client()
        defer { admin.close() }
        _ = try admin.send(
            RedisCommand("ACL", ["SETUSER", "reader", "on", ">reader-Pass-7", "~*", "+get", "+ping"].map(Self.bytes)))
        let reader = RedisClient(
            endpoint: RedisEndpoint(
                address: .tcp(host: "127.0.0.1", port: server.port), user: "reader", password: "reader-Pass-7"),
            timeout: .seconds(5))
        defer { reader.close() }
        #expect(try reader.pipeline([.get(Self.bytes("k"))]) == [.bulk(nil)])
        do {
            _ = try reader.pipeline([.set(Self.bytes("k"), Self.bytes("v"), expiry: .seconds(60))])
            Issue.record("-NOPERM did not fail the call")
        } catch {
            #expect(error.category == .auth, "\(error)")
        }
    }

    /// A Redis Cluster node (here one with no slots): `-CLUSTERDOWN`, a cluster failure; the
    /// connection is kept (a new one would reach the same node).
    @Test(.needsRedisServer) func clusterRepliesFailAsCluster() throws {
        let server = try RedisTestServer(arguments: ["--cluster-enabled", "yes"])
        let client = RedisClient(endpoint: server.endpoint(), timeout: .seconds(5))
        defer { client.close() }
        for _ in 0..<2 {
            do {
                _ = try client.pipeline([.get(Self.bytes("k"))])
                Issue.record("a cluster reply did not fail the call")
            } catch {
                #expect(error.category == .cluster, "\(error)")
            }
        }
        #expect(client.connectionsOpened == 1)
        #expect(client.stats.errors[.cluster] == 2)
    }

    /// A full Redis (`maxmemory` reached, `noeviction`): the write's `-OOM` is returned as the
    /// write's reply, the read in the same exchange still answers, the connection is kept.
    @Test(.needsRedisServer) func outOfMemoryRefusesTheWriteAndKeepsTheConnection() throws {
        let server = try RedisTestServer()
        let client = RedisClient(endpoint: server.endpoint(), timeout: .seconds(5))
        defer { client.close() }
        let admin = server.client()
        defer { admin.close() }
        let key = Self.bytes("k")
        try client.set(key, Self.bytes("before"), expiry: .seconds(60))
        _ = try admin.send(RedisCommand("CONFIG", ["SET", "maxmemory-policy", "noeviction"].map(Self.bytes)))
        _ = try admin.send(RedisCommand("CONFIG", ["SET", "maxmemory", "1"].map(Self.bytes)))
        let replies = try client.pipeline([.set(key, Self.bytes("after"), expiry: .seconds(60)), .get(key)])
        #expect(replies.count == 2)
        if case .error(let message) = replies.first {
            #expect(RedisError.category(ofReply: message) == .outOfMemory, "\(message)")
        } else {
            Issue.record("the write was not refused: \(replies)")
        }
        #expect(replies.last == .bulk(Self.bytes("before")))
        #expect(client.stats.errors[.outOfMemory] == 1)
        _ = try admin.send(RedisCommand("CONFIG", ["SET", "maxmemory", "0"].map(Self.bytes)))
        try client.set(key, Self.bytes("after"), expiry: .seconds(60))
        #expect(client.connectionsOpened == 1)
    }
}
