extension FlagServiceStats {
    /// What a service evaluating flag definitions in process did (``FlagServiceStats/definitions``;
    /// docs/in-process.md, "Stats"). The other groups keep their meaning: ``reads`` and
    /// ``exposures`` count as for any service, ``FlagServiceStats/cache`` and
    /// ``FlagServiceStats/fetching`` stay zero (no context is fetched), but for `coldWaits` /
    /// `coldWaitTimeouts` and `invalidContexts`.
    public struct DefinitionsStats: Sendable, Hashable {
        /// The source: loads, refusals (a malformed or schema-invalid document, the previous
        /// definitions kept), not-modified checks, failures, the last error.
        public var source = DefinitionsSourceStats()
        /// The version of the definitions in use: 1 for the first document loaded, one more
        /// for each later one (0 before the first).
        public var generation = 0
        /// The flags in the definitions in use.
        public var flagCount = 0
        /// Contexts whose flags were evaluated: a context's first read, its first read after
        /// the definitions changed, or after its results were evicted (and, when a rule reads
        /// `$flagd.timestamp`, its first read in a new second).
        public var contextsEvaluated = 0
        /// `flags(for:)` / `flagsIfCached(for:)` calls served the results held for the context.
        public var resultsReused = 0
        /// Targeting rules run (a flag without targeting, or disabled, is evaluated once per
        /// generation and not counted).
        public var evaluations = 0
        /// Contexts whose results are held now.
        public var contextsHeld = 0
        /// Estimated bytes of those results (within ``FlagServiceOptions/maxCacheBytes``).
        public var bytesHeld = 0
        /// Results dropped to stay within ``FlagServiceOptions/maxContexts`` /
        /// ``FlagServiceOptions/maxCacheBytes`` (a later read evaluates again; no request).
        public var evictions = 0

        /// Nothing done yet.
        public init() {}
    }
}
