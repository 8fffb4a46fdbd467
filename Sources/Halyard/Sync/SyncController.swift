import Foundation

/// The online machinery of a ``FlagClient``: options, transport, clock, install id, the refresh
/// engine and the close hooks. One per online client (`client.sync`); nil offline.
///
/// Integration points for other subsystems (exposures, cache):
/// - ``options``, ``transport``, ``clock``, ``installID``: the resolved settings, so an exposure
///   uploader sends through the same transport with the same clock and identity headers.
/// - ``currentFingerprint`` / ``currentContext``: the fitted context in force.
/// - ``addCloseHook(_:)``: called once by `close()`, after polling stopped, off any lock.
package final class SyncController: Sendable {
    /// The options the client was created with.
    package let options: FlagClientOptions
    /// The transport in use (``FlagClientOptions/transport`` or the platform default).
    package let transport: any FlagTransport
    /// The clock in use.
    package let clock: any HalyardClock
    /// The persisted install id sent as `X-Halyard-Install-Id`.
    package let installID: String
    let engine: RefreshEngine
    private let readCounters = Locked<ReadCounters?>(nil)
    private struct Lifecycle {
        var closed = false
        var key: String
        var hooks: [@Sendable () -> Void] = []
        /// The initial context (kept for when it is invalid and the engine has none).
        var initialContext: EvaluationContext
    }
    private let lifecycle: Locked<Lifecycle>

    package init(options: FlagClientOptions, store: SnapshotStore) {
        self.options = options
        let transport = options.transport ?? makeDefaultTransport()
        self.transport = transport
        clock = options.clock
        installID = options.installIDStorage.resolve()
        lifecycle = Locked(Lifecycle(key: options.key, initialContext: options.initialContext))
        let builder = OFREPRequestBuilder(
            baseURL: options.baseURL, key: options.key, appID: options.appID, installID: installID,
            timeout: options.requestTimeout > .zero ? options.requestTimeout : .seconds(10),
            maxResponseBytes: options.maxResponseBytes > 0 ? options.maxResponseBytes : 8 << 20)
        let machine = RefreshMachine.Configuration(
            pollInterval: max(options.pollInterval, .zero),
            pollJitter: options.pollJitter,
            backoff: Backoff(initial: options.initialBackoff, maximum: options.maxBackoff),
            staleAfter: options.effectiveStaleAfter,
            refreshIfStaleThreshold: options.refreshIfStaleThreshold)
        let counters = readCounters
        engine = RefreshEngine(
            configuration: .init(machine: machine, builder: builder),
            transport: transport,
            clock: options.clock,
            logHandler: options.logHandler,
            statusChanged: { status in
                counters.withLock { $0 }?.isFatal = status == .fatal
            },
            publish: { publication in
                guard case .values(let flags, let fingerprint, let confirmedAt) = publication else { return }
                let snapshot = Snapshot(
                    flags: flags, source: .network, confirmedAt: confirmedAt, contextFingerprint: fingerprint)
                // Flags whose variant did not change keep their exposure slots: a refresh does
                // not re-expose within the window.
                if let previous = store.currentSnapshot { snapshot.inheritExposureSlots(from: previous) }
                store.publish(snapshot)
            })
    }

    /// The identity headers every request to the control plane carries: `Authorization`,
    /// `User-Agent`, `X-Halyard-Install-Id` and (when set) `X-Halyard-App-Id`. For the exposure
    /// uploader, so its requests identify the client exactly like the flag fetches.
    package var identityHeaders: [String: String] {
        var headers = [
            "Authorization": "Bearer \(key)",
            "User-Agent": OFREPRequestBuilder.userAgent,
            OFREPRequestBuilder.installIDHeader: installID,
        ]
        if let appID = options.appID { headers[OFREPRequestBuilder.appIDHeader] = appID }
        return headers
    }

    /// The key in use (``FlagClient/setKey(_:)`` replaces it).
    package var key: String { lifecycle.withLock { $0.key } }

    func setKey(_ key: String) async throws(FlagClientError) {
        var candidate = options
        candidate.key = key
        try candidate.validate()
        guard !isClosed else { return }
        lifecycle.withLock { $0.key = key }
        await engine.setKey(key)
    }

    /// The SDK name and version (`meta.sdk`, `meta.version` of exposure uploads).
    package static let sdk = (name: OFREPRequestBuilder.sdkName, version: OFREPRequestBuilder.sdkVersion)

    /// Binds the client's read counters and sends the start-up fetch.
    package func start(readCounters counters: ReadCounters) {
        readCounters.withLock { $0 = counters }
        let context = options.initialContext
        let fitted = try? context.fitted(limit: options.contextSizeLimit)
        engine.start(context: fitted.map { Self.syncContext(context, $0) })
    }

    static func syncContext(_ context: EvaluationContext, _ fitted: FittedContext) -> SyncContext {
        SyncContext(
            canonicalJSON: fitted.canonicalJSON, fingerprint: fitted.fingerprint,
            droppedAttributes: fitted.droppedAttributes, source: context, fitted: fitted)
    }

    /// The context in force: the last valid one given to `identify` (its values may still be
    /// in flight), else the initial context (even when it is invalid).
    package var currentContext: EvaluationContext {
        engine.context?.source ?? lifecycle.withLock { $0.initialContext }
    }

    /// The fitted form of the current context, nil when it is invalid.
    package var currentFittedContext: FittedContext? { engine.context?.fitted }

    /// The fingerprint of the current context, nil when it is invalid.
    package var currentFingerprint: String? { currentFittedContext?.fingerprint }

    /// Whether `close()` was called.
    package var isClosed: Bool { lifecycle.withLock { $0.closed } }

    func identify(_ context: EvaluationContext) async -> Bool {
        guard !isClosed, let fitted = try? context.fitted(limit: options.contextSizeLimit) else { return false }
        return await engine.identify(Self.syncContext(context, fitted))
    }

    /// Registers `hook` to run once when the client closes (at once if it is already closed).
    package func addCloseHook(_ hook: @escaping @Sendable () -> Void) {
        let runNow = lifecycle.withLock { s -> Bool in
            if s.closed { return true }
            s.hooks.append(hook)
            return false
        }
        if runNow { hook() }
    }

    func close() {
        let hooks = lifecycle.withLock { s -> [@Sendable () -> Void]? in
            if s.closed { return nil }
            s.closed = true
            defer { s.hooks.removeAll() }
            return s.hooks
        }
        guard let hooks else { return }
        engine.close()
        for hook in hooks { hook() }
    }
}
