import Foundation

/// The online parts of a ``FlagClient`` and their wiring: one ``ClientIdentity`` shared by every
/// request, the transport, the refresh engine (Sync), the exposure recorder (Exposure), and the
/// client's own status and events (``ClientEventHub``). One per online client (`client.sync`);
/// nil offline.
///
/// Dependencies point one way (docs/architecture.md, "Map"): this file knows Sync, Exposure and
/// Snapshot; none of them knows the client.
package final class OnlineSession: Sendable {
    /// The options the client was created with.
    let options: FlagClientOptions
    /// Who the client is to the control plane (credential, install id, app id, user agent).
    let identity: ClientIdentity
    /// The transport in use (``FlagClientOptions/transport`` or a ``URLSessionTransport``).
    let transport: any FlagTransport
    /// The refresh engine.
    let engine: RefreshEngine
    /// The exposure pipeline (closed with the session).
    let recorder: ExposureRecorder
    /// Status and events as the client reports them.
    let hub: ClientEventHub
    private struct Lifecycle {
        var closed = false
        var hooks: [@Sendable () -> Void] = []
        /// The last valid context given to `identify`, else the initial one (even when invalid).
        var context: EvaluationContext
    }
    private let lifecycle: Locked<Lifecycle>

    init(options: FlagClientOptions, store: SnapshotStore, readCounters: ReadCounters) {
        self.options = options
        lifecycle = Locked(Lifecycle(context: options.initialContext))
        let transport = options.transport ?? makeDefaultTransport()
        self.transport = transport
        let identity = ClientIdentity(
            baseURL: options.baseURL, key: options.key, appID: options.appID,
            installID: { [storage = options.installIDStorage] in storage.resolve() })
        self.identity = identity
        let hub = ClientEventHub(readCounters: readCounters)
        self.hub = hub
        let builder = OFREPRequestBuilder(
            identity: identity,
            timeout: options.requestTimeout > .zero ? options.requestTimeout : .seconds(10),
            maxResponseBytes: options.maxResponseBytes > 0 ? options.maxResponseBytes : 8 << 20)
        let machine = RefreshMachine.Configuration(
            pollInterval: max(options.pollInterval, .zero),
            pollJitter: options.pollJitter,
            // Full jitter from the first retry: a herd of clients spreads out at once.
            backoff: Backoff(base: options.initialBackoff, maximum: options.maxBackoff),
            staleAfter: options.effectiveStaleAfter,
            refreshIfStaleThreshold: options.refreshIfStaleThreshold)
        engine = RefreshEngine(
            configuration: .init(machine: machine, builder: builder),
            transport: transport,
            clock: options.clock,
            logHandler: options.logHandler,
            observer: SyncObserver(
                publish: { values in
                    let (snapshot, changed) = Snapshot.next(
                        after: store.currentSnapshot, flags: values.flags, source: .network,
                        confirmedAt: values.confirmedAt, contextFingerprint: values.fingerprint, etag: values.etag)
                    store.publish(snapshot)
                    return changed
                },
                event: { hub.emit($0) },
                status: { hub.statusChanged($0) },
                closed: { hub.finish() }))
        recorder = Self.makeExposureRecorder(options: options, identity: identity, transport: transport)
    }

    private static func makeExposureRecorder(
        options: FlagClientOptions, identity: ClientIdentity, transport: any FlagTransport
    ) -> ExposureRecorder {
        ExposureRecorder.forControlPlane(
            options: options.exposures, clock: options.clock, transport: transport, baseURL: options.baseURL,
            appID: options.appID, identity: identity, logHandler: options.logHandler)
    }

    /// Sends the start-up fetch for the initial context (nothing when it is invalid).
    func start() {
        engine.start(context: try? options.initialContext.fitted(limit: options.contextSizeLimit))
    }

    /// Whether `close()` was called.
    var isClosed: Bool { lifecycle.withLock { $0.closed } }

    /// The context in force: the last valid one given to `identify` (its values may still be in
    /// flight), else the initial context (even when it is invalid).
    package var currentContext: EvaluationContext { lifecycle.withLock { $0.context } }

    /// The identity headers every request carries (see ``ClientIdentity/headers``).
    package var identityHeaders: [String: String] { identity.headers }

    /// Registers `hook` to run once when the client closes, after the engine stopped and the
    /// exposure recorder closed, off any lock (at once if it is already closed).
    package func addCloseHook(_ hook: @escaping @Sendable () -> Void) {
        let runNow = lifecycle.withLock { s -> Bool in
            if s.closed { return true }
            s.hooks.append(hook)
            return false
        }
        if runNow { hook() }
    }

    func setKey(_ key: String) async throws(FlagClientError) {
        var candidate = options
        candidate.key = key
        try candidate.validate()
        guard !isClosed else { return }
        identity.setKey(key)
        await engine.keyChanged()
    }

    func identify(_ context: EvaluationContext) async -> Bool {
        guard !isClosed, let fitted = try? context.fitted(limit: options.contextSizeLimit) else { return false }
        lifecycle.withLock { $0.context = context }
        return await engine.identify(fitted, maxWait: options.readyTimeout)
    }

    /// Stops the engine, then closes the exposure recorder (its final flush runs detached).
    /// Idempotent.
    func close() {
        let hooks = lifecycle.withLock { s -> [@Sendable () -> Void]? in
            if s.closed { return nil }
            s.closed = true
            defer { s.hooks.removeAll() }
            return s.hooks
        }
        guard let hooks else { return }
        engine.close()
        recorder.close()
        for hook in hooks { hook() }
    }
}
