import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension URLSessionTransport: StreamingTransport {
    /// Opens an event stream on this transport's session (a data task with its own delegate
    /// handling, `URLSessionStream`); §5's redirect rule applied by `RedirectPolicy.openStream`.
    public func openStream(_ request: TransportRequest, inactivityTimeout: Duration) async throws
        -> TransportStream
    {
        if let name = HeaderValue.firstUnsafeField(request.headers) { throw HeaderValue.refusal(name) }  // SPEC §5
        return try await RedirectPolicy.openStream(request) { hop in
            try await openOnce(hop, inactivityTimeout: inactivityTimeout)
        }
    }

    private func openOnce(_ request: TransportRequest, inactivityTimeout: Duration) async throws -> TransportStream {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = "GET"
        for (name, value) in streamRequestHeaders(request.headers) {
            urlRequest.setValue(value, forHTTPHeaderField: name)
        }
        urlRequest.cachePolicy = .reloadIgnoringLocalCacheData
        // URLSession's own (idle) timeout is only a backstop behind the stream's timers.
        let backstop = max(request.timeout, inactivityTimeout) + .seconds(5)
        urlRequest.timeoutInterval = Double(backstop.saturatingSeconds) + 1
        let task = session.dataTask(with: urlRequest)
        let stream = URLSessionStream(inactivity: inactivityTimeout)
        delegate.streams.withLock { $0[task.taskIdentifier] = stream }
        let delegate = self.delegate
        stream.onTermination {
            stream.cancel()
            _ = delegate.streams.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        }
        let head = await withTaskCancellationHandler {
            stream.start(task, headTimeout: max(request.timeout, .milliseconds(1)))
            return await stream.waitForHead()
        } onCancel: {
            stream.cancel()
        }
        let fields: StreamHead
        do {
            fields = try head.get()
        } catch {
            stream.cancel()
            throw error
        }
        return TransportStream(status: fields.status, headers: fields.headers, chunks: stream.chunks) {
            stream.cancel()
        }
    }
}
