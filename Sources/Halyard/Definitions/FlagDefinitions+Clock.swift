extension FlagDefinitions {
    /// Whether a targeting rule may read `$flagd.timestamp`, so that its result can change with
    /// time alone (``LogicNode/mayReadTimestamp``: a `var` whose path starts at `$flagd`, the
    /// whole data, or a computed path; conservative inside `map`/`filter`/`reduce`). A service
    /// that keeps one context's results between requests (docs/in-process.md, "Per-context
    /// results") reuses them only within the second they were evaluated in when this is true.
    var readsTimestamp: Bool {
        flags.values.contains { flag in flag.enabled && flag.readsTimestamp }
    }
}
