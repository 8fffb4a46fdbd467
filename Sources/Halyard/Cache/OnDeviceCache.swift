import Dispatch
import Foundation

/// The on-device cache of one online client (docs/cache.md): finds the entry a context may be
/// served from, and writes served values back, on a serial queue of its own.
///
/// Every store call runs on that queue: never on a read, a publish, or the thread that created
/// the client. Writes are coalesced per slot (only the newest pending write of a slot is kept),
/// so a slow or stuck store holds at most one pending entry per slot in memory and delays
/// nothing but itself. Failures never reach the caller: a failing store is logged once, an
/// oversized entry is removed with one warning, and an unusable entry is ignored (and
/// overwritten by the next write).
final class OnDeviceCache: Sendable {
    struct Configuration: Sendable {
        var store: any CacheStore
        /// Contexts kept per namespace (LRU), at least 1.
        var maxContexts: Int
        /// Entries older than this are not served.
        var maxAge: Duration
        /// The control plane's base URL (part of the namespace).
        var baseURL: URL
        /// The key in force (part of the namespace; read when an operation runs).
        var key: @Sendable () -> String
        /// The install id (an anonymous context's slot); may read a file, so only on the queue.
        var installID: @Sendable () -> String
        var clock: any HalyardClock
        var log: HalyardLogHandler?
    }

    /// What the client asks to be written: the served flags of one context.
    struct Write: Sendable {
        var context: FittedContext
        var flags: [ServedFlag]
        var etag: String?
        var confirmedAt: Date
    }

    private enum Warning: Hashable {
        case storeFailed, oversized, unusable
    }

    private struct State {
        var pending: [String: (write: Write, namespace: String)] = [:]
        var order: [String] = []
        var scheduled = false
        var warned: Set<Warning> = []
        /// When each slot was last written by this client (to skip rewriting on every 304).
        var written: [String: Date] = [:]
    }

    let configuration: Configuration
    private let queue = DispatchQueue(label: "halyard.cache")
    private let state = Locked(State())

    init(configuration: Configuration) {
        var configuration = configuration
        configuration.maxContexts = max(configuration.maxContexts, 1)
        self.configuration = configuration
    }

    // MARK: - Names

    /// `baseURL` and key: two clients of different control planes or keys never share a name.
    static func namespace(baseURL: URL, key: String) -> String { "halyard-cache\n\(baseURL.absoluteString)\n\(key)" }

    /// The salted SHA-1 of the context's targeting key (of the install id when anonymous).
    static func targetingKeyHash(namespace: String, targetingKey: String, installID: String) -> String {
        let who = targetingKey.isEmpty ? "install\n\(installID)" : "key\n\(targetingKey)"
        return SHA1.hexDigest("\(namespace)\ntargeting-key\n\(who)")
    }

    /// The entry name of a context slot: the first 12 hex digits of a SHA-1.
    static func slotName(namespace: String, kind: String, targetingKeyHash: String) -> String {
        String(SHA1.hexDigest("\(namespace)\nslot\n\(kind)\n\(targetingKeyHash)").prefix(12))
    }

    /// The entry name of the namespace's LRU index.
    static func indexName(namespace: String) -> String {
        String(SHA1.hexDigest("\(namespace)\nindex").prefix(12))
    }

    private func names(for context: FittedContext, namespace: String) -> (slot: String, hash: String) {
        let hash = Self.targetingKeyHash(
            namespace: namespace, targetingKey: context.targetingKey,
            installID: context.targetingKey.isEmpty ? configuration.installID() : "")
        return (Self.slotName(namespace: namespace, kind: context.kind, targetingKeyHash: hash), hash)
    }

    // MARK: - Loading

    /// Looks up the entry `context` may be served from, on the cache queue, and calls
    /// `completion` there with it (nil when there is none that may be served).
    func load(_ context: FittedContext, completion: @escaping @Sendable (CacheEnvelope?) -> Void) {
        let namespace = Self.namespace(baseURL: configuration.baseURL, key: configuration.key())
        queue.async { [self] in completion(loadNow(context, namespace: namespace)) }
    }

    /// The blocking lookup (call on the cache queue, or in tests).
    func loadNow(_ context: FittedContext, namespace: String) -> CacheEnvelope? {
        let (slot, hash) = names(for: context, namespace: namespace)
        let store = configuration.store
        let data: Data?
        do {
            data = try store.read(slot)
        } catch {
            warnOnce(.storeFailed, "the cache store failed (\(error)); the client goes on from memory")
            return nil
        }
        guard let data else { return nil }
        let envelope: CacheEnvelope
        do {
            envelope = try CacheEnvelope.decode(data, limit: store.sizeLimit)
        } catch .tooLarge {
            warnOnce(.oversized, "a cache entry larger than \(store.sizeLimit) bytes was removed")
            try? store.remove(slot)
            return nil
        } catch {
            warnOnce(.unusable, "an unusable cache entry was ignored (\(error)); it will be overwritten")
            return nil
        }
        // Another key, control plane or context (a copied or colliding file) never matches.
        guard envelope.kind == context.kind, envelope.targetingKeyHash == hash else { return nil }
        let age = configuration.clock.wallNow.timeIntervalSince(envelope.writtenDate)
        let maxAge =
            Double(configuration.maxAge.components.seconds)
            + Double(configuration.maxAge.components.attoseconds) / 1e18
        // An entry from the future (clock changed) is accepted within five minutes of skew.
        guard age < maxAge, age > -300 else { return nil }
        return envelope
    }

    // MARK: - Writing

    /// Queues a write of served values (coalesced per slot; never blocks).
    func save(_ write: Write) {
        let namespace = Self.namespace(baseURL: configuration.baseURL, key: configuration.key())
        let key = "\(namespace)\n\(write.context.kind)\n\(write.context.targetingKey)"
        let schedule = state.withLock { s -> Bool in
            if s.pending.updateValue((write, namespace), forKey: key) == nil { s.order.append(key) }
            if s.scheduled { return false }
            s.scheduled = true
            return true
        }
        if schedule { queue.async { [self] in drain() } }
    }

    /// Like ``save(_:)`` after a 304, but only when this client last wrote the slot more than
    /// `minimumInterval` ago (a 304 on every poll does not rewrite the file every time).
    func confirm(_ write: Write, minimumInterval: TimeInterval) {
        let namespace = Self.namespace(baseURL: configuration.baseURL, key: configuration.key())
        let key = "\(namespace)\n\(write.context.kind)\n\(write.context.targetingKey)"
        let last = state.withLock { $0.written[key] }
        if let last, write.confirmedAt.timeIntervalSince(last) < minimumInterval { return }
        save(write)
    }

    /// Runs every pending write, on the queue.
    private func drain() {
        while true {
            let next = state.withLock { s -> (String, Write, String)? in
                guard !s.order.isEmpty else {
                    s.scheduled = false
                    return nil
                }
                let key = s.order.removeFirst()
                guard let entry = s.pending.removeValue(forKey: key) else { return nil }
                return (key, entry.write, entry.namespace)
            }
            guard let (key, write, namespace) = next else {
                if state.withLock({ $0.scheduled }) { continue }
                return
            }
            if writeNow(write, namespace: namespace) {
                state.withLock { s in
                    // Bounded: a long-lived client that switches among many contexts forgets
                    // the oldest times (a forgotten slot is merely rewritten on its next 304).
                    if s.written.count >= 64 { s.written.removeAll() }
                    s.written[key] = write.confirmedAt
                }
            }
        }
    }

    /// Writes one entry and updates the LRU index (call on the cache queue, or in tests).
    @discardableResult
    func writeNow(_ write: Write, namespace: String) -> Bool {
        let store = configuration.store
        let (slot, hash) = names(for: write.context, namespace: namespace)
        let envelope = CacheEnvelope(
            fingerprint: write.context.fingerprint, kind: write.context.kind, targetingKeyHash: hash,
            etag: write.etag, writtenAt: Int64((write.confirmedAt.timeIntervalSince1970 * 1000).rounded()),
            flags: write.flags)
        let data = envelope.encoded()
        do {
            guard data.count <= store.sizeLimit else {
                warnOnce(
                    .oversized,
                    "a cache entry of \(data.count) bytes exceeds the \(store.sizeLimit)-byte limit; not cached")
                try store.remove(slot)
                return false
            }
            try store.write(data, for: slot)
            let indexName = Self.indexName(namespace: namespace)
            var index = CacheIndex(data: try? store.read(indexName))
            let evicted = index.touch(slot, capacity: configuration.maxContexts)
            for old in evicted { try store.remove(old) }
            try store.write(index.encoded, for: indexName)
            return true
        } catch {
            warnOnce(.storeFailed, "the cache store failed (\(error)); the client goes on from memory")
            return false
        }
    }

    /// Waits until every write queued so far is done (tests and benchmarks).
    func waitForWrites() {
        queue.sync {}
        while state.withLock({ $0.scheduled }) { queue.sync {} }
    }

    private func warnOnce(_ warning: Warning, _ message: String) {
        let first = state.withLock { $0.warned.insert(warning).inserted }
        if first { configuration.log?(.warning, message) }
    }
}
