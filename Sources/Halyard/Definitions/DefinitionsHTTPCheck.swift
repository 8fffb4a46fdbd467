import Foundation

/// One check of an HTTP definitions source (docs/definitions.md, "Sources"): the request (a
/// `GET` with the source's headers and `If-None-Match` once an `ETag` was served) and what its
/// answer means. The feed sends it through ``GuardedTransport`` (the request's deadline).
enum DefinitionsHTTPCheck {
    /// What an answer meant.
    enum Finding: Sendable {
        /// 200: the document and its `ETag` (the validator).
        case document(Data, etag: String?)
        /// 304: nothing new.
        case notModified
        /// Any other status or a transport error, with the `Retry-After` delay (429 and 5xx).
        case failed(DefinitionsSourceError, retryAfter: Duration?)
    }

    /// Checks that `url` and `headers` may be used: https, or http to a loopback host (SPEC §5);
    /// header names that are tokens and values with no control character.
    static func validate(url: URL, headers: [String: String]) throws(DefinitionsSourceError) {
        let scheme = url.scheme?.lowercased() ?? ""
        guard scheme == "https" || scheme == "http", let host = url.host, !host.isEmpty else {
            throw .unusable(reason: "the URL must be http(s) with a host")
        }
        if scheme == "http" && !LoopbackHost.contains(host) {
            throw .unusable(reason: "plain http is allowed to a loopback host only, not \(host)")
        }
        if let name = HeaderValue.firstUnsafeField(headers) {
            throw .unusable(reason: "header \(HeaderValue.shown(name)) may not be sent")
        }
    }

    /// The request of one check.
    static func request(
        url: URL, headers: [String: String], validator: String?, timeout: Duration
    ) -> TransportRequest {
        var fields = headers
        fields["Accept"] = "application/json"
        if let validator { fields["If-None-Match"] = validator }
        return TransportRequest(
            method: "GET", url: url, headers: fields, timeout: timeout,
            maxResponseBytes: FlagDefinitions.parsingLimits.maxInputBytes)
    }

    /// What `result` means; `now` reads an HTTP-date `Retry-After`.
    static func classify(_ result: Result<TransportResponse, TransportError>, now: Date) -> Finding {
        switch result {
        case .failure(.responseTooLarge):
            return .failed(.tooLarge(limit: FlagDefinitions.parsingLimits.maxInputBytes), retryAfter: nil)
        case .failure(let error):
            return .failed(.transport(error), retryAfter: nil)
        case .success(let response):
            switch response.status {
            case 200:
                let etag = response.header("ETag").flatMap { $0.isEmpty || !HeaderValue.isClean($0) ? nil : $0 }
                return .document(response.body, etag: etag)
            case 304:
                return .notModified
            default:
                let retryAfter =
                    response.status == 429 || (500...599).contains(response.status)
                    ? response.header("Retry-After").flatMap { RetryAfter.parse($0, now: now) } : nil
                return .failed(.status(response.status), retryAfter: retryAfter)
            }
        }
    }
}
