import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One event stream on ``URLSessionTransport``: a data task whose delegate callbacks hand over the
/// head once, then the body chunk by chunk (SPEC §14).
///
/// The head must arrive within the request's timeout; after it, a timer of its own closes the
/// stream when no byte arrived for the inactivity timeout (→ ``TransportError/timedOut``), so
/// the whole-exchange deadline of ordinary requests does not apply. Chunks are yielded from the
/// delegate queue with no lock held; at most ``maxBufferedChunks`` wait for the consumer.
final class URLSessionStream: Sendable {
    /// The most chunks buffered for a consumer that does not keep up.
    static let maxBufferedChunks = 256

    private struct State: Sendable {
        var headDelivered = false
        var ended = false
        var lastActivity = ContinuousClock.now
        var timerArmed = false
    }

    let chunks: AsyncThrowingStream<Data, any Error>
    private let continuation: AsyncThrowingStream<Data, any Error>.Continuation
    private let head = OneShot<Result<StreamHead, TransportError>>()
    private let state = Locked(State())
    private let inactivity: Duration
    private let task: Locked<URLSessionDataTask?> = Locked(nil)

    init(inactivity: Duration) {
        self.inactivity = max(inactivity, .milliseconds(1))
        (chunks, continuation) = AsyncThrowingStream.makeStream(
            of: Data.self, bufferingPolicy: .bufferingOldest(Self.maxBufferedChunks))
    }

    /// Starts `task` for this stream; the head must come within `headTimeout`.
    func start(_ task: URLSessionDataTask, headTimeout: Duration) {
        self.task.withLock { $0 = task }
        task.resume()
        DispatchQueue.global().asyncAfter(deadline: .now() + headTimeout.fractionalSeconds) { [weak self] in
            guard let self else { return }
            if !self.state.withLock({ $0.headDelivered }) { self.fail(.timedOut) }
        }
    }

    /// Waits for the head (or the failure before it).
    func waitForHead() async -> Result<StreamHead, TransportError> {
        await withCheckedContinuation { head.attach($0) }
    }

    // MARK: - Delegate callbacks

    func receive(
        _ response: URLResponse, completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        guard let http = response as? HTTPURLResponse else {
            fail(.network("not an HTTP response"))
            completionHandler(.cancel)
            return
        }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        let stream = (200..<300).contains(http.statusCode)
        state.withLock {
            $0.headDelivered = true
            $0.lastActivity = ContinuousClock.now
        }
        head.finish(.success(StreamHead(status: http.statusCode, headers: headers)))
        if stream {
            completionHandler(.allow)
            armInactivityTimer()
        } else {
            // Not a stream: the head is the answer; the body is not read.
            end(nil)
            completionHandler(.cancel)
        }
    }

    func receive(_ data: Data) {
        let open = state.withLock { s -> Bool in
            s.lastActivity = ContinuousClock.now
            return !s.ended
        }
        guard open, !data.isEmpty else { return }
        switch continuation.yield(data) {
        case .dropped: fail(.responseTooLarge(limit: Self.maxBufferedChunks))
        case .terminated: cancel()
        default: break
        }
    }

    func complete(_ error: (any Error)?) {
        guard let error else {
            if !state.withLock({ $0.headDelivered }) { fail(.network("no response")) }
            end(nil)
            return
        }
        switch (error as? URLError)?.code {
        case .timedOut?: fail(.timedOut)
        case .cancelled?: fail(.cancelled)
        default: fail(.network(SessionDelegate.describe(error)))
        }
    }

    // MARK: - Ending

    /// Closes the stream at once (idempotent); the chunks end without an error.
    func cancel() {
        head.finish(.failure(.cancelled))
        end(nil)
    }

    /// Fails the open (before the head) or the stream (after it).
    func fail(_ error: TransportError) {
        head.finish(.failure(error))
        end(error)
    }

    private func end(_ error: TransportError?) {
        let first = state.withLock { s -> Bool in
            defer { s.ended = true }
            return !s.ended
        }
        guard first else { return }
        if let error {
            continuation.finish(throwing: error)
        } else {
            continuation.finish()
        }
        task.withLock { task in
            task?.cancel()
            task = nil
        }
    }

    /// Runs `action` when the consumer stops iterating (or the chunks end).
    func onTermination(_ action: @escaping @Sendable () -> Void) {
        continuation.onTermination = { _ in action() }
    }

    private func armInactivityTimer() {
        let wait = state.withLock { s -> Duration? in
            if s.ended { return nil }
            s.timerArmed = true
            return inactivity - (ContinuousClock.now - s.lastActivity)
        }
        guard let wait else { return }
        DispatchQueue.global().asyncAfter(deadline: .now() + max(wait, .milliseconds(1)).fractionalSeconds) {
            [weak self] in
            guard let self else { return }
            let expired = self.state.withLock { s -> Bool? in
                if s.ended { return nil }
                return ContinuousClock.now - s.lastActivity >= self.inactivity
            }
            switch expired {
            case true?: self.fail(.timedOut)
            case false?: self.armInactivityTimer()
            case nil: break
            }
        }
    }
}
