public import Halyard
public import Logging

extension Logger {
    /// A Halyard log handler that writes every Halyard message through this logger: set it as
    /// ``FlagClientOptions/logHandler`` or ``FlagServiceOptions/logHandler``.
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
