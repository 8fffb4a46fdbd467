import Foundation

/// One published version of a service's flag definitions, with what every context's results
/// built from it share (docs/in-process.md, "Per-context results"): the sorted keys and their
/// one key table, and for each flag whose result does not depend on the context (no targeting,
/// or disabled) its served result and detail, built here once. Immutable.
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
    /// Per key (same order): the result when it is the same for every context, else nil.
    let fixed: [ServedFlag?]
    /// Per key (same order): the detail of a ``fixed`` result, shared by every snapshot.
    let fixedDetails: [EvaluationDetail?]
    /// Whether some rule may read `$flagd.timestamp` (``FlagDefinitions/readsTimestamp``):
    /// results are then reused only within the second they were evaluated in.
    let readsTimestamp: Bool
    /// The number of flags with a rule to run per context.
    let targetedCount: Int

    init(definitions: FlagDefinitions, number: UInt64, loadedAt: Date) {
        self.definitions = definitions
        self.number = number
        self.loadedAt = loadedAt
        keys = definitions.keys
        table = FlagTable.Storage(keys: keys)
        var fixed: [ServedFlag?] = []
        var details: [EvaluationDetail?] = []
        fixed.reserveCapacity(keys.count)
        details.reserveCapacity(keys.count)
        var targeted = 0
        for (slot, key) in keys.enumerated() {
            // A flag without a rule (or disabled) is a dictionary read of its static result:
            // the context is not looked at, so the result is evaluated once here.
            if definitions.ordered[slot].rule != nil {
                fixed.append(nil)
                details.append(nil)
                targeted += 1
            } else {
                let served = definitions.evaluate(key, context: .anonymous, timestamp: 0)
                fixed.append(served)
                details.append(EvaluationDetail(served: served, interned: true))
            }
        }
        self.fixed = fixed
        fixedDetails = details
        targetedCount = targeted
        readsTimestamp = definitions.readsTimestamp
    }

    /// Evaluates every flag for `context` at `timestamp` (seconds since 1970): the served
    /// results in ``keys`` order. Rules see the whole context, private attributes included.
    func evaluateAll(_ context: EvaluationContext, timestamp: Int64) -> [ServedFlag] {
        var served: [ServedFlag] = []
        served.reserveCapacity(keys.count)
        // ``keys`` is the definitions' own order: a flag is taken by its slot, not looked up.
        for slot in keys.indices {
            served.append(fixed[slot] ?? definitions.evaluate(slot: slot, context: context, timestamp: timestamp))
        }
        return served
    }
}
