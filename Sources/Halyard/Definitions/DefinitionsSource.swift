public import Foundation

/// Where a service's flag definitions come from (SPEC §17, docs/definitions.md, "Sources"): a
/// file re-read when it changes, or an HTTP resource polled with `If-None-Match`.
///
/// ```swift
/// .file(URL(fileURLWithPath: "/etc/flags.json"))
/// .http(URL(string: "https://flags.example.com/flags.json")!, headers: ["Authorization": "Bearer …"])
/// ```
public enum DefinitionsSource: Sendable, Hashable, CustomStringConvertible {
    /// A local file in flagd's format, checked at every poll interval (its modification time,
    /// size and file number, then its content hash) and re-read when it changes. Symbolic links
    /// are followed at every check, so a link swapped to a new file (a Kubernetes ConfigMap)
    /// counts as a change.
    case file(URL)
    /// A document fetched with `GET` at every poll interval, with `If-None-Match` once an `ETag`
    /// was served, over the service's transport and its rules (SPEC §5: https, or http to a
    /// loopback host; the request timeout; backoff and `Retry-After` after a failure). `headers`
    /// are sent with every request (credentials, for example; never logged).
    case http(URL, headers: [String: String] = [:])

    /// The source for logs: the file's path, or the URL's scheme, host and path (never its
    /// query or the headers).
    public var description: String {
        switch self {
        case .file(let url): "file \(url.path)"
        case .http(let url, _):
            "\(url.scheme ?? "http")://\(url.host ?? "")\(url.port.map { ":\($0)" } ?? "")\(url.path)"
        }
    }
}
