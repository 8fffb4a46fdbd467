import Foundation

/// Halyard's own RESP2 client (docs/fleet.md): one connection, behind a lock, opened on first
/// use and re-opened on the next use after any failure; every call ends by its deadline.
///
/// ```swift
/// let client = RedisClient(endpoint: try RedisEndpoint(url: URL(string: "redis://127.0.0.1:6379")!))
/// _ = try client.set(Array("k".utf8), Array("v".utf8), expiry: .seconds(60))
/// let value = try client.get(Array("k".utf8))          // Array("v".utf8)
/// let replies = try client.pipeline([.get(Array("a".utf8)), .get(Array("b".utf8))])   // one round trip
/// ```
///
/// Calls are synchronous: they block the calling thread until the reply or the deadline
/// (*default* 25 ms, SPEC §15), the wait for the lock included, and never longer. No thread is
/// started. The L2 wiring will call it off the read path (from the service's fetch tasks);
/// docs/fleet.md, "Deadlines and threads", says why there is no async wrapper.
///
/// Safe from any number of threads and tasks: they take turns on the one connection. A failed
/// call (deadline, closed connection, bytes that are not RESP2) drops the connection, so a late
/// reply is never read as another command's answer; an error reply (`-ERR`) keeps it.
package final class RedisClient: @unchecked Sendable {
    package let endpoint: RedisEndpoint
    /// Each call's deadline unless the call gives its own.
    package let timeout: Duration
    package let limits: RESPDecoder.Limits

    /// Guards `connection`, `closed` and `connectionsOpened` (a lock with a timed acquire, which
    /// `Locked` does not have: a call's deadline covers its wait for the lock).
    private let lock = NSLock()
    private var connection: RedisConnection?
    private var closed = false
    private var opened = 0

    /// The default deadline of every call (SPEC §15).
    package static let defaultTimeout: Duration = .milliseconds(25)

    package init(endpoint: RedisEndpoint, timeout: Duration = defaultTimeout, limits: RESPDecoder.Limits = .init()) {
        self.endpoint = endpoint
        self.timeout = timeout
        self.limits = limits
    }

    /// How many connections were opened (the first, and one per reconnect).
    package var connectionsOpened: Int {
        lock.lock()
        defer { lock.unlock() }
        return opened
    }

    /// Closes the connection; every later call throws ``RedisError/closed``.
    package func close() {
        lock.lock()
        closed = true
        connection = nil
        lock.unlock()
    }

    /// Sends `commands` and returns one reply each (error replies included), in one round trip,
    /// all within `timeout` (*default* ``timeout``). Connects first when there is no connection.
    package func pipeline(_ commands: [RedisCommand], timeout: Duration? = nil) throws(RedisError) -> [RedisValue] {
        let deadline = ContinuousClock.now + (timeout ?? self.timeout)
        guard !commands.isEmpty else { return [] }
        let wait = ContinuousClock.now.duration(to: deadline)
        guard wait > .zero, lock.lock(before: Date(timeIntervalSinceNow: wait.fractionalSeconds)) else {
            throw .timeout
        }
        defer { lock.unlock() }
        if closed { throw .closed }
        let current: RedisConnection
        if let connection {
            current = connection
        } else {
            opened += 1
            current = try RedisConnection(endpoint: endpoint, limits: limits, deadline: deadline)
            connection = current
        }
        do throws(RedisError) {
            return try current.exchange(commands, deadline: deadline)
        } catch {
            connection = nil
            throw error
        }
    }

    /// One command's reply; an error reply throws ``RedisError/server(_:)``.
    package func send(_ command: RedisCommand, timeout: Duration? = nil) throws(RedisError) -> RedisValue {
        let replies = try pipeline([command], timeout: timeout)
        guard let reply = replies.first else { throw .unexpectedReply(command: command.name) }
        if case .error(let message) = reply { throw .server(message) }
        return reply
    }

    /// `GET key`: the value, or nil when there is none.
    package func get(_ key: [UInt8], timeout: Duration? = nil) throws(RedisError) -> [UInt8]? {
        switch try send(.get(key), timeout: timeout) {
        case .bulk(let bytes): return bytes
        default: throw .unexpectedReply(command: "GET")
        }
    }

    /// `SET key value PX ms [NX]`: whether it was set (false: `NX` and the key exists).
    @discardableResult
    package func set(
        _ key: [UInt8], _ value: [UInt8], expiry: Duration, onlyIfAbsent: Bool = false, timeout: Duration? = nil
    ) throws(RedisError) -> Bool {
        switch try send(.set(key, value, expiry: expiry, onlyIfAbsent: onlyIfAbsent), timeout: timeout) {
        case .simple("OK"): return true
        case .bulk(nil): return false
        default: throw .unexpectedReply(command: "SET")
        }
    }

    /// `DEL key…`: how many keys were removed.
    @discardableResult
    package func delete(_ keys: [[UInt8]], timeout: Duration? = nil) throws(RedisError) -> Int {
        guard case .integer(let count) = try send(.del(keys), timeout: timeout) else {
            throw .unexpectedReply(command: "DEL")
        }
        return Int(count)
    }

    /// Deletes `key` only while it holds `token` (a lease's release): whether it was deleted.
    @discardableResult
    package func compareAndDelete(_ key: [UInt8], token: [UInt8], timeout: Duration? = nil) throws(RedisError)
        -> Bool
    {
        guard case .integer(let count) = try send(.compareAndDelete(key, token: token), timeout: timeout) else {
            throw .unexpectedReply(command: "EVAL")
        }
        return count == 1
    }

    /// `PING`: throws unless the server answers `PONG`.
    package func ping(timeout: Duration? = nil) throws(RedisError) {
        guard case .simple("PONG") = try send(.ping, timeout: timeout) else { throw .unexpectedReply(command: "PING") }
    }
}
