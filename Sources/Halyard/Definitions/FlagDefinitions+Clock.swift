extension FlagDefinitions {
    /// Whether a targeting rule may read `$flagd.timestamp`, so that its result can change with
    /// time alone: a `var` whose path starts at `$flagd`, the whole data (`{"var": ""}`), or a
    /// computed path. Conservative: a `var` inside `map`/`filter`/`reduce` that names `$flagd`
    /// counts even though it reads the item. A service that keeps one context's results
    /// between requests (docs/in-process.md, "Per-context results") reuses them only within
    /// the second they were evaluated in when this is true.
    var readsTimestamp: Bool {
        flags.values.contains { flag in flag.enabled && flag.targeting.map(Self.readsTimestamp) == true }
    }

    /// Whether `node` may read `$flagd.timestamp` (see ``readsTimestamp``). Exhaustive on
    /// purpose: a new kind of node must say whether it reads the data.
    private static func readsTimestamp(_ node: LogicNode) -> Bool {
        switch node {
        case .literal, .invalid:
            return false
        case .array(let nodes), .conditional(let nodes), .and(let nodes), .or(let nodes):
            return nodes.contains(where: readsTimestamp)
        case .variable(let path, let defaultValue):
            if path.segments.isEmpty || path.segments[0] == "$flagd" { return true }
            return defaultValue.map(readsTimestamp) ?? false
        case .arrayOperation(_, let items, let logic):
            return (items.map(readsTimestamp) ?? false) || (logic.map(readsTimestamp) ?? false)
        case .reduce(let items, let logic, _):
            return (items.map(readsTimestamp) ?? false) || (logic.map(readsTimestamp) ?? false)
        case .apply(let op, let nodes):
            // A `var` with a computed path may name anything.
            return op == .var || nodes.contains(where: readsTimestamp)
        case .binary(_, let left, let right):
            return readsTimestamp(left) || readsTimestamp(right)
        }
    }
}
