public import Configuration
public import Halyard

/// Halyard's flags as a read-only swift-configuration provider: a `ConfigReader` reads a flag
/// like any other configuration value, before or after other providers.
///
/// ```swift
/// let config = ConfigReader(providers: [
///     HalyardConfigProvider(client: client),       // flags first
///     EnvironmentVariablesProvider(),              // then the environment
/// ])
/// let limit = config.int(forKey: "upload.limit", default: 10)   // the flag "upload.limit"
/// ```
///
/// A configuration key names the flag whose key is its components joined with dots
/// (`upload.limit`). Over a ``FlagClient`` the values are the client's (its context); over a
/// ``FlagService`` the context is made from the key's context (``EvaluationContext/init(configContext:base:)``,
/// or the mapping given), the way swift-configuration's documentation targets a region or tier.
///
/// - A flag that is missing, served without a value or with an error (JSON `null`) gives no
///   value: the reader goes on to the next provider, then to its default.
/// - A value of another type than asked throws ``HalyardConfigError/typeMismatch(key:requested:actual:)``;
///   objects and arrays read as `string` are their canonical JSON; `bytes` are base64 strings.
/// - Every value read is recorded as an exposure, as the same flag read through the client is
///   (docs/integrations.md, "Configuration", says why).
///
/// Access patterns: ``value(forKey:type:)`` reads one pinned snapshot (never waits);
/// ``snapshot()`` pins one for many reads; ``fetchValue(forKey:type:)`` refreshes first (a
/// client: ``FlagClient/refresh()``; a service: ``FlagService/flags(for:)-(EvaluationContext)``, which
/// waits for a context not held yet); ``watchValue(forKey:type:updatesHandler:)`` and
/// ``watchSnapshot(updatesHandler:)`` emit the current value, then a new one whenever the
/// client reports the flag changed (``FlagClient/onChange(_:)``). Over a service, a value watch
/// follows the change signal of the key's context (``FlagService/withChanges(for:isolation:_:)-(EvaluationContext,_,_)``):
/// a new value when new values stored for that context change the flag (watching fetches
/// nothing: the context's values are refreshed as the service's reads and event stream
/// refresh them). A service's snapshot watch emits the current snapshot only: a service
/// snapshot spans every context, and no signal covers them all (take one per request, as
/// ``FlagService/flags(for:)-(EvaluationContext)`` is meant to be used).
@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
public struct HalyardConfigProvider: ConfigProvider {
    private enum Reader: Sendable {
        case client(FlagClient)
        case service(FlagService, @Sendable ([String: ConfigContextValue]) -> EvaluationContext)
    }

    private let reader: Reader

    /// `"HalyardConfigProvider[client]"` or `"HalyardConfigProvider[service]"`.
    public let providerName: String

    /// A provider of a client's flags (the client's context).
    public init(client: FlagClient) {
        reader = .client(client)
        providerName = "HalyardConfigProvider[client]"
    }

    /// A provider of a service's flags, for the context each key's context stands for.
    ///
    /// - Parameters:
    ///   - service: The service.
    ///   - base: The context a key's context adds to (``EvaluationContext/init(configContext:base:)``);
    ///     *default* anonymous.
    ///   - context: Makes the evaluation context of a key's context; *default* the mapping of
    ///     ``EvaluationContext/init(configContext:base:)`` over `base`.
    public init(
        service: FlagService, base: EvaluationContext = .anonymous,
        context: (@Sendable ([String: ConfigContextValue]) -> EvaluationContext)? = nil
    ) {
        reader = .service(service, context ?? { EvaluationContext(configContext: $0, base: base) })
        providerName = "HalyardConfigProvider[service]"
    }

    /// The first form, whose value watches re-read every `watchInterval`: watches now follow
    /// the service's change signal, and `watchInterval` and `clock` are not used.
    @available(*, deprecated, message: "watches follow the service's change signal: drop watchInterval and clock")
    public init(
        service: FlagService, base: EvaluationContext = .anonymous, watchInterval: Duration,
        clock: any HalyardClock = SystemClock(),
        context: (@Sendable ([String: ConfigContextValue]) -> EvaluationContext)? = nil
    ) {
        self.init(service: service, base: base, context: context)
    }

    /// The flag key a configuration key names: its components joined with dots.
    static func flagKey(_ key: AbsoluteConfigKey) -> String { key.components.joined(separator: ".") }

    /// One read of the flag `key` names, as `type`, through `flags` (a JSON read: it records the
    /// exposure a read of that flag records).
    static func lookup(_ key: AbsoluteConfigKey, _ type: ConfigType, in flags: some FlagReading) throws
        -> LookupResult
    {
        let name = flagKey(key)
        let value = try ConfigContent(flag: name, value: flags.json(name, default: .null), as: type)
        return LookupResult(encodedKey: name, value: value.map { ConfigValue($0, isSecret: false) })
    }

    /// The current value, from a snapshot pinned for this read.
    public func value(forKey key: AbsoluteConfigKey, type: ConfigType) throws -> LookupResult {
        try snapshotValue(forKey: key, type: type)
    }

    /// Refreshes (see the type's documentation), then reads.
    public func fetchValue(forKey key: AbsoluteConfigKey, type: ConfigType) async throws -> LookupResult {
        switch reader {
        case .client(let client):
            await client.refresh()
            return try snapshotValue(forKey: key, type: type)
        case .service(let service, let makeContext):
            return try Self.lookup(key, type, in: await service.flags(for: makeContext(key.context)))
        }
    }

    /// A snapshot of the values served now (see ``HalyardConfigSnapshot``).
    public func snapshot() -> any ConfigSnapshot { makeSnapshot() }

    /// The current value, then each new one (see the type's documentation).
    public func watchValue<Return: ~Copyable>(
        forKey key: AbsoluteConfigKey, type: ConfigType,
        updatesHandler: (_ updates: ConfigUpdatesAsyncSequence<Result<LookupResult, any Error>, Never>) async throws ->
            Return
    ) async throws -> Return {
        let (stream, continuation) = AsyncStream<Result<LookupResult, any Error>>
            .makeStream(bufferingPolicy: .bufferingNewest(1))
        let read: @Sendable () -> Result<LookupResult, any Error> = { [self] in
            Result { try snapshotValue(forKey: key, type: type) }
        }
        let flagKey = Self.flagKey(key)
        let stop: @Sendable () -> Void
        switch reader {
        case .client(let client):
            // Subscribe first, then read: a change between the two is not missed.
            let subscription = client.onChange { keys in
                if keys.contains(flagKey) { continuation.yield(read()) }
            }
            continuation.yield(read())
            stop = { subscription.cancel() }
        case .service(let service, let makeContext):
            // Subscribe first, then read: the forwarding task says when its scope is open.
            let context = makeContext(key.context)
            let (opened, open) = AsyncStream<Void>.makeStream()
            let forward = Task {
                await service.withChanges(for: context) { changes in
                    open.finish()
                    for await keys in changes where keys.contains(flagKey) { continuation.yield(read()) }
                }
                open.finish()
            }
            for await _ in opened {}
            continuation.yield(read())
            stop = { forward.cancel() }
        }
        defer {
            stop()
            continuation.finish()
        }
        return try await updatesHandler(ConfigUpdatesAsyncSequence(stream))
    }

    /// The current snapshot, then a new one at each change of the client's values (a service:
    /// the current one only; see the type's documentation).
    public func watchSnapshot<Return: ~Copyable>(
        updatesHandler: (_ updates: ConfigUpdatesAsyncSequence<any ConfigSnapshot, Never>) async throws -> Return
    ) async throws -> Return {
        let (stream, continuation) = AsyncStream<any ConfigSnapshot>.makeStream(bufferingPolicy: .bufferingNewest(1))
        var subscription: ChangeSubscription?
        if case .client(let client) = reader {
            subscription = client.onChange { [self] _ in continuation.yield(makeSnapshot()) }
        }
        continuation.yield(makeSnapshot())
        defer {
            subscription?.cancel()
            continuation.finish()
        }
        return try await updatesHandler(ConfigUpdatesAsyncSequence(stream))
    }

    private func makeSnapshot() -> HalyardConfigSnapshot {
        switch reader {
        case .client(let client):
            HalyardConfigSnapshot(providerName: providerName, source: .pinned(client.pinnedFlags()))
        case .service(let service, let makeContext):
            HalyardConfigSnapshot(
                providerName: providerName, source: .service(service, PinnedContexts(makeContext: makeContext)))
        }
    }

    private func snapshotValue(forKey key: AbsoluteConfigKey, type: ConfigType) throws -> LookupResult {
        guard case .client(let client) = reader else { return try makeSnapshot().value(forKey: key, type: type) }
        return try Self.lookup(key, type, in: client)  // one read is one snapshot's: no view to pin
    }
}
