#if canImport(CHalyardCurl)
    import Foundation

    extension CurlTransport: StreamingTransport {
        /// Opens an event stream: one more easy handle on the shared multi (see
        /// `CurlStreamTransfer`), §5's redirect rule applied by `RedirectPolicy.openStream`.
        public func openStream(_ request: TransportRequest, inactivityTimeout: Duration) async throws
            -> TransportStream
        {
            if let name = HeaderValue.firstUnsafeField(request.headers) { throw HeaderValue.refusal(name) }  // SPEC §5
            return try await RedirectPolicy.openStream(request) { hop in
                try await openOnce(hop, inactivityTimeout: inactivityTimeout)
            }
        }

        private func openOnce(_ request: TransportRequest, inactivityTimeout: Duration) async throws
            -> TransportStream
        {
            let multi = try multiOrThrow()
            var get = request
            get.method = "GET"
            let transfer = try CurlStreamTransfer(
                get, inactivity: inactivityTimeout, trustedCAFile: trustedCAFile, library: multi.library,
                live: liveStreamTransfers, proxy: proxy)
            let head = await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    transfer.attachHead(continuation)
                    if !transfer.isFinished { multi.add(transfer) }
                }
            } onCancel: {
                transfer.close()
                multi.remove(transfer)
            }
            let fields: StreamHead
            do {
                fields = try head.get()
            } catch {
                multi.remove(transfer)
                throw error
            }
            transfer.onTermination { [multi] in
                transfer.close()
                multi.remove(transfer)
            }
            if transfer.isFinished { multi.remove(transfer) }
            return TransportStream(status: fields.status, headers: fields.headers, chunks: transfer.chunks) {
                [multi] in
                transfer.close()
                multi.remove(transfer)
            }
        }
    }
#endif
