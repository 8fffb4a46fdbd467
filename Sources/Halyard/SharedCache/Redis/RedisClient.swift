import Foundation

/// Halyard's own RESP2 client (docs/fleet.md): one connection, opened on first use and
/// re-opened on the next use after any failure; every call ends by its deadline.
///
/// ```swift
/// let client = RedisClient(endpoint: try RedisEndpoint(url: URL(string: "redis://127.0.0.1:6379")!))
/// _ = try client.set(Array("k".utf8), Array("v".utf8), expiry: .seconds(60))
/// let value = try client.get(Array("k".utf8))          // Array("v".utf8)
/// let replies = try client.pipeline([.get(Array("a".utf8)), .get(Array("b".utf8))])   // one round trip
/// ```
///
/// Calls are synchronous: they block the calling thread until the reply or the deadline
/// (*default* 25 ms, SPEC §15), the wait for the connection, the name lookup and the connect
/// included, and never longer. The shared tier calls it off the read path, one serial queue per
/// client (its "lanes": several connections are several clients; docs/fleet.md, "Deadlines and threads").
///
/// Safe from any number of threads and tasks: they take turns on the one connection (a call
/// waiting for it is counted in ``RedisClientStats/waiting``). A failed call (deadline, closed
/// connection, bytes that are not RESP2) drops the connection, so a late reply is never read as
/// another command's answer. Error replies are classified (``RedisError/Category``): a
/// failover or auth reply drops the connection and fails the call, a cluster reply fails the
/// call, `-OOM` and other error replies are returned as values. ``close()`` never waits for a
/// call or a name lookup: it shuts the connection in use down, which wakes its call.
package final class RedisClient: @unchecked Sendable {
    package let endpoint: RedisEndpoint
    /// Each call's deadline unless the call gives its own.
    package let timeout: Duration
    package let limits: RESPDecoder.Limits
    /// Where a TCP host's addresses come from (nil for a unix socket).
    private let resolver: RedisResolver?

    /// Guards everything below; held only to take or give back the connection, never during a
    /// call's I/O, a connect or a name lookup.
    private let condition = NSCondition()
    /// The open connection when no call holds it.
    private var idle: RedisConnection?
    /// The connection the call in progress holds (``close()`` shuts it down to wake that call).
    private var held: RedisConnection?
    /// Whether a call holds the connection (or is connecting).
    private var busy = false
    private var closed = false
    /// Whether the connection was dropped (the next one opened is a reconnect).
    private var dropped = false
    private var counters = RedisClientStats()

    /// The default deadline of every call (SPEC §15).
    package static let defaultTimeout: Duration = .milliseconds(25)

    /// A client of `endpoint`.
    package convenience init(
        endpoint: RedisEndpoint, timeout: Duration = defaultTimeout, limits: RESPDecoder.Limits = .init()
    ) {
        self.init(endpoint: endpoint, timeout: timeout, limits: limits, lookup: nil)
    }

    /// A client whose host names are looked up by `lookup` instead of `getaddrinfo` (tests).
    init(endpoint: RedisEndpoint, timeout: Duration, limits: RESPDecoder.Limits, lookup: RedisResolver.Lookup?) {
        self.endpoint = endpoint
        self.timeout = timeout
        self.limits = limits
        if case .tcp(let host, let port) = endpoint.address {
            resolver = RedisResolver(host: host, port: port, lookup: lookup)
        } else {
            resolver = nil
        }
    }

    /// How many connections were opened (the first, and one per reconnect).
    package var connectionsOpened: Int { stats.connectionsOpened }

    /// The client's counters now.
    package var stats: RedisClientStats {
        condition.lock()
        defer { condition.unlock() }
        var stats = counters
        stats.open = (idle == nil ? 0 : 1) + (held == nil ? 0 : 1)
        return stats
    }

    /// Closes the client: every later call throws ``RedisError/closed``; a call in flight is
    /// woken (its connection shut down) and throws it too, calls waiting for the connection at
    /// once. Never waits for a call, a connect or a name lookup.
    package func close() {
        condition.lock()
        closed = true
        let inUse = held
        let spare = idle
        idle = nil
        condition.broadcast()
        condition.unlock()
        resolver?.close()
        inUse?.shutdown()
        _ = spare  // released here, outside the lock: its socket closes
    }

    /// Sends `commands` and returns one reply each (error replies of the classes that keep the
    /// exchange included), in one round trip, all within `timeout` (*default* ``timeout``).
    package func pipeline(_ commands: [RedisCommand], timeout: Duration? = nil) throws(RedisError) -> [RedisValue] {
        try pipeline(commands, deadline: ContinuousClock.now + (timeout ?? self.timeout))
    }

    /// Sends `commands` and returns one reply each, all by `deadline` (e.g. one set when the
    /// call was admitted, so that a wait before the call counts). Connects first when there is
    /// no open connection. A reply of class failover, auth or cluster throws
    /// ``RedisError/server(_:)`` (failover and auth drop the connection too).
    package func pipeline(_ commands: [RedisCommand], deadline: ContinuousClock.Instant) throws(RedisError)
        -> [RedisValue]
    {
        guard !commands.isEmpty else { return [] }
        guard let only = pipeline(calls: [commands], deadline: deadline).first else { return [] }
        return try only.get()
    }

    /// Sends several calls' commands in one exchange (one write, their replies read in order)
    /// and returns each call's outcome, as if each were ``pipeline(_:deadline:)`` made in turn:
    /// a call with a reply of class failover, auth or cluster fails with
    /// ``RedisError/server(_:)`` and the others keep their replies (one that drops the
    /// connection drops it after this exchange); a deadline, a lost connection or bytes that
    /// are not RESP2 fail every call. Counted as `calls.count` calls and one exchange.
    ///
    /// The shared tier's lanes send the calls that queued while the connection was busy this
    /// way (docs/fleet.md, "Deadlines and threads"): Redis answers a pipeline in order, so a
    /// call's replies are the next `commands.count` ones.
    package func pipeline(calls: [[RedisCommand]], deadline: ContinuousClock.Instant) -> [Result<
        [RedisValue], RedisError
    >] {
        let commands = calls.count == 1 ? calls[0] : calls.flatMap { $0 }
        guard !commands.isEmpty else { return calls.map { _ in .success([]) } }
        let start = ContinuousClock.now
        var connection: RedisConnection?
        var outcomes: [Result<[RedisValue], RedisError>] = []
        var exchangeFailure: RedisError?
        var keep = false
        var holding = false
        var replyErrors: [RedisError.Category] = []
        do throws(RedisError) {
            connection = try take(deadline: deadline, calls: calls.count)
            holding = true
            if connection == nil {
                let opened = try RedisConnection(
                    endpoint: endpoint, resolver: resolver, limits: limits, deadline: deadline)
                try hold(opened)
                connection = opened
            }
            guard let current = connection else { throw .closed }
            let replies = try current.exchange(commands, deadline: deadline)
            keep = true
            outcomes.reserveCapacity(calls.count)
            var next = 0
            for call in calls {
                let own = replies[next..<next + call.count]
                next += call.count
                var failure: RedisError?
                for case .error(let message) in own {
                    let category = RedisError.category(ofReply: message)
                    if RedisError.failsExchange(category) {
                        if RedisError.dropsConnection(category) { keep = false }
                        if category == .failover { resolver?.invalidate() }
                        if failure == nil { failure = .server(message) }
                    } else {
                        replyErrors.append(category)
                    }
                }
                outcomes.append(failure.map { .failure($0) } ?? .success(Array(own)))
            }
        } catch {
            exchangeFailure = error
        }
        let end = ContinuousClock.now
        let isClosed = give(back: connection, keep: keep, holding: holding) { s in
            s.latency.record(start.duration(to: end))
            for category in replyErrors { s.errors[category, default: 0] += 1 }
        }
        if let exchangeFailure {
            // A call woken by close() reports the close, not the shut-down socket.
            let reported: RedisError = isClosed ? .closed : exchangeFailure
            outcomes = calls.map { _ in .failure(reported) }
        }
        let failed = outcomes.compactMap { outcome -> RedisError.Category? in
            guard case .failure(let error) = outcome, error != .closed else { return nil }
            return error.category
        }
        if !failed.isEmpty {
            condition.lock()
            for category in failed { counters.errors[category, default: 0] += 1 }
            condition.unlock()
        }
        return outcomes
    }

    // MARK: - The connection's turns

    /// Takes the connection's turn by `deadline` for `calls` calls sent together: the open
    /// connection, or nil (the caller connects). Throws ``RedisError/timeout`` when the call before does not end in time.
    private func take(deadline: ContinuousClock.Instant, calls: Int) throws(RedisError) -> RedisConnection? {
        condition.lock()
        defer { condition.unlock() }
        counters.calls += calls
        if closed { throw .closed }
        if busy {
            counters.waiting += 1
            counters.mostWaiting = max(counters.mostWaiting, counters.waiting)
            defer { counters.waiting -= 1 }
            while busy && !closed {
                let remaining = ContinuousClock.now.duration(to: deadline)
                guard remaining > .zero else { throw .timeout }
                _ = condition.wait(until: Date(timeIntervalSinceNow: remaining.fractionalSeconds))
            }
            if closed { throw .closed }
        }
        busy = true
        counters.inFlight += 1
        guard let connection = idle else { return nil }
        idle = nil
        held = connection
        return connection
    }

    /// Registers a connection just opened as held (so that ``close()`` can wake its call).
    private func hold(_ connection: RedisConnection) throws(RedisError) {
        condition.lock()
        defer { condition.unlock() }
        counters.connectionsOpened += 1
        if dropped {
            dropped = false
            counters.reconnects += 1
        }
        if closed { throw .closed }
        held = connection
    }

    /// Gives the turn back (and the connection, kept when `keep`), updates the counters with
    /// `update`, and wakes one waiting call; returns whether the client is closed.
    private func give(
        back connection: RedisConnection?, keep: Bool, holding: Bool, update: (inout RedisClientStats) -> Void
    ) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        update(&counters)
        if holding {
            busy = false
            counters.inFlight -= 1
        }
        if connection != nil {
            held = nil
            if keep && !closed {
                idle = connection
            } else if !closed {
                dropped = true
            }
        }
        condition.signal()
        return closed
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
