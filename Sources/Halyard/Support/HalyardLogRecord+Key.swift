import Foundation

extension HalyardLogRecord {
    /// The metadata keys of Halyard's log records. Stable: a key keeps its name and meaning
    /// (docs/integrations.md, "Log records", has the table). None of them ever holds a key, a
    /// password or other URL credentials, or an attribute value.
    public enum Key {
        /// The part of Halyard that logged: `refresh`, `stream`, `service`, `definitions`,
        /// `shared_cache`, `exposures`, `transport`, `cache` (the on-device cache) or `verify` (the
        /// install check).
        public static let component = "halyard.component"
        /// The client's or service's status after the line (`ready`, `stale`, `error`, ...).
        public static let status = "halyard.status"
        /// The previous status, on a status change.
        public static let previousStatus = "halyard.previous_status"
        /// `scheme://host[:port]` of the server concerned (no credentials, no path, no query).
        public static let origin = "halyard.origin"
        /// The first 8 hex digits of the context's fingerprint (SHA-1 of its canonical JSON).
        public static let context = "halyard.context"
        /// The HTTP status code a server answered.
        public static let httpStatus = "halyard.http_status"
        /// How long until the next attempt, in seconds (`2.5`).
        public static let retryIn = "halyard.retry_in_seconds"
        /// A count: flags loaded, attributes dropped, exposures dropped, ...
        public static let count = "halyard.count"
        /// A short, stable reason word (`redirect_refused`, `timeout`, `network`, ...).
        public static let reason = "halyard.reason"
        /// The fetch's number within its client (a debug line's).
        public static let fetchID = "halyard.fetch_id"
        /// What started a fetch (`start`, `poll`, `refresh`, `identify`, `event`, ...).
        public static let trigger = "halyard.trigger"
    }

    /// `scheme://host[:port]` of `url`: never its user, password, path or query.
    static func origin(_ url: URL) -> String {
        var parts = URLComponents()
        parts.scheme = url.scheme
        parts.host = url.host
        parts.port = url.port
        return parts.string ?? (url.scheme ?? "")
    }

    /// The first 8 hex digits of a context fingerprint.
    package static func contextPrefix(_ fingerprint: String) -> String { String(fingerprint.prefix(8)) }

    /// Seconds of `duration` as a short decimal (`2.5`, `0.125`).
    package static func seconds(_ duration: Duration) -> String {
        let (s, attos) = duration.components
        let millis = (attos / 1_000_000_000_000_000) + s * 1000
        let whole = millis / 1000, fraction = abs(millis % 1000)
        if fraction == 0 { return "\(whole)" }
        var digits = String(fraction)
        digits = String(repeating: "0", count: 3 - digits.count) + digits
        while digits.hasSuffix("0") { digits.removeLast() }
        return "\(whole).\(digits)"
    }
}
