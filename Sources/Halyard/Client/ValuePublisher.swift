import Foundation

/// The one place an online client publishes snapshots, so that precedence holds whatever order
/// the answers arrive in (docs/cache.md): network > cache > bootstrap > the code default.
///
/// Network values are always published. Cached values are published only while no network
/// values were published for the context they are for (and, after an `identify`, only for that
/// `identify`). Bootstrap values are published once, at creation, into an empty store. The
/// lock orders publishes; reads never take it.
final class ValuePublisher: Sendable {
    private struct State {
        /// Bumped by each `identify`; a cache lookup publishes only within its generation.
        var generation: UInt64 = 0
        /// The fingerprint of the current context (nil when it is invalid).
        var fingerprint: String?
        /// Network values were published for ``fingerprint`` in this generation, or were
        /// already served for the same kind and targeting key when the generation began.
        var networkServed = false
        /// The flags, as the control plane served them, behind the `CACHED` snapshot in force.
        var cached: (fingerprint: String, flags: [ServedFlag])?
        /// Recent contexts by fingerprint (what a cache write needs: kind, targeting key).
        var contexts: [(fingerprint: String, context: FittedContext)] = []
    }

    private let store: SnapshotStore
    /// The on-device cache, nil when it is off.
    let cache: OnDeviceCache?
    private let state = Locked(State())

    /// A 304 rewrites the cache entry only when this client wrote it longer ago than this.
    static let confirmRewriteInterval: TimeInterval = 3600

    init(store: SnapshotStore, cache: OnDeviceCache?) {
        self.store = store
        self.cache = cache
    }

    /// What ``begin(_:identify:)`` decided.
    struct Beginning: Sendable, Hashable {
        /// The generation a cache lookup for the new context publishes in.
        var generation: UInt64
        /// Whether the new context's cache entry may be looked up and served: not when the
        /// values served are the network's for the same kind and targeting key (docs/cache.md,
        /// "`identify`": a same-context identify never replaces them with disk values).
        var lookUpCache: Bool
    }

    /// The context in force changed (start or `identify`); returns the new generation and
    /// whether the cache may serve the new context until its fetch completes.
    @discardableResult
    func begin(_ context: FittedContext?, identify: Bool) -> Beginning {
        state.withLock { s in
            if identify { s.generation &+= 1 }
            // The network's values for this very user (kind and targeting key) stay served until
            // the new fetch answers: the disk holds at best the same values, at worst older ones.
            var sameSubject = false
            if identify, let context, let current = store.currentSnapshot, current.source == .network,
                let served = s.contexts.last(where: { $0.fingerprint == current.contextFingerprint })?.context
            {
                sameSubject = served.kind == context.kind && served.targetingKey == context.targetingKey
            }
            s.fingerprint = context?.fingerprint
            s.networkServed = sameSubject
            if let context {
                s.contexts.removeAll { $0.fingerprint == context.fingerprint }
                s.contexts.append((context.fingerprint, context))
                if s.contexts.count > 8 { s.contexts.removeFirst(s.contexts.count - 8) }
            }
            return Beginning(generation: s.generation, lookUpCache: !sameSubject)
        }
    }

    /// Publishes bootstrap values into an empty store (reason `DEFAULT`).
    func publishBootstrap(_ values: [String: JSONValue], fingerprint: String) {
        guard !values.isEmpty else { return }
        let flags = values.sorted { $0.key < $1.key }.map {
            ServedFlag(key: $0.key, value: $0.value, reason: .defaultValue)
        }
        state.withLock { _ in
            guard store.currentSnapshot == nil else { return }
            store.publish(Snapshot(flags: flags, source: .bootstrap, contextFingerprint: fingerprint))
        }
    }

    /// Publishes network values; returns the changed keys (against the flags as served, when
    /// the snapshot replaced was loaded from the cache: a `CACHED` reason alone is no change).
    func publishNetwork(_ values: SyncedValues) -> Set<String> {
        let (changed, context) = state.withLock { s -> (Set<String>, FittedContext?) in
            let previous = store.currentSnapshot
            var (snapshot, changed) = Snapshot.next(
                after: previous, flags: values.flags, source: .network, confirmedAt: values.confirmedAt,
                contextFingerprint: values.fingerprint, etag: values.etag)
            if previous?.source == .cache, let cached = s.cached {
                changed = Self.changedKeys(from: cached.flags, to: values.flags)
            }
            store.publish(snapshot)
            s.cached = nil
            if values.fingerprint == s.fingerprint { s.networkServed = true }
            return (changed, s.contexts.last { $0.fingerprint == values.fingerprint }?.context)
        }
        if let cache, let context {
            cache.save(
                .init(
                    context: context, flags: values.flags, etag: values.etag, confirmedAt: values.confirmedAt,
                    key: values.key))
        }
        return changed
    }

    /// A 304 confirmed the values held for `confirmation.fingerprint`: values served from the
    /// cache are re-published as the control plane's (their own reasons, no `CACHED`); returns
    /// the changed keys (none: the results are the ones cached).
    func confirmed(_ confirmation: SyncedConfirmation) -> Set<String> {
        let (flags, context) = state.withLock { s -> ([ServedFlag]?, FittedContext?) in
            guard let current = store.currentSnapshot, current.contextFingerprint == confirmation.fingerprint else {
                return (nil, nil)
            }
            let context = s.contexts.last { $0.fingerprint == confirmation.fingerprint }?.context
            switch current.source {
            case .cache:
                guard let cached = s.cached, cached.fingerprint == confirmation.fingerprint else { return (nil, nil) }
                let (snapshot, _) = Snapshot.next(
                    after: current, flags: cached.flags, source: .network, confirmedAt: confirmation.confirmedAt,
                    contextFingerprint: confirmation.fingerprint, etag: confirmation.etag)
                store.publish(snapshot)
                s.cached = nil
                if confirmation.fingerprint == s.fingerprint { s.networkServed = true }
                return (cached.flags, context)
            case .network:
                return (current.flags, context)
            case .offline, .bootstrap:
                return (nil, nil)
            }
        }
        if let cache, let flags, let context {
            cache.confirm(
                .init(
                    context: context, flags: flags, etag: confirmation.etag, confirmedAt: confirmation.confirmedAt,
                    key: confirmation.key),
                minimumInterval: Self.confirmRewriteInterval)
        }
        return []
    }

    /// Publishes a cache entry (reason `CACHED`) unless network values were published for the
    /// current context since `generation` began, or a newer `identify` started. Returns the
    /// changed keys, or nil when nothing was published.
    func publishCached(_ envelope: CacheEnvelope, generation: UInt64) -> Set<String>? {
        let flags = envelope.flags.map { flag -> ServedFlag in
            var served = flag
            if served.errorCode == nil { served.reason = .cached }
            return served
        }
        return state.withLock { s -> Set<String>? in
            guard generation == s.generation, !s.networkServed else { return nil }
            let (snapshot, changed) = Snapshot.next(
                after: store.currentSnapshot, flags: flags, source: .cache, confirmedAt: nil,
                contextFingerprint: envelope.fingerprint, etag: envelope.etag)
            store.publish(snapshot)
            s.cached = (envelope.fingerprint, envelope.flags)
            return changed
        }
    }

    /// The keys whose value, variant, reason or error differ between two flag lists, plus the
    /// keys only one of them has (``ServedFlag/changedKeys(from:to:)``).
    static func changedKeys(from old: [ServedFlag], to new: [ServedFlag]) -> Set<String> {
        ServedFlag.changedKeys(from: old, to: new)
    }
}
