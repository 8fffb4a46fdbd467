/// Who is uploading: the `meta` object of every exposure upload.
package struct ExposureMeta: Sendable, Hashable {
    /// The SDK name (for example `"halyard-swift"`).
    package var sdk: String
    /// The SDK version.
    package var version: String
    /// The application id given in the client options.
    package var appId: String
    /// The persisted install id.
    package var installId: String
    /// The OpenTelemetry `service.name` the options set, if any (OTLP exporter; falls back to
    /// ``appId``, see ``OTLPLogsEncoder/Resource``).
    package var serviceName: String?

    /// Creates the meta object.
    package init(sdk: String, version: String, appId: String, installId: String, serviceName: String? = nil) {
        self.sdk = sdk
        self.version = version
        self.appId = appId
        self.installId = installId
        self.serviceName = serviceName
    }
}
