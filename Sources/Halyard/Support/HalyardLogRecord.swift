/// One log line of Halyard's: a level, the message the string handler receives, and metadata
/// under stable `halyard.*` keys (``Key``) for a structured logger.
///
/// Delivered to ``FlagClientOptions/logRecordHandler`` and
/// ``FlagServiceOptions/logRecordHandler``; ``FlagClientOptions/logHandler`` receives the same
/// level and message. The metadata never holds a key, a password or other URL credentials, or
/// an attribute value (docs/integrations.md, "Log records").
public struct HalyardLogRecord: Sendable, Hashable, CustomStringConvertible {
    /// How serious it is.
    public var level: HalyardLogLevel
    /// The message, as the string handler receives it.
    public var message: String
    /// Facts about the line under ``Key`` names (`halyard.status`, `halyard.origin`, ...); a
    /// key is present only when the line has that fact.
    public var metadata: [String: String]

    /// A record of `level` and `message` with `metadata`.
    public init(level: HalyardLogLevel, message: String, metadata: [String: String] = [:]) {
        self.level = level
        self.message = message
        self.metadata = metadata
    }

    /// `level: message {key=value, ...}`, the keys sorted.
    public var description: String {
        let facts = metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        return "\(level): \(message)" + (facts.isEmpty ? "" : " {\(facts.joined(separator: ", "))}")
    }
}

/// The structured log hook: receives every ``HalyardLogRecord``. Halyard is silent unless a
/// handler is set, never logs the key, and never logs from the read path. Called off any lock;
/// keep it quick.
public typealias HalyardLogRecordHandler = @Sendable (HalyardLogRecord) -> Void

extension HalyardLogRecord {
    /// The one handler Halyard's components log through: both hooks an application set, each
    /// receiving every record (the string hook its level and message); nil when neither is set.
    package static func sink(logHandler: HalyardLogHandler?, recordHandler: HalyardLogRecordHandler?)
        -> HalyardLogRecordHandler?
    {
        switch (logHandler, recordHandler) {
        case (nil, nil): nil
        case (let strings?, nil): { strings($0.level, $0.message) }
        case (nil, let records?): records
        case (let strings?, let records?):
            { record in
                records(record)
                strings(record.level, record.message)
            }
        }
    }

    /// A record for `component` (``Key/component``) with `metadata` added.
    package init(
        _ level: HalyardLogLevel, _ message: String, _ component: Component, _ metadata: [String: String] = [:]
    ) {
        var all = metadata
        all[Key.component] = component.rawValue
        self.init(level: level, message: message, metadata: all)
    }

    /// The part of Halyard a record comes from: the value of ``Key/component``.
    package enum Component: String, Sendable {
        case refresh, stream, service, definitions, sharedCache = "shared_cache", exposures, transport, cache, verify
    }
}
