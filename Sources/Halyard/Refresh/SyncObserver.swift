import Foundation

/// New served flags for the engine's owner to publish.
struct SyncedValues: Sendable {
    /// The served flags, one per key (as decoded).
    var flags: [ServedFlag]
    /// The fingerprint of the fitted context they were served for.
    var fingerprint: String
    /// The ETag the control plane sent with them.
    var etag: String?
    /// When the control plane confirmed them (wall clock).
    var confirmedAt: Date
    /// The key the request that fetched them carried (the on-device cache saves them under
    /// that key's namespace, even if `setKey` ran meanwhile).
    var key: String? = nil
}

/// A 304 confirmed the values held for `fingerprint`.
struct SyncedConfirmation: Sendable {
    /// The fingerprint of the fitted context the confirmed values are for.
    var fingerprint: String
    /// The ETag in force.
    var etag: String?
    /// When the control plane confirmed them (wall clock).
    var confirmedAt: Date
    /// The key the request that was answered 304 carried.
    var key: String? = nil
}

/// How the engine reports to its owner (the client). Every callback runs off the engine's lock,
/// in order, from one thread at a time.
struct SyncObserver: Sendable {
    /// Publishes new values and returns the keys whose served result changed (see
    /// `Snapshot.next(after:...)`); the engine then emits ``ClientEvent/configurationChanged(_:)``
    /// when that set is not empty.
    var publish: @Sendable (SyncedValues) -> Set<String>
    /// A 304 confirmed the held values; returns the keys whose served result changed (values
    /// served from the on-device cache are re-published as confirmed), like ``publish``.
    var confirmed: @Sendable (SyncedConfirmation) -> Set<String> = { _ in [] }
    /// An event, in the order it happened.
    var event: @Sendable (ClientEvent) -> Void = { _ in }
    /// The status changed (reported after the values it describes are published).
    var status: @Sendable (ClientStatus) -> Void = { _ in }
    /// The engine closed: no event follows.
    var closed: @Sendable () -> Void = {}
    /// The event streams a 200 advertised (possibly none), after its values were published.
    var eventStreams: @Sendable ([OFREPEventStream]) -> Void = { _ in }
}
