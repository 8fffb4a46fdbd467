package import Foundation

/// The names of a ``SharedTier``'s entries and leases, and the key of their MAC (SPEC §15).
extension SharedTier {
    /// The names and the MAC key of one SDK key's entries.
    package struct Keys: Sendable {
        /// A digest of the length-prefixed base URL, SDK key and app id (never the key).
        var namespace: String
        /// The MAC key, derived from the SDK key.
        var secret: [UInt8]
        /// The first part of every key (``SharedCache/keyPrefix``).
        var prefix = "halyard"

        package init(baseURL: URL, key: String, appID: String?, prefix: String = "halyard") {
            self.prefix = prefix
            func prefixed(_ s: String) -> String { "\(s.utf8.count):\(s)" }
            let material = prefixed(baseURL.absoluteString) + prefixed(key) + prefixed(appID ?? "")
            namespace = SHA1.hexDigest("halyard-l2 namespace\n" + material)
            secret = SharedEntry.hmac(Array(key.utf8), Array("halyard-l2 secret\n\(namespace)".utf8))
        }

        /// The entry id of a context: a MAC of its fingerprint, so that whoever reads Redis
        /// cannot test whether a known context has an entry.
        func id(_ fingerprint: String) -> String {
            SHA1.hex(SharedEntry.hmac(secret, Array("fingerprint\n\(fingerprint)".utf8)))
        }

        /// `<prefix>:v1:<namespace>:{<id>}` (SPEC §15's `halyard:v1:` names): the id is the key's hash tag, so a context's entry and
        /// lease are in one Redis Cluster slot and contexts spread over the slots (a later
        /// Cluster mode needs no migration).
        func entryKey(_ id: String) -> [UInt8] { Array("\(prefix):v1:\(namespace):{\(id)}".utf8) }
        /// The entry's key and `:lease`.
        func leaseKey(_ id: String) -> [UInt8] { Array("\(prefix):v1:\(namespace):{\(id)}:lease".utf8) }
    }
}
