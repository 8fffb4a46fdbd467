extension FlagServiceOptions {
    /// What the service's components log through: ``logHandler`` and ``logRecordHandler``
    /// together (nil when neither is set).
    var logSink: HalyardLogRecordHandler? {
        HalyardLogRecord.sink(logHandler: logHandler, recordHandler: logRecordHandler)
    }
}
