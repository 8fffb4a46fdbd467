import Foundation

extension FlagClient {
    /// Creates an online client that fetches values from the control plane (OFREP, docs/protocol.md).
    ///
    /// ```swift
    /// var options = FlagClientOptions(baseURL: URL(string: "https://flags.example.com")!, key: "cli-123")
    /// options.initialContext = EvaluationContext(targetingKey: "user-1")
    /// let client = try FlagClient(options: options)
    /// _ = await client.ready(timeout: .seconds(5))
    /// ```
    ///
    /// Returns at once and fetches in the background; reads answer `PROVIDER_NOT_READY` until
    /// values arrive — the bootstrap values at once, then values from the on-device cache
    /// (reason `CACHED`, status `stale`) as soon as they are read, off this thread, then the
    /// control plane's (docs/cache.md). Only programming errors throw; connection problems never do.
    ///
    /// - Throws: ``FlagClientError/blankKey``, ``FlagClientError/serverKeyInClientRole(prefix:)``,
    ///   ``FlagClientError/baseURLNotAbsolute``, ``FlagClientError/unsupportedScheme(_:)``,
    ///   ``FlagClientError/insecureHTTPToNonLoopbackHost(_:)``; for a bad bootstrap value,
    ///   ``FlagClientError/emptyFlagKey`` or ``FlagClientError/invalidOfflineValue(key:reason:)``.
    public convenience init(options: FlagClientOptions) throws(FlagClientError) {
        try options.validate()
        let store = SnapshotStore()
        let readCounters = ReadCounters()
        let sync = OnlineSession(options: options, store: store, readCounters: readCounters)
        self.init(mode: .online, exposureSink: sync.recorder, store: store, readCounters: readCounters, sync: sync)
        sync.start()
    }

    /// The client's status (docs/protocol.md), as last reported by the sync engine once the
    /// values it describes were published. Offline clients are always ``ClientStatus/ready``.
    public var status: ClientStatus { sync?.hub.status ?? .ready }

    /// Waits until values the control plane confirmed for the current context are served, or
    /// `timeout` passes (measured on the options' clock). Returns whether they are. Returns
    /// `false` at once when no values can arrive any more (key refused, context invalid, closed).
    /// Offline clients return `true`.
    public func ready(timeout: Duration) async -> Bool {
        guard let sync else { return true }
        return await sync.engine.ready(timeout: timeout)
    }

    /// ``ready(timeout:)`` with ``FlagClientOptions/readyTimeout`` (5 s by default).
    public func ready() async -> Bool {
        guard let sync else { return true }
        return await sync.engine.ready(timeout: sync.options.readyTimeout)
    }

    /// Switches the evaluation context and fetches its values.
    ///
    /// While the fetch is in flight the status is ``ClientStatus/reconciling`` and reads keep
    /// answering from the previous values. Returns whether the values now served are for
    /// `context`: `false` when the fetch failed (the client keeps retrying in the background and
    /// emits ``ClientEvent/contextChanged`` when it succeeds), when a newer `identify` superseded
    /// this one, when the client is closed, or at once, changing nothing, when `context` is
    /// invalid. Only the last of overlapping calls emits ``ClientEvent/contextChanged``.
    ///
    /// The wait is bounded: when a `Retry-After` defers the fetch beyond
    /// ``FlagClientOptions/readyTimeout`` it returns `false` at once (the fetch is sent when the
    /// `Retry-After` ends), and cancelling the calling task returns `false` at once. In both cases
    /// the switch goes on in the background and ``ClientEvent/contextChanged`` reports its end.
    /// Offline clients return whether `context` is valid.
    public func identify(_ context: EvaluationContext) async -> Bool {
        guard let sync else { return (try? context.fitted()) != nil }
        return await sync.identify(context)
    }

    /// Fetches now and returns when the fetch is over. Concurrent callers share one request.
    /// Sends nothing (and returns at once) while a `Retry-After` or a backoff delay is in force,
    /// after `close()`, and offline.
    public func refresh() async {
        await sync?.engine.refresh()
    }

    /// Replaces the key (rotation, or recovery after the control plane refused the old one with
    /// 401/403): cancels the fetch in flight, lifts the stop on background refresh, forgets the
    /// ETag and fetches at once (subject to `Retry-After`); returns when that fetch is over.
    /// Values keep being served meanwhile. Does nothing offline or after `close()`.
    ///
    /// - Throws: ``FlagClientError/blankKey`` or ``FlagClientError/serverKeyInClientRole(prefix:)``
    ///   (then nothing changes).
    public func setKey(_ key: String) async throws(FlagClientError) {
        try await sync?.setKey(key)
    }

    /// Like ``refresh()``, but only when the last confirmation is older than
    /// ``FlagClientOptions/refreshIfStaleThreshold`` (15 s by default).
    public func refreshIfStale() async {
        await sync?.engine.refreshIfStale()
    }

    /// Calls `handler` with exactly the keys whose served result changed (value, variant, reason
    /// or error), or that were added or removed, after each new snapshot; never with an empty set.
    ///
    /// Each handler runs on a serial queue of its own, never on the read path and never under a
    /// lock: a slow handler delays only itself. Keep the returned subscription and call
    /// ``ChangeSubscription/cancel()`` to stop. Offline clients never call it.
    ///
    /// ```swift
    /// let subscription = client.onChange { keys in
    ///     if keys.contains("checkout.new") { reloadCheckout() }
    /// }
    /// ```
    public func onChange(_ handler: @escaping @Sendable (Set<String>) -> Void) -> ChangeSubscription {
        guard let sync else { return ChangeSubscription {} }
        return sync.hub.onChange(handler)
    }

    /// Runs `body` with a stream of the changed keys (the sets ``onChange(_:)`` delivers, in
    /// emission order) and ends the subscription when `body` returns or throws. The stream
    /// finishes then, or earlier when the client closes, so a `for await` over it ends too;
    /// offline clients never change, and their stream is finished at once. Use it where the
    /// subscription's lifetime is a scope; the ``ChangeSubscription`` of ``onChange(_:)`` runs
    /// until ``ChangeSubscription/cancel()``.
    ///
    /// ```swift
    /// let watcher = Task {
    ///     await client.withChanges { changes in
    ///         for await keys in changes where keys.contains("checkout.new") {
    ///             await reloadCheckout()
    ///         }
    ///     }
    /// }
    /// // The loop ends when the client closes, or at `watcher.cancel()`.
    /// ```
    ///
    /// - Parameters:
    ///   - bufferingPolicy: What the stream keeps while `body` is not reading; *default*
    ///     `.unbounded` (every change is kept).
    ///   - isolation: Where `body` runs; *default* the caller's.
    ///   - body: Receives the stream; what it returns is returned.
    public func withChanges<R>(
        bufferingPolicy: AsyncStream<Set<String>>.Continuation.BufferingPolicy = .unbounded,
        isolation: isolated (any Actor)? = #isolation,
        _ body: (AsyncStream<Set<String>>) async throws -> R
    ) async rethrows -> R {
        let (changes, continuation) =
            sync?.hub.changes(bufferingPolicy: bufferingPolicy) ?? AsyncStream<Set<String>>.makeStream()
        if sync == nil { continuation.finish() }
        defer { continuation.finish() }
        return try await body(changes)
    }

    /// The throwing form of ``onChange(_:)``: a thrown error is ignored (it neither stops the
    /// subscription nor reaches another listener). Handle errors in the handler instead.
    @available(*, deprecated, message: "pass a non-throwing handler: a thrown error was always ignored")
    @_disfavoredOverload
    public func onChange(_ handler: @escaping @Sendable (Set<String>) throws -> Void) -> ChangeSubscription {
        guard let sync else { return ChangeSubscription {} }
        return sync.hub.onChange(handler)
    }

    /// A new, independent stream of the client's events from now on. It ends when the client
    /// is closed; offline it ends at once. Each call makes a stream of its own: call it once
    /// per consumer and keep the stream.
    ///
    /// ```swift
    /// for await event in client.events() {
    ///     if case .configurationChanged(let keys) = event { print("changed:", keys) }
    /// }
    /// ```
    ///
    /// - Parameter bufferingPolicy: how many events the stream keeps while its consumer is
    ///   behind; *default* `.unbounded` (every event is delivered).
    public func events(
        bufferingPolicy: AsyncStream<ClientEvent>.Continuation.BufferingPolicy = .unbounded
    ) -> AsyncStream<ClientEvent> {
        guard let sync else {
            let (stream, continuation) = AsyncStream<ClientEvent>.makeStream()
            continuation.finish()
            return stream
        }
        return sync.hub.events(bufferingPolicy: bufferingPolicy)
    }

    /// A new stream of the client's events at each access: use ``events(bufferingPolicy:)``,
    /// whose call makes that visible.
    @available(*, deprecated, renamed: "events()", message: "each access makes a new stream: call events() once")
    public var events: AsyncStream<ClientEvent> { events() }

    /// Counters: reads that did not succeed by outcome, and the control-plane sync.
    public var stats: FlagClientStats {
        var stats = FlagClientStats(sync: sync?.engine.stats ?? SyncStats())
        stats.reads = readCounters.stats
        stats.exposures = exposureRecorder?.counters ?? ExposureStats()
        stats.stream = sync?.streams?.stats ?? EventStreamStats()
        return stats
    }

    /// Stops polling and fetching, cancels a fetch in flight, runs the close hooks (exposure
    /// flush) and ends the event streams. Idempotent; never blocks. Reads keep answering from
    /// the last values.
    public func close() {
        sync?.close()
    }
}
