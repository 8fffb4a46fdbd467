package import Foundation

extension ExposureRecorder {
    /// The exposure pipeline of a control-plane user — a ``FlagClient`` or a `FlagService` —
    /// built one way for both: uploads to `baseURL` + `options.path` through `transport`, with
    /// the identity's headers (read per upload, so a key rotation reaches the uploader) and its
    /// SDK/app/install/service metadata; warnings go to `logHandler`. Whatever the options select (the
    /// uploader, and any exporter added to ``ExposureOptions``) is wired here, so both owners
    /// get it.
    package static func forControlPlane(
        options: ExposureOptions,
        clock: any HalyardClock,
        transport: any FlagTransport,
        baseURL: URL,
        appID: String?,
        serviceName: String?,
        identity: ClientIdentity,
        logHandler: HalyardLogRecordHandler?
    ) -> ExposureRecorder {
        var log: (@Sendable (String) -> Void)? = nil
        if let logHandler {
            log = { message in logHandler(HalyardLogRecord(.warning, message, .exposures)) }
        }
        return ExposureRecorder(
            options: options,
            clock: clock,
            transport: transport,
            endpoint: baseURL,
            meta: ExposureMeta(
                sdk: ClientIdentity.sdkName, version: ClientIdentity.sdkVersion, appId: appID ?? "",
                installId: identity.installID, serviceName: serviceName),
            // Held strongly: the final flush after `close()` may outlive its owner.
            headerProvider: { identity.headers },
            log: log)
    }
}
