#if canImport(CHalyardCurl)
    import CHalyardCurl
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
        /// The libcurl the handle belongs to.
        let library: CurlLibrary
        private let limit: Int
        private var headerList: UnsafeMutableRawPointer?
        private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: CurlABI.errorSize + 1)
        private let completion = OneShot<Outcome>()
        /// When the request fails with ``TransportError/timedOut`` whatever libcurl does (enforced
        /// by the driver, ``CurlMulti``).
        let deadline: ContinuousClock.Instant
        /// Whether the exchange was handed to ``CurlMulti/add(_:)`` (under the multi's queue lock).
        var submitted = false

        // Driver thread only.
        private var responseHeaders: [String: String] = [:]
        private var body = Data()
        private var receivedBytes = 0
        private var inflater: GzipInflater?
        private var decodesGzip = false
        private var failure: TransportError?

        /// Prepares the easy handle for `request`. Throws when libcurl is out of memory or refuses
        /// an option (never a weaker request than the one configured).
        init(_ request: TransportRequest, trustedCAFile: String?, library: CurlLibrary) throws(TransportError) {
            guard let easy = hal_curl_easy_init(library.api) else { throw .network("curl_easy_init failed") }
            self.easy = easy
            self.library = library
            limit = max(request.maxResponseBytes, 0)
            deadline = ContinuousClock.now + max(request.timeout, .milliseconds(1))
            errorBuffer.initialize(repeating: 0, count: CurlABI.errorSize + 1)
            try configure(request, trustedCAFile: trustedCAFile)
        }

        deinit {
            hal_curl_easy_cleanup(library.api, easy)
            hal_curl_slist_free_all(library.api, headerList)
            errorBuffer.deallocate()
        }

        private func configure(_ request: TransportRequest, trustedCAFile: String?) throws(TransportError) {
            let context = Unmanaged.passUnretained(self).toOpaque()
            try setLong(CurlABI.noSignal, 1, "NOSIGNAL")
            try setString(CurlABI.url, request.url.absoluteString, "URL")  // libcurl copies strings
            if library.hasProtocolsString {
                try setString(CurlABI.protocolsString, "http,https", "PROTOCOLS_STR")
                try setString(CurlABI.redirectProtocolsString, "http,https", "REDIR_PROTOCOLS_STR")
            } else {
                try setLong(CurlABI.protocols, CurlABI.protoHTTPAndHTTPS, "PROTOCOLS")
                try setLong(CurlABI.redirectProtocols, CurlABI.protoHTTPAndHTTPS, "REDIR_PROTOCOLS")
            }
            try setLong(CurlABI.followLocation, 1, "FOLLOWLOCATION")
            try setLong(CurlABI.maxRedirects, 10, "MAXREDIRS")
            // HTTP/2 is a preference, not a guard: a libcurl built without it refuses this option
            // (CURLE_UNSUPPORTED_PROTOCOL) and speaks HTTP/1.1, which is as safe.
            _ = hal_curl_easy_setopt_long(library.api, easy, CurlABI.httpVersion, CurlABI.httpVersion2TLS)
            try setLong(CurlABI.sslVerifyPeer, 1, "SSL_VERIFYPEER")
            try setLong(CurlABI.sslVerifyHost, 2, "SSL_VERIFYHOST")
            if let trustedCAFile { try setString(CurlABI.caInfo, trustedCAFile, "CAINFO") }
            let milliseconds = max(
                request.timeout.components.seconds * 1000 + request.timeout.components.attoseconds
                    / 1_000_000_000_000_000,
                1)
            try setLong(CurlABI.timeoutMilliseconds, Int(clamping: milliseconds), "TIMEOUT_MS")
            try setLong(CurlABI.connectTimeoutMilliseconds, Int(clamping: milliseconds), "CONNECTTIMEOUT_MS")
            try setPointer(CurlABI.errorBuffer, errorBuffer, "ERRORBUFFER")

            switch request.method.uppercased() {
            case "GET": try setLong(CurlABI.httpGet, 1, "HTTPGET")
            case "HEAD": try setLong(CurlABI.noBody, 1, "NOBODY")
            default:
                if request.method.uppercased() != "POST" {
                    try setString(CurlABI.customRequest, request.method, "CUSTOMREQUEST")
                }
                try check(
                    hal_curl_easy_setopt_off_t(
                        library.api, easy, CurlABI.postFieldSizeLarge, Int64(request.body.count)),
                    "POSTFIELDSIZE_LARGE")
                let code = request.body.withUnsafeBytes { raw in
                    // COPYPOSTFIELDS copies the bytes now (size set above), so the body may go.
                    let empty: StaticString = ""
                    return hal_curl_easy_setopt_ptr(
                        library.api, easy, CurlABI.copyPostFields, raw.baseAddress ?? UnsafeRawPointer(empty.utf8Start))
                }
                try check(code, "COPYPOSTFIELDS")
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
            for line in lines {
                guard let list = hal_curl_slist_append(library.api, headerList, line) else {
                    throw .network("curl_slist_append failed")
                }
                headerList = list
            }
            try setPointer(CurlABI.httpHeader, headerList, "HTTPHEADER")

            let onHeader: hal_curl_data_callback = { data, size, count, context in
                guard let data, let context else { return 0 }
                let exchange = Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue()
                let length = size * count
                return exchange.receiveHeader(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
            }
            try check(
                hal_curl_easy_setopt_data_callback(library.api, easy, CurlABI.headerFunction, onHeader),
                "HEADERFUNCTION")
            try setPointer(CurlABI.headerData, context, "HEADERDATA")
            let onBody: hal_curl_data_callback = { data, size, count, context in
                guard let context else { return 0 }
                let exchange = Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue()
                let length = size * count
                return exchange.receiveBody(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
            }
            try check(
                hal_curl_easy_setopt_data_callback(library.api, easy, CurlABI.writeFunction, onBody), "WRITEFUNCTION")
            try setPointer(CurlABI.writeData, context, "WRITEDATA")
        }

        /// A refused option fails the request: Halyard never sends a request weaker than the one it
        /// configured (no protocol restriction, no TLS verification, no timeout).
        private func check(_ code: Int32, _ name: String) throws(TransportError) {
            guard code == CurlABI.ok else {
                throw .network("libcurl \(library.version) refused CURLOPT_\(name): \(library.describe(code))")
            }
        }

        private func setLong(_ option: Int32, _ value: Int, _ name: String) throws(TransportError) {
            try check(hal_curl_easy_setopt_long(library.api, easy, option, value), name)
        }

        private func setPointer(_ option: Int32, _ value: UnsafeRawPointer?, _ name: String) throws(TransportError) {
            try check(hal_curl_easy_setopt_ptr(library.api, easy, option, value), name)
        }

        private func setString(_ option: Int32, _ value: String, _ name: String) throws(TransportError) {
            let code = value.withCString { hal_curl_easy_setopt_ptr(library.api, easy, option, $0) }
            try check(code, name)
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
        func complete(_ code: Int32) {
            if let failure {
                fail(failure)
                return
            }
            switch code {
            case CurlABI.ok:
                var status = 0
                _ = hal_curl_easy_getinfo_long(library.api, easy, CurlABI.infoResponseCode, &status)
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
            case CurlABI.operationTimedOut:
                fail(.timedOut)
            default:
                let detail = String(cString: errorBuffer)
                fail(.network("curl \(code): \(detail.isEmpty ? library.describe(code) : detail)"))
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
