import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The default ``FlagTransport``: one ephemeral `URLSession` (no URL cache, no cookies), a total
/// deadline per request, and a response size limit enforced while the body streams in (a
/// `Content-Length` above the limit is refused before any body byte is read).
///
/// Failures map to ``TransportError``: the deadline → ``TransportError/timedOut``, a body above
/// ``TransportRequest/maxResponseBytes`` (compressed or decompressed) →
/// ``TransportError/responseTooLarge(limit:)``, anything else without a response →
/// ``TransportError/network(_:)``. Gzip bodies the system did not decode are inflated here.
/// Response headers above ``TransportRequest/maxResponseHeaderBytes`` →
/// ``TransportError/responseTooLarge(limit:)`` (checked once URLSession has them, which buffers
/// them itself: the deadline bounds a server that never ends its headers). Redirects follow
/// ``RedirectPolicy`` (same origin, at most 3, never https → http, 307/308 keep method and body)
/// → else ``TransportError/redirectRefused(origin:reason:)``.
public final class URLSessionTransport: FlagTransport, Sendable {
    let session: URLSession
    let delegate: SessionDelegate

    /// Creates a transport with its own ephemeral session.
    public init() {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        let delegate = SessionDelegate()
        self.delegate = delegate
        // FoundationNetworking runs curl_global_init here: never at once with Halyard's own.
        session = LibcurlGlobalInit.serialized {
            URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        }
    }

    deinit {
        session.invalidateAndCancel()
    }

    /// Sends one request; see the type's documentation for the error mapping.
    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        if let name = HeaderValue.firstUnsafeField(request.headers) { throw HeaderValue.refusal(name) }  // SPEC §5
        // URLSession never follows a redirect itself (the delegate declines every one: on Linux
        // it would re-send a 307/308 without its body and a cross-origin one with the key).
        // RedirectPolicy.send applies §5's rule, as for CurlTransport, within one deadline; each
        // hop gets what is left of it.
        return try await RedirectPolicy.send(request) { hop, deadline in
            let left = deadline - ContinuousClock.now
            guard left > .zero else { throw TransportError.timedOut }
            return try await transfer(hop, timeout: left)
        }
    }

    private func transfer(_ request: TransportRequest, timeout: Duration) async throws -> TransportResponse {
        var urlRequest = Self.urlRequest(request)
        let seconds = max(timeout.fractionalSeconds, 0.001)
        urlRequest.timeoutInterval = seconds.rounded(.up) + 1
        let limit = max(request.maxResponseBytes, 0)

        let task = session.dataTask(with: urlRequest)
        let exchange = Exchange(request)
        let result: Result<(HTTPURLResponse, Data), TransportError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                exchange.attach(continuation)
                delegate.register(task: task, exchange: exchange)
                task.resume()
                DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [weak task] in
                    if exchange.finish(.failure(.timedOut)) { task?.cancel() }
                }
            }
        } onCancel: {
            if exchange.finish(.failure(.cancelled)) { task.cancel() }
        }
        delegate.unregister(task: task)
        let (response, data) = try result.get()
        var headers: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name] = value }
        }
        var body = data
        let encoding = headers.first { $0.key.lowercased() == "content-encoding" }?.value.lowercased()
        if encoding?.contains("gzip") == true, body.count >= 2, body[body.startIndex] == 0x1f,
            body[body.startIndex + 1] == 0x8b
        {
            // One bounded pass: it stops at the limit and says why it failed.
            do {
                body = try Gzip.inflate(body, limit: limit)
            } catch .tooLarge {
                throw TransportError.responseTooLarge(limit: limit)
            } catch {
                throw TransportError.network("invalid gzip body")
            }
        }
        return TransportResponse(status: response.statusCode, headers: headers, body: body)
    }

    /// The `URLRequest` for `request` (the first one, and each redirect followed).
    static func urlRequest(_ request: TransportRequest) -> URLRequest {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        urlRequest.httpBody = request.body.isEmpty && request.method.uppercased() == "GET" ? nil : request.body
        urlRequest.cachePolicy = .reloadIgnoringLocalCacheData
        let seconds = max(request.timeout.fractionalSeconds, 0.001)
        // Our own deadline in `send` enforces the total timeout precisely; URLSession's (idle)
        // timeout is a backstop only: on Linux it works in whole seconds and 0 fires at once.
        urlRequest.timeoutInterval = seconds.rounded(.up) + 1
        return urlRequest
    }
}

/// One request's state, shared between the delegate callbacks, the deadline and cancellation.
private final class Exchange: Sendable {
    typealias Outcome = Result<(HTTPURLResponse, Data), TransportError>
    struct Progress {
        var data = Data()
        var response: HTTPURLResponse?
        /// Set (and `data` dropped) once the exchange has its outcome: later data is ignored.
        var done = false
        /// Response header bytes received so far.
        var headerBytes = 0
    }
    let limit: Int
    let headerLimit: Int
    let progress: Locked<Progress>
    private let completion = OneShot<Outcome>()

    init(_ request: TransportRequest) {
        limit = max(request.maxResponseBytes, 0)
        headerLimit = max(request.maxResponseHeaderBytes, 0)
        progress = Locked(Progress())
    }

    /// Counts `response`'s header fields against the limit; whether they are within it.
    func countHeaders(of response: HTTPURLResponse) -> Bool {
        // Each field as it was on the wire ("Name: value\r\n"), and the status line.
        var size = 32
        for (name, value) in response.allHeaderFields {
            size += "\(name)".utf8.count + "\(value)".utf8.count + 4
        }
        let total = progress.withLock { p -> Int in
            p.headerBytes += size
            return p.headerBytes
        }
        return headerLimit == 0 || total <= headerLimit
    }

    /// Installs the continuation; resumes it at once when the exchange already finished.
    func attach(_ continuation: CheckedContinuation<Outcome, Never>) { completion.attach(continuation) }

    /// Completes the exchange once; returns whether this call completed it.
    @discardableResult
    func finish(_ result: Outcome) -> Bool {
        guard completion.finish(result) else { return false }
        // Data that arrives between the two locks is appended first and dropped here; data
        // after this sees `done`.
        progress.withLock { p in
            p.done = true
            p.data = Data()
        }
        return true
    }
}

final class SessionDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private let exchanges = Locked<[Int: Exchange]>([:])
    /// Open event streams by task (URLSessionTransport+Streaming.swift).
    let streams = Locked<[Int: URLSessionStream]>([:])

    fileprivate func register(task: URLSessionTask, exchange: Exchange) {
        exchanges.withLock { $0[task.taskIdentifier] = exchange }
    }

    func unregister(task: URLSessionTask) {
        _ = exchanges.withLock { $0.removeValue(forKey: task.taskIdentifier) }
    }

    private func exchange(_ task: URLSessionTask) -> Exchange? {
        exchanges.withLock { $0[task.taskIdentifier] }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        if let stream = stream(dataTask) { return stream.receive(response, completionHandler: completionHandler) }
        guard let exchange = exchange(dataTask) else {
            completionHandler(.cancel)
            return
        }
        guard let http = response as? HTTPURLResponse else {
            exchange.finish(.failure(.network("not an HTTP response")))
            completionHandler(.cancel)
            return
        }
        if !exchange.countHeaders(of: http) {
            exchange.finish(.failure(.responseTooLarge(limit: exchange.headerLimit)))
            completionHandler(.cancel)
            return
        }
        if exchange.limit > 0, response.expectedContentLength > Int64(exchange.limit) {
            exchange.finish(.failure(.responseTooLarge(limit: exchange.limit)))
            completionHandler(.cancel)
            return
        }
        exchange.progress.withLock { $0.response = http }
        completionHandler(.allow)
    }

    /// URLSession follows no redirect: the 3xx is the answer of this task, and
    /// ``URLSessionTransport/send(_:)`` applies ``RedirectPolicy`` and sends the next request
    /// itself (a 307/308 with its method, headers and body).
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        if let stream = stream(dataTask) { return stream.receive(data) }
        guard let exchange = exchange(dataTask) else { return }
        let tooLarge = exchange.progress.withLock { p -> Bool in
            if p.done { return false }
            if exchange.limit > 0, p.data.count + data.count > exchange.limit { return true }
            p.data.append(data)
            return false
        }
        if tooLarge, exchange.finish(.failure(.responseTooLarge(limit: exchange.limit))) {
            dataTask.cancel()
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        if let stream = stream(task) {
            _ = streams.withLock { $0.removeValue(forKey: task.taskIdentifier) }
            return stream.complete(error)
        }
        guard let exchange = exchange(task) else { return }
        if let error {
            let urlError = error as? URLError
            switch urlError?.code {
            case .timedOut?: exchange.finish(.failure(.timedOut))
            case .cancelled?: exchange.finish(.failure(.cancelled))
            default: exchange.finish(.failure(.network(Self.describe(error))))
            }
            return
        }
        let (response, data) = exchange.progress.withLock {
            ($0.response ?? (task.response as? HTTPURLResponse), $0.data)
        }
        guard let response else {
            exchange.finish(.failure(.network("no response")))
            return
        }
        exchange.finish(.success((response, data)))
    }

    // Event streams: like every task, a stream task follows no redirect itself (see
    // `willPerformHTTPRedirection` above); the 3xx is its head and RedirectPolicy.openStream applies §5's rule.
    private func stream(_ task: URLSessionTask) -> URLSessionStream? {
        streams.withLock { $0[task.taskIdentifier] }
    }

    static func describe(_ error: any Error) -> String {
        if let urlError = error as? URLError { return "URLError \(urlError.code.rawValue)" }
        return String(describing: type(of: error))
    }
}
