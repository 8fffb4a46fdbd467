/// The flag configuration a `refetchEvaluation` event names (SPEC §14): its `etag` and its
/// `lastModified`, each as received (a string verbatim, a number as its digits). The bulk request
/// an event triggers forwards them as the `flagConfigEtag` / `flagConfigLastModified` query
/// parameters (``OFREPRequestBuilder/endpoint(_:flagConfig:)``), so that a cache in front of the
/// control plane serves the new configuration. Only an event's fetch carries one: a (re)connect's
/// or an activation's has none (`nil`), and neither does an event that names neither.
struct FlagConfigVersion: Sendable, Hashable {
    /// The event's `etag`, sent as `flagConfigEtag`.
    let etag: String?
    /// The event's `lastModified`, sent as `flagConfigLastModified`.
    let lastModified: String?

    /// The version naming `etag` and `lastModified`; `nil` when it names neither (no parameter
    /// to forward).
    init?(etag: String?, lastModified: String?) {
        guard etag != nil || lastModified != nil else { return nil }
        self.etag = etag
        self.lastModified = lastModified
    }
}
