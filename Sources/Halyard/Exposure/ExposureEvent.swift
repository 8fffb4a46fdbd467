/// One exposure event as uploaded (docs/exposures.md).
package struct ExposureEvent: Sendable, Hashable {
    /// The flag key.
    package var key: String
    /// The variant served, `nil` when the control plane named none.
    package var variant: String?
    /// The evaluation reason, as on the wire.
    package var reason: String
    /// The fitted context's fingerprint.
    package var contextFingerprint: String
    /// When the exposure was recorded, in Unix seconds.
    package var creationDate: Int64
    /// How many exposures this event stands for (always 1 today).
    package var count: Int
    /// The value served, kept only when there is no variant and the exporter writes it
    /// (``ExposureExporter/otlp(endpoint:headers:)``'s `feature_flag.result.value`); shared with
    /// the snapshot it came from, not copied.
    package var value: JSONValue?
    /// The error code the served flag carried, if any (`error.type` on reason `ERROR`).
    package var errorCode: FlagErrorCode?
    /// The served flag's metadata `version` as text (OTLP's `feature_flag.version`), kept only
    /// by the OTLP exporter.
    package var flagVersion: String?
    /// The served flag's metadata `flagSetId` as text (OTLP's `feature_flag.set.id`), kept only
    /// by the OTLP exporter.
    package var flagSetID: String?

    /// Creates an event.
    package init(
        key: String, variant: String?, reason: String, contextFingerprint: String, creationDate: Int64, count: Int = 1,
        value: JSONValue? = nil, errorCode: FlagErrorCode? = nil, flagVersion: String? = nil, flagSetID: String? = nil
    ) {
        self.flagVersion = flagVersion
        self.flagSetID = flagSetID
        self.key = key
        self.variant = variant
        self.reason = reason
        self.contextFingerprint = contextFingerprint
        self.creationDate = creationDate
        self.count = count
        self.value = value
        self.errorCode = errorCode
    }
}
