package import Foundation

/// How the exposure recorder posts to an OTLP receiver, resolved once from the exporter when the
/// recorder is created (docs/exposures.md, "OTLP exporter"): where, with which headers, in which
/// encoding and compression, within which timeout, through which transport; and how it reads the
/// answer (protobuf or JSON, as the answer's `Content-Type` says).
package struct OTLPUpload: Sendable {
    /// The logs URL.
    package let url: URL
    /// The exporter's headers that may be sent (no control character, token names; ours —
    /// `Content-Type`, `Content-Encoding`, `Content-Length` — removed), with a `User-Agent`.
    package let headers: [String: String]
    /// The body encoding.
    package let encoding: OTLPEncoding
    /// The body compression.
    package let compression: OTLPCompression
    /// The request timeout, when the configuration sets one.
    package let timeout: Duration?
    /// The transport for a collector with its own trusted CA file, when one is configured and
    /// the client's transport is Halyard's libcurl transport; nil: the client's transport.
    package let transport: (any FlagTransport)?

    /// The plan for an OTLP `exporter` whose header fields are `headers`, uploading through
    /// `transport` (wrapped by the recorder with `logHandler`), and the warnings to log once at
    /// creation; or why it cannot be used (then the recorder drops its batches).
    package static func make(
        _ exporter: ExposureExporter, headers given: [String: String], transport: any FlagTransport,
        logHandler: HalyardLogRecordHandler?
    ) -> (plan: Result<OTLPUpload, ExposureExporterError>, warnings: [String]) {
        var warnings: [String] = []
        var encoding = OTLPEncoding.json
        var compression = OTLPCompression.gzip
        var timeout: Duration?
        var trustedCAFile: String?
        if case .otlpConfigured(let c) = exporter {
            warnings = c.warnings
            (encoding, compression, timeout, trustedCAFile) = (c.encoding, c.compression, c.timeout, c.trustedCAFile)
        }
        if let problem = exporter.endpointProblem {
            guard case .otlpConfigured = exporter, case .insecureHTTPToNonLoopbackHost(let host) = problem else {
                if case .otlpConfigured = exporter {
                    warnings.append("the OTLP exporter cannot be used (\(problem)): its exposures are dropped")
                }
                return (.failure(problem), warnings)
            }
            warnings.append(
                "the OTLP endpoint \(host) is plain http: exposures are sent to it unencrypted (use https outside a "
                    + "trusted network)")
        }
        guard let url = exporter.otlpLogsURL else { return (.failure(.endpointNotAbsolute), warnings) }
        var fields: [String: String] = [:]
        var dropped: [String] = []
        for (name, value) in given
        where !["content-type", "content-encoding", "content-length"].contains(name.lowercased()) {
            if HeaderValue.isToken(name) && HeaderValue.isClean(value) {
                fields[name] = value
            } else {
                dropped.append(HeaderValue.shown(name))
            }
        }
        if !dropped.isEmpty {
            warnings.append(
                "OTLP header \(dropped.sorted().joined(separator: ", ")) dropped: a control character in its value or "
                    + "an invalid name")
        }
        if !fields.keys.contains(where: { $0.lowercased() == "user-agent" }) {
            fields["User-Agent"] = ClientIdentity.userAgent
        }
        var own: (any FlagTransport)?
        if let trustedCAFile {
            #if canImport(CHalyardCurl)
                // A client hands its recorder its transport guarded: look at what sends.
                if ((transport as? GuardedTransport)?.base ?? transport) is CurlTransport {
                    own = GuardedTransport.wrapping(CurlTransport(trustedCAFile: trustedCAFile), logHandler: logHandler)
                }
            #endif
            if own == nil {
                warnings.append(
                    "the OTLP CA file is ignored: only Halyard's libcurl transport applies it, and the client uses "
                        + "another")
            }
        }
        let plan = OTLPUpload(
            url: url, headers: fields, encoding: encoding, compression: compression, timeout: timeout, transport: own)
        return (.success(plan), warnings)
    }

    /// The request body for `events`.
    package func encode(resource: OTLPLogsEncoder.Resource, events: [ExposureEvent]) -> [UInt8] {
        switch encoding {
        case .json: OTLPLogsEncoder.encode(resource: resource, events: events)
        case .protobuf: OTLPProtobufEncoder.encode(resource: resource, events: events)
        }
    }

    /// Whether an answer is read as protobuf: its `Content-Type` says protobuf, or it says
    /// nothing usable and the request was protobuf (an OTLP receiver answers in the request's
    /// encoding).
    func answerIsProtobuf(_ response: TransportResponse) -> Bool {
        let type =
            (response.header("Content-Type") ?? "").split(separator: ";").first?
            .trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        if type.hasSuffix("protobuf") { return true }
        if type.hasSuffix("json") { return false }
        return encoding == .protobuf
    }

    /// Classifies `response` (the OTLP rules, ``ExposureUploadOutcome/classifyOTLP``), reading a
    /// partial success in the answer's encoding; for a rejection also the receiver's
    /// `google.rpc.Status` message.
    package func classify(_ response: TransportResponse, wallNow: Date) -> (ExposureUploadOutcome, String?) {
        let protobuf = answerIsProtobuf(response)
        var outcome = ExposureUploadOutcome.classifyOTLP(
            status: response.status, retryAfterHeader: response.header("Retry-After"),
            body: protobuf ? Data() : response.body, wallNow: wallNow)
        if protobuf, outcome == .delivered, let partial = OTLPAnswer.partialSuccess(protobuf: response.body) {
            outcome = partial
        }
        guard case .rejected = outcome else { return (outcome, nil) }
        let message =
            protobuf
            ? OTLPAnswer.statusMessage(protobuf: response.body) : ExposureUploadOutcome.statusMessage(response.body)
        return (outcome, message)
    }
}
