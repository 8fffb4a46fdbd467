import Dispatch
import Foundation

/// The online parts of a ``FlagClient`` and their wiring: one ``ClientIdentity`` shared by every
/// request, the transport (Transport), the refresh engine (Refresh), its event streams
/// (Streaming), the exposure recorder (Exposure), and the
/// client's own status and events (``ClientEventHub``). One per online client (`client.sync`);
/// nil offline.
///
/// Dependencies point one way (docs/architecture.md, "Map"): this file knows Refresh,
/// Streaming, Transport, Exposure and Snapshot; none of them knows the client.
package final class OnlineSession: Sendable {
    /// The options the client was created with.
    let options: FlagClientOptions
    /// Who the client is to the control plane (credential, install id, app id, user agent).
    let identity: ClientIdentity
    /// The transport in use, wrapped in Halyard's deadline and redirect log: the
    /// ``FlagClientOptions/transport``, else the platform default (``CurlTransport`` on Linux
    /// when libcurl loads, else a ``URLSessionTransport``).
    let transport: any FlagTransport
    /// The refresh engine.
    let engine: RefreshEngine
    /// The exposure pipeline (closed with the session).
    let recorder: ExposureRecorder
    /// The event stream (``ChangeDetection/automatic`` on a streaming transport), else nil.
    let streams: EventStreamGroup?
    /// Status and events as the client reports them.
    let hub: ClientEventHub
    /// Publishes network, cached and bootstrap values in precedence order (docs/cache.md).
    let publisher: ValuePublisher
    /// Whether the engine was started (once: by the cache lookup, its time cap, or `identify`).
    private let engineStarted = Locked(false)
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
        // Halyard's deadline and redirect log around the transport, for every request the client
        // sends (the engine and the recorder keep this one: wrapping is idempotent).
        let transport = GuardedTransport.wrapping(
            options.transport ?? makeDefaultTransport(logHandler: options.logSink), logHandler: options.logSink)
        self.transport = transport
        let identity = ClientIdentity(
            baseURL: options.baseURL, key: options.key, appID: options.appID,
            installID: { [storage = options.installIDStorage] in storage.resolve() })
        self.identity = identity
        let hub = ClientEventHub(readCounters: readCounters)
        self.hub = hub
        let publisher = ValuePublisher(
            store: store, cache: Self.makeCache(options: options, identity: identity))
        self.publisher = publisher
        let builder = OFREPRequestBuilder(
            identity: identity,
            timeout: options.requestTimeout > .zero ? options.requestTimeout : .seconds(10),
            maxResponseBytes: options.maxResponseBytes > 0 ? options.maxResponseBytes : 8 << 20)
        var machine = RefreshMachine.Configuration(
            pollInterval: options.changeDetection == .none ? .zero : max(options.pollInterval, .zero),
            pollJitter: options.pollJitter,
            // Full jitter from the first retry: a herd of clients spreads out at once.
            backoff: Backoff(base: options.initialBackoff, maximum: options.maxBackoff),
            staleAfter: options.effectiveStaleAfter,
            refreshIfStaleThreshold: options.refreshIfStaleThreshold)
        let streams = Self.makeStreams(options: options, identity: identity, transport: transport)
        self.streams = streams
        machine.learnsAdvertisement = streams != nil
        engine = RefreshEngine(
            configuration: .init(machine: machine, builder: builder),
            transport: transport,
            clock: options.clock,
            logHandler: options.logSink,
            observer: SyncObserver(
                publish: { values in publisher.publishNetwork(values) },
                confirmed: { confirmation in publisher.confirmed(confirmation) },
                event: { hub.emit($0) },
                status: { hub.statusChanged($0) },
                closed: { hub.finish() },
                eventStreams: { streams?.advertised($0) }))
        recorder = Self.makeExposureRecorder(options: options, identity: identity, transport: transport)
        streams?.attach(
            .init(
                fetch: { [weak engine] fetch in await engine?.streamFetch(fetch) ?? true },
                pollInterval: { [weak engine] interval in engine?.setPollInterval(interval) }))
    }

    private static func makeExposureRecorder(
        options: FlagClientOptions, identity: ClientIdentity, transport: any FlagTransport
    ) -> ExposureRecorder {
        ExposureRecorder.forControlPlane(
            options: options.exposures, clock: options.clock, transport: transport, baseURL: options.baseURL,
            appID: options.appID, serviceName: options.serviceName, identity: identity, logHandler: options.logSink)
    }

    /// Serves the bootstrap values, then looks the initial context up in the on-device cache
    /// (on the cache queue) and sends the start-up fetch once that lookup is over, so that a
    /// cached ETag can go with it; the fetch waits for the lookup at most
    /// ``FlagClientOptions/cacheLookupCap`` (a slow store never holds it back longer). Without a cache (or an
    /// invalid initial context) the fetch is sent at once.
    func start() {
        let fitted = try? options.initialContext.fitted(limit: options.maxContextCodeUnits)
        publisher.begin(fitted, identify: false)
        publisher.publishBootstrap(options.bootstrapValues, fingerprint: fitted?.fingerprint ?? "")
        guard let cache = publisher.cache, let fitted else {
            startEngine(fitted)
            return
        }
        cache.load(fitted) { [weak self] envelope in
            guard let self else { return }
            if let envelope, !self.isClosed, let changed = self.publisher.publishCached(envelope, generation: 0) {
                if !changed.isEmpty { self.hub.emit(.configurationChanged(changed)) }
                self.engine.servedCachedValues(fingerprint: envelope.fingerprint, etag: envelope.etag)
            }
            self.startEngine(fitted)
        }
        let seconds = min(max(options.cacheLookupCap.fractionalSeconds, 0), 3600)
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(seconds * 1e9))) { [weak self] in
            self?.startEngine(fitted)
        }
    }

    /// Starts the engine unless it was started (or an `identify` took over) already.
    private func startEngine(_ fitted: FittedContext?) {
        guard claimEngineStart() else { return }
        engine.start(context: fitted)
    }

    private func claimEngineStart() -> Bool {
        engineStarted.withLock { started in
            defer { started = true }
            return !started
        }
    }

    /// The on-device cache for these options, nil when it is off.
    private static func makeCache(options: FlagClientOptions, identity: ClientIdentity) -> OnDeviceCache? {
        guard options.maxCachedContexts > 0 else { return nil }
        let store: any CacheStore
        if let custom = options.cacheStore {
            store = custom
        } else if let directory = options.cacheDirectory ?? FileCacheStore.defaultDirectory {
            store = FileCacheStore(directory: directory, sizeLimit: options.maxCacheEntryBytes)
        } else {
            return nil
        }
        return OnDeviceCache(
            configuration: .init(
                store: store, maxContexts: options.maxCachedContexts, maxAge: options.cacheMaxAge,
                baseURL: options.baseURL, appID: options.appID, key: { identity.key },
                installID: { identity.installID },
                clock: options.clock, log: options.logSink))
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
        // A stream opened with the old key reconnects with the new one (SPEC §12).
        streams?.keyChanged()
        await engine.keyChanged()
    }

    func identify(_ context: EvaluationContext) async -> Bool {
        guard !isClosed, let fitted = try? context.fitted(limit: options.maxContextCodeUnits) else { return false }
        lifecycle.withLock { $0.context = context }
        // The start-up fetch, if still waiting for the cache lookup, is superseded.
        _ = claimEngineStart()
        let beginning = publisher.begin(fitted, identify: true)
        if let cache = publisher.cache, beginning.lookUpCache {
            // Serves the new context's cached values until its first fetch completes.
            cache.load(fitted) { [weak self] envelope in
                guard let self, let envelope, !self.isClosed,
                    let changed = self.publisher.publishCached(envelope, generation: beginning.generation),
                    !changed.isEmpty
                else { return }
                self.hub.emit(.configurationChanged(changed))
            }
        }
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
        streams?.close()
        engine.close()
        recorder.close()
        for hook in hooks { hook() }
    }
}
