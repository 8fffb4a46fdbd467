#if canImport(CHalyardCurl)
    import Foundation

    /// The default ``FlagTransport`` on Linux: libcurl, with one `curl_multi` driven by one thread
    /// for all the requests of the process (see `docs/protocol.md`, "Transports").
    ///
    /// - Connections are reused across requests and clients (one connection cache per process);
    ///   HTTP/2 is used when a TLS server offers it. TLS peer and host verification are on.
    /// - ``TransportRequest/timeout`` is a total deadline (connect to last byte, redirects
    ///   included), enforced by the driver thread itself whatever libcurl does →
    ///   ``TransportError/timedOut``. Task cancellation removes the transfer at once →
    ///   ``TransportError/cancelled``.
    /// - `Accept-Encoding: gzip` is sent unless the request names its own; a
    ///   `Content-Encoding: gzip` body is inflated as it arrives, and
    ///   ``TransportRequest/maxResponseBytes`` holds on the received and on the inflated size as
    ///   bytes arrive (a `Content-Length` above it is refused before any body byte) →
    ///   ``TransportError/responseTooLarge(limit:)``. Nothing is ever inflated past the limit.
    /// - Response headers are returned by lowercased name (repeated fields joined with `, `); more
    ///   than ``TransportRequest/maxResponseHeaderBytes`` of them →
    ///   ``TransportError/responseTooLarge(limit:)``, as they arrive.
    /// - Redirects follow ``RedirectPolicy``: same origin only, at most 3, never https → http,
    ///   else ``TransportError/redirectRefused(origin:reason:)`` with nothing sent to the target;
    ///   307/308 keep the method and body. libcurl itself never follows one.
    ///
    /// The transport itself holds no connection or thread: creating many is cheap, and the
    /// shared driver thread exits when no request has been in flight for a second.
    ///
    /// libcurl is loaded at run time (`libcurl.so.4`, Debian/Ubuntu package `libcurl4`); when it
    /// cannot be loaded or is too old, ``isAvailable`` is `false` and every request fails with
    /// ``TransportError/network(_:)`` saying why. The default transport checks this and falls back
    /// to ``URLSessionTransport`` instead.
    public final class CurlTransport: FlagTransport, Sendable {
        /// A PEM file of certificate authorities to trust instead of the system's, or `nil`.
        public let trustedCAFile: String?
        private let multi: Result<CurlMulti, CurlUnavailable>
        /// An explicit proxy for every transfer (tests), or nil (libcurl's `https_proxy` rules).
        let proxy: String?
        /// How many of this transport's stream transfers are alive (their easy handles not yet
        /// cleaned up): back to zero once every stream it opened is over, whatever its status.
        let liveStreamTransfers = Locked(0)

        /// Whether libcurl could be loaded in this process (a supported version, `curl_multi_init`
        /// worked); when `false`, ``send(_:)`` fails every request.
        public static var isAvailable: Bool {
            if case .success = CurlMulti.shared { return true }
            return false
        }

        /// Creates a transport.
        /// - Parameter trustedCAFile: a PEM file of certificate authorities to trust *instead of*
        ///   the system store (for a private control plane or a test server with its own CA);
        ///   `nil` (the default) trusts the system store. Verification is never turned off.
        public init(trustedCAFile: String? = nil) {
            self.trustedCAFile = trustedCAFile
            proxy = nil
            multi = CurlMulti.shared
        }

        /// A transport whose transfers go through `proxy` (`CURLOPT_PROXY`, e.g.
        /// `http://127.0.0.1:3128`): the tests' loopback CONNECT proxy, without setting the
        /// process-wide `https_proxy` that users set.
        init(trustedCAFile: String?, proxy: String?) {
            self.trustedCAFile = trustedCAFile
            self.proxy = proxy
            multi = CurlMulti.shared
        }

        /// A transport on its own multi handle (tests).
        init(multi: CurlMulti, trustedCAFile: String? = nil) {
            self.trustedCAFile = trustedCAFile
            proxy = nil
            self.multi = .success(multi)
        }

        /// Sends one request; see the type's documentation for the error mapping.
        public func send(_ request: TransportRequest) async throws -> TransportResponse {
            if let name = HeaderValue.firstUnsafeField(request.headers) { throw HeaderValue.refusal(name) }  // SPEC §5
            let multi: CurlMulti
            switch self.multi {
            case .success(let shared): multi = shared
            case .failure(let why): throw TransportError.network("libcurl is not available: \(why.reason)")
            }
            // One deadline for the request and every redirect it follows (RedirectPolicy.send).
            return try await RedirectPolicy.send(request) { hop, deadline in
                try await transfer(hop, deadline: deadline, on: multi)
            }
        }

        private func transfer(
            _ request: TransportRequest, deadline: ContinuousClock.Instant, on multi: CurlMulti
        ) async throws -> TransportResponse {
            if Task.isCancelled { throw TransportError.cancelled }
            let exchange = try CurlExchange(
                request, trustedCAFile: trustedCAFile, library: multi.library, proxy: proxy, deadline: deadline,
                backstop: multi.libcurlBackstop)
            let outcome = await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    exchange.attach(continuation)
                    if !exchange.isFinished { multi.add(exchange) }
                }
            } onCancel: {
                if exchange.finish(.failure(.cancelled)) { multi.remove(exchange) }
            }
            return try outcome.get()
        }

        /// The multi handle, or the reason libcurl cannot be used (event streams).
        func multiOrThrow() throws(TransportError) -> CurlMulti {
            switch multi {
            case .success(let shared): return shared
            case .failure(let why): throw TransportError.network("libcurl is not available: \(why.reason)")
            }
        }
    }
#endif
