/// What kind of failure a ``RedisError`` (or an error reply) is, for what the shared tier does
/// about it and for the operator's counters (docs/fleet.md, "What an operator sees").
///
/// ```swift
/// if case .failover = RedisError.server("READONLY You can't write against a read only replica.").category {
///     // the client dropped the connection; the next call reconnects (to the new primary)
/// }
/// ```
extension RedisError {
    /// The failure classes an operator graphs and the tier acts on.
    package enum Category: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// The call's deadline passed (a hung or slow Redis, or a name lookup that did not end).
        case timeout
        /// Connecting, the name lookup or the connection failed (refused, reset, closed).
        case connection
        /// The server is not (or not yet) a primary that takes writes: `-READONLY` (a replica,
        /// e.g. the old primary after a managed failover), `-LOADING`, `-MASTERDOWN`. The client
        /// drops the connection, so the next call connects again (to where the name points now).
        case failover
        /// A configuration problem: `-NOAUTH`, `-WRONGPASS`, `-NOPERM`, or `AUTH`/`SELECT` refused
        /// on connect. Retrying does not help until the configuration changes.
        case auth
        /// A Redis Cluster answer (`-MOVED`, `-ASK`, `-CROSSSLOT`, `-CLUSTERDOWN`, `-TRYAGAIN`):
        /// Cluster is not supported.
        case cluster
        /// `-OOM`: Redis is full and refused a write; reads still work and the connection is kept.
        case outOfMemory
        /// Any other error reply (`-ERR`, `-WRONGTYPE`, `-NOSCRIPT`, …); the connection is kept.
        case command
        /// Bytes that are not RESP2, or a reply of the wrong type: a client or server bug.
        case `protocol`
        /// The client was closed (the service is shutting down): not Redis's failure.
        case closed

        package var description: String { rawValue }
    }

    /// This error's class.
    package var category: Category {
        switch self {
        case .timeout: .timeout
        case .resolutionFailed, .connectionFailed, .connectionClosed, .tlsUnavailable, .tlsVerificationFailed,
            .tlsFailed:
            .connection
        case .protocolError, .unexpectedReply: .protocol
        case .server(let message): Self.category(ofReply: message)
        case .handshakeFailed(let message):
            // A refused `AUTH` or `SELECT` is configuration, unless the server was loading.
            Self.category(ofReply: message) == .failover ? .failover : .auth
        case .closed: .closed
        }
    }

    /// The class of an error reply, from its first word (the message without the `-`).
    package static func category(ofReply message: String) -> Category {
        let code = message.prefix { $0 != " " }
        switch code {
        case "READONLY", "LOADING", "MASTERDOWN": return .failover
        case "NOAUTH", "WRONGPASS", "NOPERM": return .auth
        case "MOVED", "ASK", "CROSSSLOT", "CLUSTERDOWN", "TRYAGAIN": return .cluster
        case "OOM": return .outOfMemory
        default: return .command
        }
    }

    /// Whether an error reply of `category` makes the whole exchange fail (thrown as
    /// ``RedisError/server(_:)``): a failover or auth answer also drops the connection; a
    /// cluster answer keeps it (a new connection reaches the same server). `-OOM` and other
    /// error replies are returned as ``RedisValue/error(_:)``.
    static func failsExchange(_ category: Category) -> Bool {
        category == .failover || category == .auth || category == .cluster
    }

    /// Whether an error reply of `category` drops the connection it came on.
    static func dropsConnection(_ category: Category) -> Bool {
        category == .failover || category == .auth
    }
}
