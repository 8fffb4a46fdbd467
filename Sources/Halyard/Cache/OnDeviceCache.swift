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
        /// Contexts kept per namespace (LRU), at least 1 and at most ``OnDeviceCache/maxSlots``.
        var maxContexts: Int
        /// Entries older than this are not served.
        var maxAge: Duration
        /// The control plane's base URL (part of the namespace).
        var baseURL: URL
        /// The app id (part of the namespace when set: the control plane may answer by app).
        var appID: String? = nil
        /// The key in force (part of the namespace of a lookup; a write uses the key of the
        /// request that fetched its values, ``Write/key``).
        var key: @Sendable () -> String
        /// The install id (an anonymous context's slot); may read a file, so only on the queue.
        var installID: @Sendable () -> String
        var clock: any HalyardClock
        var log: HalyardLogRecordHandler?
    }

    /// What the client asks to be written: the served flags of one context.
    struct Write: Sendable {
        var context: FittedContext
        var flags: [ServedFlag]
        var etag: String?
        var confirmedAt: Date
        /// The key of the request that fetched the values (nil: the key in force now). The
        /// entry is saved under that key's namespace, even if `setKey` ran meanwhile.
        var key: String? = nil
    }

    private enum Warning: Hashable {
        case storeFailed, oversized, unusable, refused
    }

    private struct State {
        var pending: [String: (write: Write, namespace: String)] = [:]
        var order: [String] = []
        var scheduled = false
        /// A write taken from ``pending`` is being performed.
        var writing = false
        var warned: Set<Warning> = []
        /// When each slot was last written by this client (to skip rewriting on every 304).
        var written: [String: Date] = [:]
        /// Called once no write is pending or running (``whenIdle(_:)``).
        var idleWaiters: [@Sendable () -> Void] = []
        /// The store refused its folder: the cache is off for this client.
        var disabled = false
        /// Namespaces this client wrote to (the last is the one in force), at most 8.
        var namespaces: [String] = []
        /// Namespaces swept already (the sweep runs once per namespace and client).
        var swept: Set<String> = []
    }

    /// The most slots a namespace keeps, whatever `maxCachedContexts` says (the index must
    /// stay under its 64 KiB limit, and a device has no use for more).
    static let maxSlots = 1_000
    /// The most writes waiting for the store, all slots together (a stuck store holds no more).
    static let maxPendingWrites = 64
    /// The most names a sweep or an index rebuild looks at.
    static let maxSweptNames = 1_024

    let configuration: Configuration
    private let queue = DispatchQueue(label: "halyard.cache")
    private let state = Locked(State())

    init(configuration: Configuration) {
        var configuration = configuration
        configuration.maxContexts = min(max(configuration.maxContexts, 1), Self.maxSlots)
        self.configuration = configuration
    }

    // MARK: - Names

    /// `baseURL`, key and (when set) app id: two clients of different control planes, keys or
    /// apps never share a name. Without an app id the namespace is the one of format 1.
    static func namespace(baseURL: URL, key: String, appID: String? = nil) -> String {
        let base = "halyard-cache\n\(baseURL.absoluteString)\n\(key)"
        guard let appID else { return base }
        return base + "\napp\n\(appID)"
    }

    private func namespace(key: String) -> String {
        Self.namespace(baseURL: configuration.baseURL, key: key, appID: configuration.appID)
    }

    /// The fingerprint as stored: salted with the namespace, so that the fingerprint of a
    /// context that is only a targeting key cannot be reversed by a dictionary of keys (the
    /// salted targeting-key hash beside it would be moot otherwise). Not a secret: the
    /// namespace holds the key, which ships in the app.
    static func storedFingerprint(namespace: String, fingerprint: String) -> String {
        SHA1.hexDigest("\(namespace)\nfingerprint\n\(fingerprint)")
    }

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
        let namespace = namespace(key: configuration.key())
        queue.async { [self] in completion(loadNow(context, namespace: namespace)) }
    }

    /// The blocking lookup (call on the cache queue, or in tests).
    func loadNow(_ context: FittedContext, namespace: String) -> CacheEnvelope? {
        if state.withLock({ $0.disabled }) { return nil }
        let (slot, hash) = names(for: context, namespace: namespace)
        let store = configuration.store
        let data: Data?
        do {
            data = try store.read(slot)
        } catch {
            failed(error)
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
        guard isFresh(envelope) else { return nil }
        // The stored fingerprint is salted: the entry is this very context's when it matches
        // the salted current one. Otherwise (other attributes, or an entry written before the
        // salt with a plain fingerprint) the values are served for the current context but
        // without their ETag, so no `If-None-Match` can confirm another context's values.
        var served = envelope
        if envelope.fingerprint != Self.storedFingerprint(namespace: namespace, fingerprint: context.fingerprint) {
            served.etag = nil
        }
        served.fingerprint = context.fingerprint
        return served
    }

    /// Whether an entry is younger than the max age; one from the future (the clock changed) is
    /// accepted within five minutes of skew.
    private func isFresh(_ envelope: CacheEnvelope, maxAge limit: Duration? = nil) -> Bool {
        let age = configuration.clock.wallNow.timeIntervalSince(envelope.writtenDate)
        let limit = limit ?? configuration.maxAge
        let maxAge = limit.fractionalSeconds
        return age < maxAge && age > -300
    }

    /// How old another namespace's entry must be before a sweep removes it: its own client's
    /// `cacheMaxAge` is not known here (two apps sharing a folder may keep theirs 1 h and 7 d),
    /// so only an entry no client would still serve — and an abandoned namespace — goes.
    static let foreignMaxAge: Duration = .seconds(30 * 24 * 3600)

    // MARK: - Writing

    /// Queues a write of served values (coalesced per slot, at most ``maxPendingWrites`` in
    /// all: the oldest is dropped; never blocks).
    func save(_ write: Write) {
        let namespace = namespace(key: write.key ?? configuration.key())
        let key = "\(namespace)\n\(write.context.kind)\n\(write.context.targetingKey)"
        let limit = min(configuration.maxContexts, Self.maxPendingWrites)
        let schedule = state.withLock { s -> Bool in
            if s.disabled { return false }
            if s.pending.updateValue((write, namespace), forKey: key) == nil { s.order.append(key) }
            while s.order.count > limit {
                // An older slot's write: with more slots than the LRU keeps, it would be evicted.
                s.pending[s.order.removeFirst()] = nil
            }
            if s.scheduled { return false }
            s.scheduled = true
            return true
        }
        if schedule { queue.async { [self] in drain() } }
    }

    /// Like ``save(_:)`` after a 304, but only when this client last wrote the slot more than
    /// `minimumInterval` ago (a 304 on every poll does not rewrite the file every time).
    func confirm(_ write: Write, minimumInterval: TimeInterval) {
        let namespace = namespace(key: write.key ?? configuration.key())
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
                s.writing = true
                return (key, entry.write, entry.namespace)
            }
            guard let (key, write, namespace) = next else {
                if state.withLock({ $0.scheduled }) { continue }
                notifyIfIdle()
                return
            }
            let ok = writeNow(write, namespace: namespace)
            state.withLock { s in
                s.writing = false
                guard ok else { return }
                // Bounded: a long-lived client that switches among many contexts forgets
                // the oldest times (a forgotten slot is merely rewritten on its next 304).
                if s.written.count >= 64 { s.written.removeAll() }
                s.written[key] = write.confirmedAt
            }
        }
    }

    /// Writes not finished yet (queued or being performed).
    var unfinishedWrites: Int { state.withLock { $0.pending.count + ($0.writing ? 1 : 0) } }

    /// Calls `done` (on any thread) once no write is queued or running: at once when idle.
    /// `shutdown(timeout:)` waits for it, within its deadline.
    func whenIdle(_ done: @escaping @Sendable () -> Void) {
        let now = state.withLock { s -> Bool in
            if !s.scheduled && !s.writing && s.pending.isEmpty { return true }
            s.idleWaiters.append(done)
            return false
        }
        if now { done() }
    }

    private func notifyIfIdle() {
        let waiters = state.withLock { s -> [@Sendable () -> Void] in
            guard !s.scheduled && !s.writing && s.pending.isEmpty else { return [] }
            defer { s.idleWaiters.removeAll() }
            return s.idleWaiters
        }
        for waiter in waiters { waiter() }
    }

    /// Writes one entry and updates the LRU index (call on the cache queue, or in tests).
    ///
    /// An index that cannot be read is rebuilt from the entries present; a failed removal of an
    /// evicted slot does not stop the index write (the sweep removes the orphan later); an
    /// index that did not change is not rewritten. The first write of a namespace by this
    /// client sweeps the folder (``sweep(namespace:abandoned:)``).
    @discardableResult
    func writeNow(_ write: Write, namespace: String) -> Bool {
        if state.withLock({ $0.disabled }) { return false }
        let store = configuration.store
        let (slot, hash) = names(for: write.context, namespace: namespace)
        let envelope = CacheEnvelope(
            fingerprint: Self.storedFingerprint(namespace: namespace, fingerprint: write.context.fingerprint),
            kind: write.context.kind, targetingKeyHash: hash,
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
            // A read failure counts as a lost index: it is rebuilt and rewritten.
            let parsed = CacheIndex.parse(try? store.read(indexName))
            var index = parsed ?? rebuiltIndex(namespace: namespace)
            let before = index
            let evicted = index.touch(slot, capacity: configuration.maxContexts)
            for old in evicted { try? store.remove(old) }
            if index != before || parsed == nil {
                try store.write(index.encoded, for: indexName)
            }
        } catch {
            failed(error)
            return false
        }
        let abandoned = state.withLock { s -> [String]? in
            s.namespaces.removeAll { $0 == namespace }
            s.namespaces.append(namespace)
            if s.namespaces.count > 8 { s.namespaces.removeFirst(s.namespaces.count - 8) }
            guard s.swept.insert(namespace).inserted else { return nil }
            return s.namespaces.filter { $0 != namespace }
        }
        if let abandoned { sweep(namespace: namespace, abandoned: abandoned) }
        return true
    }

    // MARK: - Index and sweeps

    /// The namespace's slots among the entries present, most recently written first: what the
    /// index would say had it not been lost (unreadable, another version, too large).
    private func rebuiltIndex(namespace: String) -> CacheIndex {
        let store = configuration.store
        guard let names = try? store.entryNames() else { return CacheIndex() }
        let indexName = Self.indexName(namespace: namespace)
        var mine: [(name: String, writtenAt: Int64)] = []
        for name in names.prefix(Self.maxSweptNames) where CacheIndex.isSlotName(name) && name != indexName {
            guard let data = try? store.read(name),
                let envelope = try? CacheEnvelope.decode(data, limit: store.sizeLimit),
                Self.slotName(namespace: namespace, kind: envelope.kind, targetingKeyHash: envelope.targetingKeyHash)
                    == name
            else { continue }
            mine.append((name, envelope.writtenAt))
        }
        mine.sort { $0.writtenAt != $1.writtenAt ? $0.writtenAt > $1.writtenAt : $0.name < $1.name }
        return CacheIndex(slots: mine.map(\.name))
    }

    /// Removes, among the entries present: this namespace's entries its index does not list
    /// (orphans of a lost index or a failed removal); this namespace's entries older than its max
    /// age, and another namespace's older than ``foreignMaxAge`` (or than this max age if
    /// longer); the entries and index of `abandoned` namespaces (this client's earlier keys);
    /// and indexes none of whose slots is present any more. Entries are recognised by their
    /// names (a slot's name is derived from its namespace, kind and targeting-key hash), so
    /// other software's files in a shared folder are never touched; undecodable entries are
    /// left alone (they are overwritten when their slot is written).
    func sweep(namespace: String, abandoned: [String]) {
        let store = configuration.store
        guard let listed = try? store.entryNames() else { return }
        let names = listed.prefix(Self.maxSweptNames).filter(CacheIndex.isSlotName)
        let indexName = Self.indexName(namespace: namespace)
        let index = CacheIndex.parse(try? store.read(indexName))
        let abandonedIndexes = Set(abandoned.map { Self.indexName(namespace: $0) })
        var present = Set(names)
        var indexes: [(String, CacheIndex)] = []
        func remove(_ name: String) {
            if (try? store.remove(name)) != nil { present.remove(name) }
        }
        for name in names where name != indexName {
            if abandonedIndexes.contains(name) {
                remove(name)
                continue
            }
            guard let data = try? store.read(name) else { continue }
            if let envelope = try? CacheEnvelope.decode(data, limit: store.sizeLimit) {
                func isSlot(of ns: String) -> Bool {
                    Self.slotName(namespace: ns, kind: envelope.kind, targetingKeyHash: envelope.targetingKeyHash)
                        == name
                }
                let mine = isSlot(of: namespace)
                let orphan = mine && index.map { !$0.slots.contains(name) } ?? false
                // The max age is this namespace's own; another's entry goes once no client serves it.
                let fresh =
                    mine ? isFresh(envelope) : isFresh(envelope, maxAge: max(configuration.maxAge, Self.foreignMaxAge))
                if !fresh || orphan || abandoned.contains(where: isSlot(of:)) { remove(name) }
            } else if let other = CacheIndex.parse(data) {
                indexes.append((name, other))
            }
        }
        for (name, other) in indexes where !other.slots.contains(where: present.contains) { remove(name) }
    }

    /// Waits until every write queued so far is done (tests and benchmarks).
    func waitForWrites() {
        queue.sync {}
        while state.withLock({ $0.scheduled }) { queue.sync {} }
    }

    /// A store failure: logged once; a refused folder turns the cache off for this client.
    private func failed(_ error: any Error) {
        if let refusal = error as? CacheStoreError, case .folderRefused = refusal {
            state.withLock { $0.disabled = true }
            warnOnce(.refused, "the cache folder was refused (\(refusal)); the on-device cache is off for this client")
        } else {
            warnOnce(.storeFailed, "the cache store failed (\(error)); the client goes on from memory")
        }
    }

    private func warnOnce(_ warning: Warning, _ message: String) {
        let first = state.withLock { $0.warned.insert(warning).inserted }
        if first {
            let reason =
                switch warning {
                case .storeFailed: "store_failed"
                case .oversized: "oversized_entry"
                case .unusable: "unusable_entry"
                case .refused: "folder_refused"
                }
            configuration.log?(HalyardLogRecord(.warning, message, .cache, [HalyardLogRecord.Key.reason: reason]))
        }
    }
}
