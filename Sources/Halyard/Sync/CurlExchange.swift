#if canImport(CCurl)
    import CCurl
    import Foundation

    /// One request on libcurl: its easy handle, the response as it arrives, and the one-time
    /// completion shared between the driver thread, the caller and cancellation.
    ///
    /// `@unchecked Sendable`: the response fields (`status`, `responseHeaders`, `body`, `inflater`,
    /// `failure`) are written only by the transfer callbacks and read only in ``complete(_:)``,
    /// all on the driver thread of ``CurlMulti``; the completion state is behind a lock.
    final class CurlExchange: @unchecked Sendable {
        typealias Outcome = Result<TransportResponse, TransportError>

        /// The easy handle (owned; cleaned up in `deinit`).
        let easy: UnsafeMutableRawPointer
        private let limit: Int
        private var headerList: UnsafeMutablePointer<curl_slist>?
        private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        private let completion = OneShot<Outcome>()

        // Driver thread only.
        private var responseHeaders: [String: String] = [:]
        private var body = Data()
        private var receivedBytes = 0
        private var inflater: GzipInflater?
        private var decodesGzip = false
        private var failure: TransportError?

        /// Prepares the easy handle for `request`; `nil` when libcurl is out of memory.
        init?(_ request: TransportRequest, trustedCAFile: String?) {
            guard let easy = curl_easy_init() else { return nil }
            self.easy = easy
            limit = max(request.maxResponseBytes, 0)
            errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
            configure(request, trustedCAFile: trustedCAFile)
        }

        deinit {
            curl_easy_cleanup(easy)
            curl_slist_free_all(headerList)
            errorBuffer.deallocate()
        }

        private func configure(_ request: TransportRequest, trustedCAFile: String?) {
            let context = Unmanaged.passUnretained(self).toOpaque()
            setLong(CURLOPT_NOSIGNAL, 1)
            request.url.absoluteString.withCString { setPointer(CURLOPT_URL, $0) }  // libcurl copies strings
            setPointer(CURLOPT_PROTOCOLS_STR, "http,https")
            setPointer(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
            setLong(CURLOPT_FOLLOWLOCATION, 1)
            setLong(CURLOPT_MAXREDIRS, 10)
            setLong(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
            setLong(CURLOPT_SSL_VERIFYPEER, 1)
            setLong(CURLOPT_SSL_VERIFYHOST, 2)
            if let trustedCAFile { setPointer(CURLOPT_CAINFO, trustedCAFile) }
            let milliseconds = max(
                request.timeout.components.seconds * 1000 + request.timeout.components.attoseconds
                    / 1_000_000_000_000_000,
                1)
            setLong(CURLOPT_TIMEOUT_MS, Int(clamping: milliseconds))
            setLong(CURLOPT_CONNECTTIMEOUT_MS, Int(clamping: milliseconds))
            setPointer(CURLOPT_ERRORBUFFER, errorBuffer)

            switch request.method.uppercased() {
            case "GET": setLong(CURLOPT_HTTPGET, 1)
            case "HEAD": setLong(CURLOPT_NOBODY, 1)
            default:
                if request.method.uppercased() != "POST" { setPointer(CURLOPT_CUSTOMREQUEST, request.method) }
                halyard_curl_easy_setopt_offset(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count))
                request.body.withUnsafeBytes { raw in
                    // COPYPOSTFIELDS copies the bytes now (size set above), so the body may go.
                    let empty: StaticString = ""
                    setPointer(CURLOPT_COPYPOSTFIELDS, raw.baseAddress ?? UnsafeRawPointer(empty.utf8Start))
                }
            }

            var lines: [String] = []
            var hasAcceptEncoding = false
            for (name, value) in request.headers {
                let trimmed = value.trimmingCharacters(in: .whitespaces)
                if name.lowercased() == "accept-encoding" { hasAcceptEncoding = true }
                // "Name;" is libcurl's spelling of a header with an empty value.
                lines.append(trimmed.isEmpty ? "\(name);" : "\(name): \(trimmed)")
            }
            if !hasAcceptEncoding { lines.append("Accept-Encoding: gzip") }
            lines.append("Expect:")  // no 100-continue round trip for large bodies
            for line in lines { headerList = curl_slist_append(headerList, line) }
            setPointer(CURLOPT_HTTPHEADER, headerList)

            halyard_curl_easy_setopt_callback(easy, CURLOPT_HEADERFUNCTION) { data, size, count, context in
                guard let data, let context else { return 0 }
                let exchange = Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue()
                let length = size * count
                return exchange.receiveHeader(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
            }
            setPointer(CURLOPT_HEADERDATA, context)
            halyard_curl_easy_setopt_callback(easy, CURLOPT_WRITEFUNCTION) { data, size, count, context in
                guard let context else { return 0 }
                let exchange = Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue()
                let length = size * count
                return exchange.receiveBody(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
            }
            setPointer(CURLOPT_WRITEDATA, context)
        }

        private func setLong(_ option: CURLoption, _ value: Int) {
            halyard_curl_easy_setopt_long(easy, option, value)
        }

        private func setPointer(_ option: CURLoption, _ value: UnsafeRawPointer?) {
            halyard_curl_easy_setopt_pointer(easy, option, value)
        }

        private func setPointer(_ option: CURLoption, _ value: String) {
            _ = value.withCString { halyard_curl_easy_setopt_pointer(easy, option, $0) }
        }

        // MARK: - Callbacks (driver thread)

        /// One header line; `false` aborts the transfer.
        private func receiveHeader(_ line: UnsafeRawBufferPointer) -> Bool {
            let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            if text.hasPrefix("HTTP/") {
                // A new response (after a 1xx or a redirect): forget the previous one's headers.
                responseHeaders = [:]
                decodesGzip = false
                return true
            }
            guard let colon = text.firstIndex(of: ":") else { return true }
            let name = String(text[..<colon]).trimmingCharacters(in: .whitespaces)
            let value = String(text[text.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty else { return true }
            let key = name.lowercased()
            if let existing = responseHeaders[key] {
                responseHeaders[key] = existing + ", " + value
            } else {
                responseHeaders[key] = value
            }
            switch key {
            case "content-length":
                if limit > 0, let length = Int(value), length > limit {
                    failure = .responseTooLarge(limit: limit)
                    return false
                }
            case "content-encoding":
                let codings = responseHeaders[key, default: ""].lowercased().split(separator: ",").map {
                    $0.trimmingCharacters(in: .whitespaces)
                }
                decodesGzip = codings == ["gzip"] || codings == ["x-gzip"]
            default: break
            }
            return true
        }

        /// Body bytes as they arrive; the limit holds on the received and on the decoded size.
        private func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
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
        func complete(_ code: CURLcode) {
            if let failure {
                fail(failure)
                return
            }
            switch code {
            case CURLE_OK:
                var status = 0
                halyard_curl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
                var decoded = body
                if let inflater {
                    do throws(GzipError) {
                        decoded = try inflater.finish()
                    } catch {
                        fail(.network("invalid gzip body"))
                        return
                    }
                }
                finish(.success(TransportResponse(status: status, headers: responseHeaders, body: decoded)))
            case CURLE_OPERATION_TIMEDOUT:
                fail(.timedOut)
            default:
                let detail = String(cString: errorBuffer)
                let summary = String(cString: curl_easy_strerror(code))
                fail(.network("curl \(code.rawValue): \(detail.isEmpty ? summary : detail)"))
            }
            body = Data()
            inflater = nil
        }

        // MARK: - Completion (any thread)

        /// Whether the exchange has its outcome.
        var isFinished: Bool { completion.isFinished }

        /// Installs the continuation; resumes it at once when the exchange already finished.
        func attach(_ continuation: CheckedContinuation<Outcome, Never>) { completion.attach(continuation) }

        /// Fails the exchange (once).
        func fail(_ error: TransportError) { finish(.failure(error)) }

        /// Sets the outcome once; returns whether this call set it.
        @discardableResult
        func finish(_ outcome: Outcome) -> Bool { completion.finish(outcome) }
    }
#endif
