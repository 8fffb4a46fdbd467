import Foundation

extension ExposureRecorder {
    /// Where and how batches are uploaded, from ``ExposureOptions/exporter``.
    enum UploadTarget {
        /// SPEC §7: `{baseURL}{path}`, the identity headers, an `Idempotency-Key`.
        case halyard(URL)
        /// OTLP/HTTP: the logs URL (``ExposureExporter/otlpLogsURL``) with the exporter's
        /// headers only, its encoding, compression, timeout and transport.
        case otlp(OTLPUpload)
        /// An exporter that must not be used (validated at client creation; a recorder built
        /// without that check drops every batch as rejected rather than send).
        case invalid(ExposureExporterError)
    }

    /// The request uploading `batch` to ``target`` and the transport that sends it (nil for an
    /// invalid exporter): the body in the exporter's format, gzipped unless an OTLP exporter
    /// turned compression off (sent uncompressed, with a warning, if zlib fails), the
    /// exporter's headers, timeout and transport.
    func request(for batch: ExposureBatch) -> (TransportRequest, any FlagTransport)? {
        let url: URL
        let json: [UInt8]
        var fields: [String: String]
        var (contentType, compresses, timeout, sender) = ("application/json", true, options.requestTimeout, transport)
        switch target {
        case .invalid:
            return nil
        case .halyard(let halyardURL):
            url = halyardURL
            json = ExposureEncoder.encode(meta: meta(), events: batch.events)
            fields = headers()
            fields["Idempotency-Key"] = batch.idempotencyKey
        case .otlp(let plan):
            url = plan.url
            let resource = OTLPLogsEncoder.Resource(
                meta: meta(), processName: ProcessInfo.processInfo.processName, attributes: otlpResourceAttributes,
                sampleRate: options.sampleRate, dedupWindowSeconds: Int(options.dedupWindowSeconds))
            json = plan.encode(resource: resource, events: batch.events)
            // The exporter's headers only: the control plane's key never goes to a collector.
            fields = plan.headers
            (contentType, compresses) = (plan.encoding.contentType, plan.compression == .gzip)
            timeout = plan.timeout ?? timeout
            sender = plan.transport ?? sender
        }
        let gzipped = compresses ? compressor.compress(json) : nil
        fields["Content-Type"] = contentType
        let body: Data
        if let gzipped {
            fields["Content-Encoding"] = "gzip"
            body = Data(gzipped)
        } else {
            if compresses { log?("Halyard: exposure batch could not be compressed; sending it uncompressed") }
            body = Data(json)
        }
        let request = TransportRequest(
            method: "POST", url: url, headers: fields, body: body,
            timeout: timeout, maxResponseBytes: Self.maxResponseBytes)
        return (request, sender)
    }

    /// Whether events keep the served value (the OTLP exporter writes it when there is no variant).
    var keepsValue: Bool {
        if case .otlp = target { return true }
        return false
    }

    /// Sends `batch` and classifies the answer; for an OTLP rejection also the receiver's
    /// `google.rpc.Status` message. An invalid exporter sends nothing: the batch is rejected.
    func upload(_ batch: ExposureBatch) async -> (ExposureUploadOutcome, String?) {
        guard let (request, sender) = request(for: batch) else { return (.rejected(status: 0), nil) }
        do {
            let response = try await sender.send(request)
            if case .otlp(let plan) = target { return plan.classify(response, wallNow: clock.wallNow) }
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
        } catch TransportError.redirectRefused {
            // Not followed, and it would not be next time either: dropped, not retried (the
            // transport's guard logged the target's origin once).
            return (.redirectRefused, nil)
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
