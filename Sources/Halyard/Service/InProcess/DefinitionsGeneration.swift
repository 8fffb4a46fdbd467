import Foundation

/// One published version of a service's flag definitions, with what every context's results
/// built from it share (docs/in-process.md, "Per-context results"): the sorted keys and their
/// one key table, and every result a flag can serve without failing, built here once as a
/// snapshot entry and a shared detail: the one result of a flag whose result does not depend on
/// the context (no targeting, or disabled), and for a flag with a rule one per variant and the
/// one of a null rule result. A context's evaluation picks them by slot. Immutable.
final class DefinitionsGeneration: Sendable {
    /// The compiled definitions.
    let definitions: FlagDefinitions
    /// 1 for the first definitions published, one more for each later publication.
    let number: UInt64
    /// When the definitions were loaded (wall clock): the `confirmedAt` of results built from them.
    let loadedAt: Date
    /// The flag keys, sorted: the order of every snapshot built from this generation.
    let keys: [String]
    /// The key table every snapshot of this generation shares.
    let table: FlagTable.Storage
    /// Per key (same order): the results a snapshot serves for it, built here once and shared by
    /// every snapshot of this generation.
    let results: [FlagResults]
    /// Whether some rule may read `$flagd.timestamp` (``FlagDefinitions/readsTimestamp``):
    /// results are then reused only within the second they were evaluated in.
    let readsTimestamp: Bool
    /// The number of flags with a rule to run per context.
    let targetedCount: Int

    /// A result built once: the snapshot entry (kind, scalar bits) and the detail (interned:
    /// shared, not counted in a snapshot's bytes).
    struct Prebuilt: Sendable {
        let entry: Snapshot.Entry
        let detail: EvaluationDetail

        init(_ served: ServedFlag) {
            entry = Snapshot.entry(for: served)
            detail = EvaluationDetail(served: served, interned: true)
        }
    }

    /// One flag's prebuilt results: a flag that runs no rule has its one result (``fixed``); a
    /// flag with a rule has one per variant (``FlagDefinition/variantIndex`` order) and the
    /// one of a null rule result.
    struct FlagResults: Sendable {
        let fixed: Prebuilt?
        let nullRule: Prebuilt?
        let matches: [Prebuilt]
    }

    init(definitions: FlagDefinitions, number: UInt64, loadedAt: Date) {
        self.definitions = definitions
        self.number = number
        self.loadedAt = loadedAt
        keys = definitions.keys
        table = FlagTable.Storage(keys: keys)
        var results: [FlagResults] = []
        results.reserveCapacity(keys.count)
        var targeted = 0
        for flag in definitions.ordered {
            if flag.rule != nil {
                // The results a rule can pick, built once: an evaluation for a context picks
                // one by slot (only a failure builds its own).
                results.append(
                    FlagResults(
                        fixed: nil, nullRule: Prebuilt(FlagDefinitions.nullRuleResult(flag)),
                        matches: flag.matchResults.map(Prebuilt.init)))
                targeted += 1
            } else {
                // A flag without a rule (or disabled) is a dictionary read of its static result:
                // the context is not looked at, so the result is built once here.
                results.append(FlagResults(fixed: Prebuilt(flag.staticResult), nullRule: nil, matches: []))
            }
        }
        self.results = results
        targetedCount = targeted
        readsTimestamp = definitions.readsTimestamp
    }

    /// Evaluates every flag for `context` at `timestamp` (seconds since 1970): the entries and
    /// details of the results in ``keys`` order, taken from ``results`` (a failed rule's are
    /// built here). Rules see the whole context, private attributes included.
    func evaluateAll(_ context: EvaluationContext, timestamp: Int64) -> (
        entries: [Snapshot.Entry], details: [EvaluationDetail]
    ) {
        var entries: [Snapshot.Entry] = []
        var details: [EvaluationDetail] = []
        entries.reserveCapacity(keys.count)
        details.reserveCapacity(keys.count)
        // ``keys`` is the definitions' own order: a flag is taken by its slot, not looked up.
        for slot in keys.indices {
            let flagResults = results[slot]
            let result: Prebuilt
            if let fixed = flagResults.fixed {
                result = fixed
            } else {
                let flag = definitions.ordered[slot]
                switch FlagDefinitions.outcome(flag, context: context, timestamp: timestamp) {
                case .variant(let variant): result = flagResults.matches[variant]
                case .nullRule:
                    // Precondition: `init` prebuilt a null-rule result for every flag with a rule.
                    guard let nullRule = flagResults.nullRule else {
                        preconditionFailure("flag \(flag.key) runs a rule but has no prebuilt null-rule result")
                    }
                    result = nullRule
                case .fixed:
                    // Precondition: `outcome` is `.fixed` only for a flag without a rule, and
                    // those took the `fixed` branch above.
                    preconditionFailure("flag \(flag.key) has a rule but its outcome is fixed")
                case .failure(let code, let message):
                    let served = FlagDefinitions.failure(flag, code, message)
                    entries.append(Snapshot.entry(for: served))
                    details.append(EvaluationDetail(served: served))
                    continue
                }
            }
            entries.append(result.entry)
            details.append(result.detail)
        }
        return (entries, details)
    }
}
