import Foundation

/// One connection to Redis: connected, authenticated (`AUTH`) and on its database (`SELECT`)
/// when created, then exchanging pipelined commands, each exchange within a deadline.
///
/// Not thread-safe: ``RedisClient`` holds it under its lock. After any error but an error
/// reply the owner drops it (the socket closes with it), so a reply that arrives late is never
/// read as the answer to a later command.
///
/// ```swift
/// let connection = try RedisConnection(endpoint: endpoint, resolver: nil, limits: .init(), deadline: .now + .milliseconds(25))
/// let replies = try connection.exchange([.get(Array("a".utf8)), .get(Array("b".utf8))], deadline: .now + .milliseconds(25))
/// ```
final class RedisConnection {
    /// The plain socket, or a TLS session on it (`rediss://`).
    private let socket: any RedisByteStream
    /// The TCP or unix socket under it (the same object without TLS): what ``shutdown()`` and
    /// ``keepAlive`` reach.
    private let plain: RedisSocket
    private var decoder: RESPDecoder
    private var output: [UInt8] = []

    /// Connects and runs the handshake (TLS for `rediss://`, then `AUTH`, `SELECT`, pipelined)
    /// before `deadline`. A TCP host's addresses come from `resolver` (*default*: one made for
    /// this connect).
    init(
        endpoint: RedisEndpoint, resolver: RedisResolver?, limits: RESPDecoder.Limits, deadline: ContinuousClock.Instant
    )
        throws(RedisError)
    {
        switch endpoint.address {
        case .unix(let path):
            plain = try RedisSocket.connect(unixPath: path, deadline: deadline)
            socket = plain
        case .tcp(let host, let port):
            let resolver = resolver ?? RedisResolver(host: host, port: port)
            plain = try RedisSocket.connect(try resolver.addresses(deadline: deadline), deadline: deadline)
            if endpoint.tls {
                let context = try RedisTLSContext.shared(trustedCAFile: endpoint.trustedCAFile).get()
                socket = try context.stream(over: plain, host: host, deadline: deadline)
            } else {
                socket = plain
            }
        }
        decoder = RESPDecoder(limits: limits)
        var handshake: [RedisCommand] = []
        if let password = endpoint.password { handshake.append(.auth(user: endpoint.user, password: password)) }
        if endpoint.database != 0 { handshake.append(.select(endpoint.database)) }
        guard !handshake.isEmpty else { return }
        for reply in try exchange(handshake, deadline: deadline) {
            if case .error(let message) = reply {
                throw .handshakeFailed(Self.scrub(message, endpoint.password))
            }
        }
    }

    /// Wakes a thread waiting on this connection (from another thread): see
    /// ``RedisSocket/shutdown()``. The connection is unusable afterwards.
    func shutdown() { plain.shutdown() }

    /// Whether TCP keepalive is on (for tests).
    var keepAlive: Bool { plain.keepAlive }

    /// A server message with the password replaced, should the server ever echo it.
    static func scrub(_ message: String, _ password: RedisSecret?) -> String {
        guard let secret = password?.value, !secret.isEmpty else { return message }
        return message.replacingOccurrences(of: secret, with: "<redacted>")
    }

    /// Sends `commands` and reads one reply for each, all before `deadline`: the bytes go out
    /// while replies come in (one `poll` for both), so a long pipeline cannot fill both
    /// directions' buffers and stall. Error replies are returned as ``RedisValue/error(_:)``.
    func exchange(_ commands: [RedisCommand], deadline: ContinuousClock.Instant) throws(RedisError) -> [RedisValue] {
        output.removeAll(keepingCapacity: true)
        for command in commands { command.encode(into: &output) }
        var sent = 0
        var replies: [RedisValue] = []
        replies.reserveCapacity(commands.count)
        while replies.count < commands.count {
            let sending = sent < output.count
            let events = try socket.wait(read: true, write: sending, deadline: deadline)
            if sending && (events.writable || events.failed) {
                sent += try socket.send(output[sent...])
            }
            if events.readable || events.failed {
                _ = try socket.receive(into: &decoder)
                do throws(RESPError) {
                    while replies.count < commands.count, let reply = try decoder.next() { replies.append(reply) }
                } catch {
                    throw .protocolError(error)
                }
            }
        }
        if output.count > 64 << 10 { output = [] }
        // More bytes than replies asked for: the stream is out of step with the commands.
        if decoder.bufferedCount > 0 { throw .protocolError(.unsolicitedBytes) }
        return replies
    }
}
