#if canImport(CHalyardCurl)
    import CHalyardCurl
    import Foundation

    /// One request on libcurl: its easy handle, the response as it arrives, and the one-time
    /// completion shared between the driver thread, the caller and cancellation.
    ///
    /// `@unchecked Sendable`: the response fields (`responseHead`, `body`, `inflater`, `failure`)
    /// are written only by the transfer callbacks and read only in ``complete(_:)``, all on the
    /// driver thread of ``CurlMulti``; the completion state is behind a lock.
    final class CurlExchange: @unchecked Sendable {
        typealias Outcome = Result<TransportResponse, TransportError>

        /// The easy handle and the set-up it shares with ``CurlStreamTransfer``.
        let handle: CurlEasyHandle
        private let limit: Int
        private let completion = OneShot<Outcome>()
        /// When the request fails with ``TransportError/timedOut`` whatever libcurl does (enforced
        /// by the driver, ``CurlMulti``).
        let deadline: ContinuousClock.Instant
        /// Whether the exchange was handed to ``CurlMulti/add(_:)`` (under the multi's queue lock).
        var submitted = false

        // Driver thread only.
        private var responseHead: CurlResponseHead
        private var body = Data()
        private var receivedBytes = 0
        private var inflater: GzipInflater?
        private var decodesGzip = false
        private var failure: TransportError?

        /// Prepares the easy handle for `request`. Throws when libcurl is out of memory or refuses
        /// an option (never a weaker request than the one configured).
        /// `deadline`: when the whole request (every redirect of it) fails; *default* `timeout` from
        /// now. `backstop`: how long after the deadline libcurl's own timeout ends the transfer
        /// (`nil`: libcurl has none, only the driver's deadline holds — tests of that deadline).
        init(
            _ request: TransportRequest, trustedCAFile: String?, library: CurlLibrary, proxy: String? = nil,
            deadline: ContinuousClock.Instant? = nil, backstop: Duration? = .seconds(1)
        ) throws(TransportError) {
            handle = try CurlEasyHandle(library: library)
            limit = max(request.maxResponseBytes, 0)
            responseHead = CurlResponseHead(limit: max(request.maxResponseHeaderBytes, 0))
            self.deadline = deadline ?? ContinuousClock.now + max(request.timeout, .milliseconds(1))
            var lines = request.headers.map { CurlEasyOptions.headerLine($0.key, $0.value) }
            if !request.headers.keys.contains(where: { $0.lowercased() == "accept-encoding" }) {
                lines.append("Accept-Encoding: gzip")
            }
            lines.append("Expect:")  // no 100-continue round trip for large bodies
            try handle.configure(
                url: request.url, trustedCAFile: trustedCAFile, headerLines: lines, receiver: self, proxy: proxy)
            try configure(request, backstop: backstop)
        }

        /// The options of a request: libcurl's backstop timeouts, the method and the body.
        private func configure(_ request: TransportRequest, backstop: Duration?) throws(TransportError) {
            let options = handle.options
            // The deadline is the driver's (CurlMulti); libcurl's own timeouts are a backstop a little
            // after it, so the request ends even if the driver's timer were late.
            if let backstop {
                let milliseconds = CurlEasyOptions.milliseconds(max(deadline - ContinuousClock.now, .zero) + backstop)
                try options.setLong(CurlABI.timeoutMilliseconds, milliseconds, "TIMEOUT_MS")
                try options.setLong(CurlABI.connectTimeoutMilliseconds, milliseconds, "CONNECTTIMEOUT_MS")
            }

            switch request.method.uppercased() {
            case "GET": try options.setLong(CurlABI.httpGet, 1, "HTTPGET")
            case "HEAD": try options.setLong(CurlABI.noBody, 1, "NOBODY")
            default:
                if request.method.uppercased() != "POST" {
                    try options.setString(CurlABI.customRequest, request.method, "CUSTOMREQUEST")
                }
                try options.check(
                    hal_curl_easy_setopt_off_t(
                        handle.library.api, handle.easy, CurlABI.postFieldSizeLarge, Int64(request.body.count)),
                    "POSTFIELDSIZE_LARGE")
                let code = request.body.withUnsafeBytes { raw in
                    // COPYPOSTFIELDS copies the bytes now (size set above), so the body may go.
                    let empty: StaticString = ""
                    return hal_curl_easy_setopt_ptr(
                        handle.library.api, handle.easy, CurlABI.copyPostFields,
                        raw.baseAddress ?? UnsafeRawPointer(empty.utf8Start))
                }
                try options.check(code, "COPYPOSTFIELDS")
            }
        }

        // MARK: - Callbacks (driver thread)

        /// One header line; `false` aborts the transfer.
        func receiveHeader(_ line: UnsafeRawBufferPointer) -> Bool {
            if isFinished { return false }  // cancelled or timed out: stop the transfer
            switch responseHead.receive(line) {
            case .overLimit:
                failure = .responseTooLarge(limit: responseHead.limit)
                return false
            case .statusLine:
                // A new response (after a 1xx): the previous one's coding goes with its headers.
                decodesGzip = false
            case .field(name: "content-length", let value):
                if limit > 0, let length = Int(value), length > limit {
                    failure = .responseTooLarge(limit: limit)
                    return false
                }
            case .field(name: "content-encoding", _):
                let codings = responseHead.fields["content-encoding", default: ""].lowercased().split(separator: ",")
                    .map { $0.trimmingCharacters(in: .whitespaces) }
                decodesGzip = codings == ["gzip"] || codings == ["x-gzip"]
            case .field, .end, .other: break
            }
            return true
        }

        /// Body bytes as they arrive; the limit holds on the received and on the decoded size.
        func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
            if isFinished { return false }  // cancelled or timed out: stop the transfer
            receivedBytes += bytes.count
            if limit > 0, receivedBytes > limit {
                failure = .responseTooLarge(limit: limit)
                return false
            }
            guard decodesGzip else {
                body.append(contentsOf: bytes)
                return true
            }
            let inflater = self.inflater ?? GzipInflater(limit: limit)
            self.inflater = inflater
            do throws(GzipError) {
                try inflater.append(bytes)
                return true
            } catch .tooLarge {
                failure = .responseTooLarge(limit: limit)
            } catch {
                failure = .network("invalid gzip body")
            }
            return false
        }

        /// Completes the exchange with libcurl's result (driver thread).
        func complete(_ code: Int32) {
            if let failure {
                fail(failure)
                return
            }
            if let error = handle.error(for: code) {
                fail(error)
            } else {
                var status = 0
                _ = hal_curl_easy_getinfo_long(handle.library.api, handle.easy, CurlABI.infoResponseCode, &status)
                var decoded = body
                if let inflater {
                    do throws(GzipError) {
                        decoded = try inflater.finish()
                    } catch {
                        fail(.network("invalid gzip body"))
                        return
                    }
                }
                finish(.success(TransportResponse(status: status, headers: responseHead.fields, body: decoded)))
            }
            body = Data()
            inflater = nil
        }

        // MARK: - Completion (any thread)

        /// Whether the exchange has its outcome.
        var isFinished: Bool { completion.isFinished }

        /// Installs the continuation; resumes it at once when the exchange already finished.
        func attach(_ continuation: CheckedContinuation<Outcome, Never>) { completion.attach(continuation) }

        /// The driver removed the transfer at its deadline.
        func expire() {
            fail(.timedOut)
            body = Data()
            inflater = nil
        }

        /// Fails the exchange (once).
        func fail(_ error: TransportError) { finish(.failure(error)) }

        /// Sets the outcome once; returns whether this call set it.
        @discardableResult
        func finish(_ outcome: Outcome) -> Bool { completion.finish(outcome) }
    }
#endif
