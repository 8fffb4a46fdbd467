public import Halyard
public import Logging

extension Logger {
    /// A Halyard log handler that writes every Halyard message through this logger: set it as
    /// ``FlagClientOptions/logHandler`` or ``FlagServiceOptions/logHandler``. It gets the message
    /// only: ``halyardLogRecordHandler(metadata:source:)`` keeps each line's `halyard.*` metadata.
    ///
    /// ```swift
    /// var logger = Logger(label: "checkout.flags")
    /// logger[metadataKey: "region"] = "eu-west-1"
    /// var options = FlagServiceOptions(baseURL: url, key: key)
    /// options.logHandler = logger.halyardLogHandler()
    /// ```
    ///
    /// Levels map one to one (``HalyardLogLevel/debug`` → `.debug`, `.info` → `.info`,
    /// `.warning` → `.warning`, `.error` → `.error`); the logger's own level filters as usual,
    /// and its metadata (and its handler's) is kept on every record, with `metadata` added.
    /// Messages come from Halyard, which never logs a key or an attribute value, and never logs
    /// from the read path.
    ///
    /// - Parameters:
    ///   - metadata: Added to every record (merged over the logger's own); *default* none.
    ///   - source: The records' `source`; *default* `"Halyard"`.
    /// - Returns: A handler that holds a copy of this logger (later changes to the variable do
    ///   not reach it).
    public func halyardLogHandler(metadata: Logger.Metadata = [:], source: String = "Halyard") -> HalyardLogHandler {
        let logger = self
        let extra: Logger.Metadata? = metadata.isEmpty ? nil : metadata
        return { level, message in
            logger.log(level: Logger.Level(halyard: level), "\(message)", metadata: extra, source: source)
        }
    }
}

extension Logger {
    /// A Halyard record handler that writes every Halyard log line through this logger with its
    /// metadata kept: set it as ``FlagClientOptions/logRecordHandler`` or
    /// ``FlagServiceOptions/logRecordHandler``.
    ///
    /// ```swift
    /// var logger = Logger(label: "checkout.flags")
    /// var options = FlagServiceOptions(baseURL: url, key: key)
    /// options.logRecordHandler = logger.halyardLogRecordHandler()
    /// // warning: 429 from the control plane: ... {halyard.component=service, halyard.http_status=429, ...}
    /// ```
    ///
    /// Levels map as in ``halyardLogHandler(metadata:source:)``. Each record's `halyard.*`
    /// metadata (``HalyardLogRecord/Key``: status, origin, context fingerprint prefix, counts,
    /// ...) becomes `Logger.Metadata` string values, merged over the logger's own metadata and
    /// `metadata` (a Halyard key wins a clash). Halyard's records never carry a key, a password
    /// or an attribute value.
    ///
    /// - Parameters:
    ///   - metadata: Added to every record (merged over the logger's own); *default* none.
    ///   - source: The records' `source`; *default* `"Halyard"`.
    /// - Returns: A handler that holds a copy of this logger.
    public func halyardLogRecordHandler(metadata: Logger.Metadata = [:], source: String = "Halyard")
        -> HalyardLogRecordHandler
    {
        let logger = self
        return { record in
            var all = metadata
            for (key, value) in record.metadata { all[key] = .string(value) }
            logger.log(
                level: Logger.Level(halyard: record.level), "\(record.message)", metadata: all.isEmpty ? nil : all,
                source: source)
        }
    }
}

extension Logger.Level {
    /// The swift-log level of a Halyard level: `debug`, `info`, `warning` and `error` keep their
    /// names (Halyard has no `trace`, `notice` or `critical`).
    public init(halyard level: HalyardLogLevel) {
        switch level {
        case .debug: self = .debug
        case .info: self = .info
        case .warning: self = .warning
        case .error: self = .error
        }
    }
}
