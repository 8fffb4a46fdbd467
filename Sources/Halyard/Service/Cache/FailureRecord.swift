/// A context without values that failed (400, 403, a failed cold fetch): why it serves
/// defaults and when it may be fetched again. Kept in its shard's own small table, apart from
/// the entries: it never evicts a servable entry, takes no room in `maxContexts` or
/// `maxCacheBytes`, and no admission policy refuses it (docs/service.md, "Failure records").
struct FailureRecord: Sendable, Hashable {
    /// What the context is served meanwhile.
    var code: FlagErrorCode
    /// No fetch for this context before this time (monotonic).
    var retryAt: Duration
    /// Consecutive failed fetches (its backoff step).
    var failures: Int
}
