package import Foundation

/// A parsed Redis URL: where the server is and how to log in (docs/fleet.md, "URLs").
///
/// `redis://[user:password@]host[:port][/db]`, `rediss://…` (TLS: OpenSSL loaded at run time
/// on Linux, docs/fleet.md "TLS") and `unix:///path[?db=N]`. The password is held in a ``RedisSecret`` and
/// never shown by the description.
///
/// ```swift
/// let endpoint = try RedisEndpoint(url: URL(string: "redis://app:pw@127.0.0.1:6380/2")!)
/// // endpoint.address == .tcp(host: "127.0.0.1", port: 6380), endpoint.database == 2
/// ```
package struct RedisEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// Where the server listens.
    package enum Address: Sendable, Hashable {
        /// A TCP host (name, IPv4, or IPv6 without brackets) and port.
        case tcp(host: String, port: Int)
        /// A unix socket's path.
        case unix(path: String)
    }

    package var address: Address
    /// `rediss://`: the connection is TLS, the server's certificate and host name verified.
    package var tls: Bool
    /// The PEM file of the CAs a `rediss://` server's certificate must chain to, instead of the
    /// system trust store (nil: the system's). Not part of the URL: ``SharedCache/trustedCAFile``.
    package var trustedCAFile: String?
    /// The ACL user sent with `AUTH user password`; nil: `AUTH password` (the default user).
    package var user: String?
    /// The password sent with `AUTH`; nil: no `AUTH`.
    package var password: RedisSecret?
    /// The database selected with `SELECT` after connecting (0: no `SELECT`).
    package var database: Int

    /// The default port of `redis://` and `rediss://`.
    package static let defaultPort = 6379
    /// The longest unix socket path `sockaddr_un` holds (108 bytes with the terminating zero).
    package static let maxSocketPathBytes = 107

    package init(address: Address, tls: Bool = false, user: String? = nil, password: String? = nil, database: Int = 0) {
        self.address = address
        self.tls = tls
        self.user = user
        self.password = password.map(RedisSecret.init)
        self.database = database
    }

    /// Parses `url`; throws for a URL the service cannot use (SPEC §15).
    package init(url: URL) throws(SharedCacheError) {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            throw .unsupportedScheme(url.scheme ?? "")
        }
        let scheme = (components.scheme ?? "").lowercased()
        switch scheme {
        case "redis", "rediss":
            guard var host = components.host, !host.isEmpty else { throw .missingHost }
            if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            let port = components.port ?? Self.defaultPort
            guard (1...65_535).contains(port) else { throw .invalidPort(port) }
            let path = components.percentEncodedPath
            var database = 0
            if !path.isEmpty && path != "/" {
                guard path.hasPrefix("/"), let number = Self.databaseNumber(path.dropFirst()) else {
                    throw .invalidDatabase(path)
                }
                database = number
            }
            let user = components.percentEncodedUser.flatMap { $0.removingPercentEncoding }.flatMap {
                $0.isEmpty ? nil : $0
            }
            let password = components.percentEncodedPassword.flatMap { $0.removingPercentEncoding }.flatMap {
                $0.isEmpty ? nil : $0
            }
            self.init(
                address: .tcp(host: host, port: port), tls: scheme == "rediss", user: user, password: password,
                database: database)
        case "unix":
            let path = components.percentEncodedPath.removingPercentEncoding ?? components.percentEncodedPath
            guard path.hasPrefix("/"), path.utf8.count > 1, path.utf8.count <= Self.maxSocketPathBytes,
                !path.utf8.contains(0)
            else { throw .invalidSocketPath(path) }
            var database = 0
            if let item = components.queryItems?.first(where: { $0.name == "db" }) {
                guard let text = item.value, let number = Self.databaseNumber(Substring(text)) else {
                    throw .invalidDatabase(item.value ?? "")
                }
                database = number
            }
            self.init(address: .unix(path: path), database: database)
        default:
            throw .unsupportedScheme(scheme)
        }
    }

    /// A database number: ASCII digits only, 0...1_000_000 (Redis' default is 16 databases;
    /// the server refuses one it does not have).
    private static func databaseNumber(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.utf8.count <= 7, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
            let number = Int(text), number <= 1_000_000
        else { return nil }
        return number
    }

    /// Whether the server is on this machine: a unix socket, or a loopback host (`localhost`,
    /// `127.0.0.0/8`, `::1`). Plain `redis://` elsewhere is accepted; the service's wiring
    /// warns once about it (SPEC §15).
    package var isLoopback: Bool {
        switch address {
        case .unix: true
        case .tcp(let host, _): LoopbackHost.contains(host)
        }
    }

    /// The URL without its password: `redis://user:***@host:6379/2`, `unix:///path?db=1`.
    package var description: String {
        switch address {
        case .unix(let path):
            return "unix://\(path)" + (database == 0 ? "" : "?db=\(database)")
        case .tcp(let host, let port):
            var login = ""
            if user != nil || password != nil {
                login = (user ?? "") + (password == nil ? "" : ":***") + "@"
            }
            let shownHost = host.contains(":") ? "[\(host)]" : host
            return (tls ? "rediss://" : "redis://") + login + "\(shownHost):\(port)"
                + (database == 0 ? "" : "/\(database)")
        }
    }
}

/// A password: its bytes for `AUTH`, and a description, debug description and mirror that never
/// show them.
///
/// ```swift
/// let secret = RedisSecret("pw")
/// print(secret)   // <redacted>
/// ```
package struct RedisSecret: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The password itself, for `AUTH` (and for scrubbing server messages).
    package let value: String

    package init(_ value: String) { self.value = value }

    package var description: String { "<redacted>" }
    package var debugDescription: String { "<redacted>" }
    package var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
