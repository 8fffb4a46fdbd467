/// How serious a log message is.
public enum HalyardLogLevel: Int, Sendable, Hashable, Comparable, CaseIterable {
    /// Detail for debugging (every fetch).
    case debug
    /// Notable but expected (context trimmed, status changes).
    case info
    /// Something went wrong and Halyard recovered (fetch failed, backoff).
    case warning
    /// Something went wrong that needs attention (key refused).
    case error

    /// Orders levels by severity.
    public static func < (lhs: HalyardLogLevel, rhs: HalyardLogLevel) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// The log hook: receives a level and a message. Halyard is silent unless one is set, never logs
/// the key, and never logs from the read path. Called off any lock; keep it quick.
public typealias HalyardLogHandler = @Sendable (HalyardLogLevel, String) -> Void
