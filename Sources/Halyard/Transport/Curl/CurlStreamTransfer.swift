#if canImport(CHalyardCurl)
    import CHalyardCurl
    import Foundation

    /// One event stream on libcurl: a `GET` held open on the shared ``CurlMulti``, its head handed
    /// to the opener once it arrived, then its body chunk by chunk (SPEC §14).
    ///
    /// - No total timeout (`CURLOPT_TIMEOUT` is not set): ``TransportRequest/timeout`` bounds the
    ///   connect and the wait for the head, then the deadline moves to "last byte +
    ///   inactivity timeout" on every byte; the driver enforces it (``CurlMulti`` removes the
    ///   handle at its deadline) → ``TransportError/timedOut``.
    /// - Redirects are not followed here (``RedirectPolicy/openStream(_:open:)`` applies §5's rule).
    /// - Chunks are yielded from the write callback on the driver thread, with no lock held. At
    ///   most ``maxBufferedChunks`` wait for the consumer; more fail the stream with
    ///   ``TransportError/responseTooLarge(limit:)`` rather than grow without bound.
    /// - Response headers are bounded (64 KiB in all, §5).
    ///
    /// `@unchecked Sendable`: the response fields are touched by the transfer callbacks and
    /// ``complete(_:)``/``expire()`` only, all on the driver thread; the end state is behind a lock
    /// and the continuation is thread-safe.
    final class CurlStreamTransfer: CurlTransfer, @unchecked Sendable {
        typealias Head = Result<StreamHead, TransportError>

        /// The most chunks buffered for a consumer that does not keep up.
        static let maxBufferedChunks = 256
        /// The most response-header bytes accepted.
        static let maxHeaderBytes = 64 << 10

        let easy: UnsafeMutableRawPointer
        let library: CurlLibrary
        /// The body, as it arrives.
        let chunks: AsyncThrowingStream<Data, any Error>
        private let continuation: AsyncThrowingStream<Data, any Error>.Continuation
        private let head = OneShot<Head>()
        private let ended = Locked(false)
        private var headerList: UnsafeMutableRawPointer?
        private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: CurlABI.errorSize + 1)
        var submitted = false

        // Driver thread only.
        private(set) var deadline: ContinuousClock.Instant
        private let inactivity: Duration
        private var status = 0
        private var headers: [String: String] = [:]
        private var headerBytes = 0
        private var headDelivered = false
        private var failure: TransportError?

        /// Prepares the easy handle; throws when libcurl refuses an option.
        init(_ request: TransportRequest, inactivity: Duration, trustedCAFile: String?, library: CurlLibrary)
            throws(TransportError)
        {
            guard let easy = hal_curl_easy_init(library.api) else { throw .network("curl_easy_init failed") }
            self.easy = easy
            self.library = library
            self.inactivity = max(inactivity, .milliseconds(1))
            deadline = ContinuousClock.now + max(request.timeout, .milliseconds(1))
            (chunks, continuation) = AsyncThrowingStream.makeStream(
                of: Data.self, bufferingPolicy: .bufferingOldest(Self.maxBufferedChunks))
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
            try options.setPolicy(url: request.url, trustedCAFile: trustedCAFile)
            let milliseconds = CurlEasyOptions.milliseconds(request.timeout)
            // Connecting is bounded by the head's timeout; the transfer as a whole is not.
            try options.setLong(CurlABI.connectTimeoutMilliseconds, milliseconds, "CONNECTTIMEOUT_MS")
            try options.setLong(CurlABI.timeoutMilliseconds, 0, "TIMEOUT_MS")
            try options.setPointer(CurlABI.errorBuffer, errorBuffer, "ERRORBUFFER")
            try options.setLong(CurlABI.httpGet, 1, "HTTPGET")

            try options.setHeaders(
                streamRequestHeaders(request.headers).map { CurlEasyOptions.headerLine($0.key, $0.value) },
                into: &headerList)

            let onHeader: hal_curl_data_callback = { data, size, count, context in
                guard let data, let context else { return 0 }
                let transfer = Unmanaged<CurlStreamTransfer>.fromOpaque(context).takeUnretainedValue()
                let length = size * count
                return transfer.receiveHeader(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
            }
            try options.check(
                hal_curl_easy_setopt_data_callback(library.api, easy, CurlABI.headerFunction, onHeader),
                "HEADERFUNCTION")
            try options.setPointer(CurlABI.headerData, context, "HEADERDATA")
            let onBody: hal_curl_data_callback = { data, size, count, context in
                guard let context else { return 0 }
                let transfer = Unmanaged<CurlStreamTransfer>.fromOpaque(context).takeUnretainedValue()
                let length = size * count
                return transfer.receiveBody(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
            }
            try options.check(
                hal_curl_easy_setopt_data_callback(library.api, easy, CurlABI.writeFunction, onBody), "WRITEFUNCTION")
            try options.setPointer(CurlABI.writeData, context, "WRITEDATA")
        }

        private var options: CurlEasyOptions { CurlEasyOptions(library: library, easy: easy) }

        // MARK: - Callbacks (driver thread)

        private func receiveHeader(_ line: UnsafeRawBufferPointer) -> Bool {
            if isFinished { return false }
            headerBytes += line.count
            guard headerBytes <= Self.maxHeaderBytes else {
                failure = .responseTooLarge(limit: Self.maxHeaderBytes)
                return false
            }
            let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            if text.hasPrefix("HTTP/") {
                // A new response (after a 1xx): its status, and none of the previous headers.
                let parts = text.split(separator: " ", maxSplits: 2)
                status = parts.count >= 2 ? Int(parts[1]) ?? 0 : 0
                headers = [:]
                return true
            }
            if text.isEmpty {
                // The end of a head; 1xx heads are followed by the real one.
                if (100..<200).contains(status) { return true }
                headDelivered = true
                deadline = ContinuousClock.now + inactivity
                head.finish(.success(StreamHead(status: status, headers: headers)))
                if !(200..<300).contains(status) {
                    // Not a stream: the head is the answer; the body is not read.
                    end(nil)
                    return false
                }
                return true
            }
            guard let colon = text.firstIndex(of: ":") else { return true }
            let name = String(text[..<colon]).trimmingCharacters(in: .whitespaces).lowercased()
            let value = String(text[text.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty else { return true }
            headers[name] = headers[name].map { $0 + ", " + value } ?? value
            return true
        }

        private func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
            if isFinished || !headDelivered { return false }
            deadline = ContinuousClock.now + inactivity
            guard !bytes.isEmpty else { return true }
            switch continuation.yield(Data(bytes)) {
            case .enqueued: return true
            case .dropped:
                end(.responseTooLarge(limit: Self.maxBufferedChunks))
                return false
            case .terminated:
                end(nil)
                return false
            @unknown default: return true
            }
        }

        func complete(_ code: Int32) {
            let error: TransportError?
            if let failure {
                error = failure
            } else {
                switch code {
                case CurlABI.ok: error = nil
                case CurlABI.operationTimedOut: error = .timedOut
                default:
                    let detail = String(cString: errorBuffer)
                    error = .network("curl \(code): \(detail.isEmpty ? library.describe(code) : detail)")
                }
            }
            if !headDelivered {
                fail(error ?? .network("the stream ended before its response head"))
            } else {
                end(error)
            }
        }

        func expire() {
            if !headDelivered {
                fail(.timedOut)
            } else {
                end(.timedOut)
            }
        }

        // MARK: - Completion (any thread)

        var isFinished: Bool { ended.value }

        /// Installs the opener's continuation for the head.
        func attachHead(_ continuation: CheckedContinuation<Head, Never>) { head.attach(continuation) }

        /// Fails the open (before the head) and ends the stream.
        func fail(_ error: TransportError) {
            head.finish(.failure(error))
            end(error)
        }

        /// Closes the stream (cancellation): the chunks end without an error.
        func close() {
            head.finish(.failure(.cancelled))
            end(nil)
        }

        /// Ends the chunks once, with `error` or cleanly.
        private func end(_ error: TransportError?) {
            let first = ended.withLock { done -> Bool in
                defer { done = true }
                return !done
            }
            guard first else { return }
            if let error {
                continuation.finish(throwing: error)
            } else {
                continuation.finish()
            }
        }

        /// Runs `action` when the consumer stops iterating (or the chunks end).
        func onTermination(_ action: @escaping @Sendable () -> Void) {
            continuation.onTermination = { _ in action() }
        }
    }
#endif
