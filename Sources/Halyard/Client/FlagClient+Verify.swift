import Foundation

/// What ``FlagClient/verify()`` found: the "is this key wired right?" check of an install.
///
/// ```swift
/// if let check = await client.verify() {
///     print(check.isAccepted ? "key accepted, \(check.flagCount) flags" : "refused: \(check.outcome)")
/// } else {
///     print("the control plane did not answer")
/// }
/// ```
public struct InstallCheck: Sendable, Hashable {
    /// How the control plane answered the check's request.
    public enum Outcome: Sendable, Hashable {
        /// 200 with a valid OFREP body: the key is accepted.
        case accepted
        /// 401 or 403: the control plane refused the key (carries the status).
        case rejected(status: Int)
        /// 400: the control plane refused the context (the key itself was not judged).
        case invalidContext
        /// Any other answer: another status (429, 5xx, ...), or a 200 whose body is not a valid
        /// OFREP response or exceeds ``FlagClientOptions/maxResponseBytes`` (status 200).
        case unexpected(status: Int)
    }

    /// How the control plane answered.
    public var outcome: Outcome
    /// The HTTP status of the answer.
    public var status: Int
    /// How many flags the control plane serves for the context (0 unless ``Outcome/accepted``),
    /// failures included.
    public var flagCount: Int
    /// How many of those are failures (items with an error code).
    public var failedFlagCount: Int
    /// The `ETag` of the answer, when it had one.
    public var etag: String?
    /// The response-level metadata of an accepted answer (bool, string and number members).
    public var metadata: FlagMetadata
    /// The fingerprint of the fitted context that was sent.
    public var contextFingerprint: String
    /// How long the exchange took, on the client's clock.
    public var duration: Duration

    /// Whether the key was accepted (``outcome`` is ``Outcome/accepted``).
    public var isAccepted: Bool { outcome == .accepted }

    /// Creates a result (public so that tests and wrappers can build expected values).
    public init(
        outcome: Outcome, status: Int, flagCount: Int = 0, failedFlagCount: Int = 0, etag: String? = nil,
        metadata: FlagMetadata = [:], contextFingerprint: String, duration: Duration = .zero
    ) {
        self.outcome = outcome
        self.status = status
        self.flagCount = flagCount
        self.failedFlagCount = failedFlagCount
        self.etag = etag
        self.metadata = metadata
        self.contextFingerprint = contextFingerprint
        self.duration = duration
    }
}

extension FlagClient {
    /// The install check: asks the control plane once, now, for the current context, and
    /// reports whether the key is accepted, how many flags it serves, the `ETag` and the
    /// response metadata.
    ///
    /// One OFREP bulk request with the client's identity headers and without `If-None-Match`.
    /// It stands apart from the client's sync: the answer is not published (reads, handles and
    /// events do not change), the refresh schedule, backoff, `Retry-After`, ETag, status and
    /// ``stats`` are untouched, and it is sent even while a `Retry-After` or a 401/403 stop is
    /// in force.
    ///
    /// Returns `nil` when the control plane did not answer: a network error, a timeout
    /// (``FlagClientOptions/requestTimeout``), a cancelled task, and when nothing could be sent
    /// (an offline or closed client, or a current context that is invalid). Why it did not
    /// answer (the transport's error: refused, TLS, DNS, timeout) goes to the
    /// ``FlagClientOptions/logHandler`` as one warning.
    ///
    /// The client's own start-up fetch is a request too: to check a key with exactly one
    /// request, and nothing started, use ``verify(options:)``.
    public func verify() async -> InstallCheck? {
        do {
            return try await verifyKey()
        } catch {
            if let message = error.logMessage, let options = sync?.options {
                options.logSink?(Self.installCheckRecord(message, options: options))
            }
            return nil
        }
    }

    /// ``verify()`` that says why there is no answer: the same single request, reporting an
    /// answer (accepted, refused, invalid context, another status or an unusable body) as an
    /// ``InstallCheck`` and every case ``verify()`` returns `nil` for as a ``VerifyError``.
    ///
    /// ```swift
    /// do {
    ///     let check = try await client.verifyKey()
    ///     print(check.isAccepted ? "key accepted" : "answered \(check.outcome)")
    /// } catch .unreachable(let cause) {
    ///     print("no answer: \(cause)")
    /// } catch {
    ///     print(error)
    /// }
    /// ```
    ///
    /// Nothing is logged: the error says it.
    public func verifyKey() async throws(VerifyError) -> InstallCheck {
        guard let sync, !sync.isClosed else { throw .notRunning }
        return try await Self.installCheck(
            options: sync.options, identity: sync.identity, transport: sync.transport, context: sync.currentContext)
    }

    /// The install check without a client: validates `options` as ``init(options:)`` does,
    /// then sends exactly one OFREP bulk request for ``FlagClientOptions/initialContext`` (no
    /// start-up fetch, no polling, no exposures, no on-device cache; nothing keeps running
    /// afterwards) and reports the answer as ``verify()`` does.
    ///
    /// ```swift
    /// var options = FlagClientOptions(baseURL: URL(string: "https://flags.example.com")!, key: key)
    /// options.logHandler = { level, message in print(message) }   // says why when nil
    /// if let check = try await FlagClient.verify(options: options), check.isAccepted { ... }
    /// ```
    ///
    /// - Returns: `nil` when the control plane did not answer (the cause is logged to
    ///   ``FlagClientOptions/logHandler`` as one warning) or the initial context is invalid.
    /// - Throws: the configuration errors of ``init(options:)``.
    public static func verify(options: FlagClientOptions) async throws(FlagClientError) -> InstallCheck? {
        do {
            return try await verifyKey(options: options)
        } catch .invalidOptions(let error) {
            throw error
        } catch {
            if let message = error.logMessage { options.logSink?(installCheckRecord(message, options: options)) }
            return nil
        }
    }

    /// ``verify(options:)`` that says why there is no answer, as ``verifyKey()`` does; a
    /// configuration error is ``VerifyError/invalidOptions(_:)``.
    public static func verifyKey(options: FlagClientOptions) async throws(VerifyError) -> InstallCheck {
        do throws(FlagClientError) {
            try options.validate()
        } catch {
            throw .invalidOptions(error)
        }
        let identity = ClientIdentity(
            baseURL: options.baseURL, key: options.key, appID: options.appID,
            installID: { [storage = options.installIDStorage] in storage.resolve() })
        return try await installCheck(
            options: options, identity: identity, transport: options.transport ?? makeDefaultTransport(),
            context: options.initialContext)
    }

    /// One install-check exchange (shared by ``verifyKey()`` and ``verifyKey(options:)``).
    private static func installCheck(
        options: FlagClientOptions, identity: ClientIdentity, transport: any FlagTransport,
        context current: EvaluationContext
    ) async throws(VerifyError) -> InstallCheck {
        let context: FittedContext
        do throws(ContextError) {
            context = try current.fitted(limit: options.maxContextCodeUnits)
        } catch {
            throw .invalidContext(error)
        }
        let maxResponseBytes = options.maxResponseBytes > 0 ? options.maxResponseBytes : 8 << 20
        let timeout = options.requestTimeout > .zero ? options.requestTimeout : .seconds(10)
        let builder = OFREPRequestBuilder(identity: identity, timeout: timeout, maxResponseBytes: maxResponseBytes)
        let request = builder.request(contextJSON: context.canonicalJSON, ifNoneMatch: nil)
        let started = options.clock.monotonicNow
        let response: TransportResponse
        do {
            response = try await transport.send(request)
        } catch TransportError.responseTooLarge {
            return InstallCheck(
                outcome: .unexpected(status: 200), status: 200, contextFingerprint: context.fingerprint,
                duration: options.clock.monotonicNow - started)
        } catch {
            throw VerifyError(error, timeout: timeout)
        }
        var check = InstallCheck(
            outcome: .unexpected(status: response.status), status: response.status, etag: response.header("ETag"),
            contextFingerprint: context.fingerprint, duration: options.clock.monotonicNow - started)
        switch response.status {
        case 200:
            guard let decoded = try? OFREPResponse.decode(response.body, limit: maxResponseBytes) else { break }
            check.outcome = .accepted
            check.flagCount = decoded.flags.count
            check.failedFlagCount = decoded.flags.count { $0.errorCode != nil }
            check.metadata = decoded.metadata
        case 400: check.outcome = .invalidContext
        case 401, 403: check.outcome = .rejected(status: response.status)
        default: break
        }
        return check
    }

    /// The warning of an install check that got no answer: the control plane's origin with it.
    private static func installCheckRecord(_ message: String, options: FlagClientOptions) -> HalyardLogRecord {
        HalyardLogRecord(
            .warning, message, .verify, [HalyardLogRecord.Key.origin: HalyardLogRecord.origin(options.baseURL)])
    }
}
