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

        /// The easy handle and the set-up it shares with ``CurlExchange``.
        let handle: CurlEasyHandle
        /// The body, as it arrives.
        let chunks: AsyncThrowingStream<Data, any Error>
        private let continuation: AsyncThrowingStream<Data, any Error>.Continuation
        private let head = OneShot<Head>()
        private let ended = Locked(false)
        /// Whether the transfer was handed to ``CurlMulti/add(_:)`` (under the multi's queue lock).
        var submitted = false

        // Driver thread only.
        private(set) var deadline: ContinuousClock.Instant
        private let inactivity: Duration
        private var responseHead = CurlResponseHead(limit: CurlStreamTransfer.maxHeaderBytes)
        private var headDelivered = false
        private var failure: TransportError?
        /// The count of live transfers this one is in (its transport's), if any.
        private let live: Locked<Int>?

        /// Prepares the easy handle; throws when libcurl refuses an option. `live` counts this
        /// transfer until it is freed.
        init(
            _ request: TransportRequest, inactivity: Duration, trustedCAFile: String?, library: CurlLibrary,
            live: Locked<Int>? = nil, proxy: String? = nil
        ) throws(TransportError) {
            handle = try CurlEasyHandle(library: library)
            self.live = live
            live?.withLock { $0 += 1 }
            self.inactivity = max(inactivity, .milliseconds(1))
            deadline = ContinuousClock.now + max(request.timeout, .milliseconds(1))
            (chunks, continuation) = AsyncThrowingStream.makeStream(
                of: Data.self, bufferingPolicy: .bufferingOldest(Self.maxBufferedChunks))
            try handle.configure(
                url: request.url, trustedCAFile: trustedCAFile,
                headerLines: streamRequestHeaders(request.headers).map { CurlEasyOptions.headerLine($0.key, $0.value) },
                receiver: self, proxy: proxy)
            let options = handle.options
            let milliseconds = CurlEasyOptions.milliseconds(request.timeout)
            // Connecting is bounded by the head's timeout; the transfer as a whole is not.
            try options.setLong(CurlABI.connectTimeoutMilliseconds, milliseconds, "CONNECTTIMEOUT_MS")
            try options.setLong(CurlABI.timeoutMilliseconds, 0, "TIMEOUT_MS")
            try options.setLong(CurlABI.httpGet, 1, "HTTPGET")
        }

        deinit {
            live?.withLock { $0 -= 1 }
        }

        // MARK: - Callbacks (driver thread)

        /// One header line: at the end of the head, the head goes to the opener; `false` aborts
        /// the transfer (too many header bytes, or a non-2xx head, whose body is not read).
        func receiveHeader(_ line: UnsafeRawBufferPointer) -> Bool {
            if isFinished { return false }
            switch responseHead.receive(line) {
            case .overLimit:
                failure = .responseTooLarge(limit: responseHead.limit)
                return false
            case .end:
                // The end of a head; 1xx heads are followed by the real one.
                let status = responseHead.status
                if (100..<200).contains(status) { return true }
                headDelivered = true
                deadline = ContinuousClock.now + inactivity
                head.finish(.success(StreamHead(status: status, headers: responseHead.fields)))
                if !(200..<300).contains(status) {
                    // Not a stream: the head is the answer; the body is not read.
                    end(nil)
                    return false
                }
                return true
            case .statusLine, .field, .other:
                return true
            }
        }

        /// Body bytes: each chunk goes to the consumer as it arrives and moves the deadline.
        func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
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

        /// libcurl ended the transfer: before the head, the open fails; after it, the chunks end.
        func complete(_ code: Int32) {
            let error = failure ?? handle.error(for: code)
            if !headDelivered {
                fail(error ?? .network("the stream ended before its response head"))
            } else {
                end(error)
            }
        }

        /// The driver removed the transfer at its deadline: the head or the next byte was late.
        func expire() {
            if !headDelivered {
                fail(.timedOut)
            } else {
                end(.timedOut)
            }
        }

        // MARK: - Completion (any thread)

        /// Whether the chunks have ended.
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
            // The handler has run (or will never run): drop it, so that it does not keep this
            // transfer alive through the continuation it is stored in.
            continuation.onTermination = nil
        }

        /// Runs `action` when the consumer stops iterating or the chunks end; at once when they
        /// already ended (a non-2xx head ends them in the header callback, before the opener
        /// gets here). A handler stored on a finished continuation would never run, and the
        /// cycle transfer → continuation → handler → transfer would keep the easy handle
        /// forever.
        func onTermination(_ action: @escaping @Sendable () -> Void) {
            continuation.onTermination = { _ in action() }
            if isFinished {
                continuation.onTermination = nil
                action()
            }
        }
    }
#endif
