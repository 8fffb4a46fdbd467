/// Why a Redis call failed. Nothing here carries a password, a key or a value. ``category``
/// (`RedisError+Category.swift`) says which class of failure it is.
///
/// ```swift
/// do { _ = try client.get(Array("k".utf8)) } catch .timeout { /* the deadline passed */ } catch { }
/// ```
package enum RedisError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The call's deadline passed (waiting for a connection, resolving the host, connecting,
    /// sending, or waiting for replies). The connection, if any, is closed: a late reply is
    /// never read as another command's answer.
    case timeout
    /// The host name did not resolve. Carries the host.
    case resolutionFailed(String)
    /// Connecting failed (refused, unreachable). Carries the system's reason.
    case connectionFailed(String)
    /// The server closed the connection, or sending failed (reset, broken pipe).
    case connectionClosed(String)
    /// The server's bytes are not RESP2 the decoder accepts; the connection is closed.
    case protocolError(RESPError)
    /// A reply of a type the command does not answer with (e.g. an integer to `GET`).
    case unexpectedReply(command: String)
    /// An error reply (`-ERR …`) to a command. ``RedisClient/pipeline(_:deadline:)`` throws it
    /// for the classes that fail an exchange (failover and auth replies, which also drop the
    /// connection; cluster replies); ``RedisClient/send(_:timeout:)`` for every error reply.
    case server(String)
    /// `AUTH` or `SELECT` on connect was refused. Carries the server's message, with the
    /// password scrubbed from it.
    case handshakeFailed(String)
    /// `rediss://` cannot be used in this process: `libssl.so.3` did not load, the CA file did
    /// not load, or the platform has no TLS for Redis (Apple platforms). Carries the reason.
    case tlsUnavailable(String)
    /// The server's certificate was refused: not signed by a trusted CA, expired, or issued for
    /// another host name or address. Carries OpenSSL's reason (e.g. "hostname mismatch").
    case tlsVerificationFailed(String)
    /// The TLS handshake or a TLS record failed otherwise (no common protocol, a bad record).
    case tlsFailed(String)
    /// The client was closed.
    case closed

    package var description: String {
        switch self {
        case .timeout: "the Redis call's deadline passed"
        case .resolutionFailed(let host): "the Redis host \(host) did not resolve"
        case .connectionFailed(let reason): "connecting to Redis failed: \(reason)"
        case .connectionClosed(let reason): "the Redis connection was closed: \(reason)"
        case .protocolError(let error): "Redis sent bytes that are not RESP2: \(error)"
        case .unexpectedReply(let command): "an unexpected reply to \(command)"
        case .server(let message): "Redis answered an error: \(message)"
        case .handshakeFailed(let message): "Redis refused the connection's AUTH or SELECT: \(message)"
        case .tlsUnavailable(let reason): "TLS to Redis is not available: \(reason)"
        case .tlsVerificationFailed(let reason): "the Redis server's certificate was refused: \(reason)"
        case .tlsFailed(let reason): "the TLS session with Redis failed: \(reason)"
        case .closed: "the Redis client is closed"
        }
    }
}
