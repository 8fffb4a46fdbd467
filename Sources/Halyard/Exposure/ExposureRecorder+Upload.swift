import Foundation

extension ExposureRecorder {
    /// Where and how batches are uploaded, from ``ExposureOptions/exporter``.
    enum UploadTarget {
        /// SPEC §7: `{baseURL}{path}`, the identity headers, an `Idempotency-Key`.
        case halyard(URL)
        /// OTLP/HTTP JSON: the logs URL (``ExposureExporter/otlpLogsURL``) with the exporter's
        /// headers only.
        case otlp(URL, headers: [String: String])
        /// An exporter that must not be used (validated at client creation; a recorder built
        /// without that check drops every batch as rejected rather than send).
        case invalid(ExposureExporterError)
    }

    /// The request uploading `batch` to ``target`` (nil for an invalid exporter): the body in
    /// the exporter's format, gzipped (sent uncompressed, with a warning, if zlib fails), and
    /// the exporter's headers.
    func request(for batch: ExposureBatch) -> TransportRequest? {
        let url: URL
        let json: [UInt8]
        var fields: [String: String]
        switch target {
        case .invalid:
            return nil
        case .halyard(let halyardURL):
            url = halyardURL
            json = ExposureEncoder.encode(meta: meta(), events: batch.events)
            fields = headers()
            fields["Idempotency-Key"] = batch.idempotencyKey
        case .otlp(let otlpURL, let extra):
            url = otlpURL
            let resource = OTLPLogsEncoder.Resource(
                meta: meta(), processName: ProcessInfo.processInfo.processName, attributes: otlpResourceAttributes,
                sampleRate: options.sampleRate, dedupWindowSeconds: Int(options.dedupWindowSeconds))
            json = OTLPLogsEncoder.encode(resource: resource, events: batch.events)
            // The exporter's headers only: the control plane's key never goes to a collector.
            // Ours replace any of the same name, whatever its case.
            fields = [:]
            for (name, value) in extra
            where !["content-type", "content-encoding", "content-length"].contains(name.lowercased()) {
                fields[name] = value
            }
            if !fields.keys.contains(where: { $0.lowercased() == "user-agent" }) {
                fields["User-Agent"] = ClientIdentity.userAgent
            }
        }
        let gzipped = compressor.compress(json)
        fields["Content-Type"] = "application/json"
        let body: Data
        if let gzipped {
            fields["Content-Encoding"] = "gzip"
            body = Data(gzipped)
        } else {
            log?("Halyard: exposure batch could not be compressed; sending it uncompressed")
            body = Data(json)
        }
        return TransportRequest(
            method: "POST", url: url, headers: fields, body: body,
            timeout: options.requestTimeout, maxResponseBytes: Self.maxResponseBytes)
    }

    /// Whether events keep the served value (the OTLP exporter writes it when there is no variant).
    var keepsValue: Bool {
        if case .otlp = target { return true }
        return false
    }

    /// Sends `batch` and classifies the answer; for an OTLP rejection also the receiver's
    /// `google.rpc.Status` message. An invalid exporter sends nothing: the batch is rejected.
    func upload(_ batch: ExposureBatch) async -> (ExposureUploadOutcome, String?) {
        guard let request = request(for: batch) else { return (.rejected(status: 0), nil) }
        do {
            let response = try await transport.send(request)
            let outcome = ExposureUploadOutcome.classify(
                exporter: options.exporter,
                status: response.status,
                retryAfterHeader: response.header("Retry-After"),
                body: response.body,
                wallNow: clock.wallNow)
            var message: String?
            if case .rejected = outcome, keepsValue { message = ExposureUploadOutcome.statusMessage(response.body) }
            return (outcome, message)
        } catch TransportError.responseTooLarge {
            // The transport refuses an answer whose body is over the limit without giving its
            // status, so nothing says the batch arrived: a non-retryable failure (SPEC §13),
            // not a delivery, and not a retry (resending to a receiver that always answers at
            // that length would block the pipeline). docs/exposures.md, "Failure policy".
            return (.responseTooLarge, nil)
        } catch {
            return (.retry(retryAfter: nil), nil)
        }
    }
}

/// The recorder's reusable gzip stream. `GzipCompressor` owns a `z_stream` and is not
/// `Sendable`; it is only ever touched under this lock, so it cannot be shared unguarded.
final class SharedCompressor: @unchecked Sendable {
    /// Serializes the uses of ``compressor``.
    private let lock = NSLock()
    /// The reusable gzip stream.
    private let compressor = GzipCompressor()

    /// `input` gzipped, or nil when zlib fails.
    func compress(_ input: [UInt8]) -> [UInt8]? {
        lock.lock()
        defer { lock.unlock() }
        return compressor.compress(input)
    }
}
