extension ServedFlag {
    /// The keys whose value, variant, reason or error differ between two flag lists, plus the
    /// keys only one of them has: what a client's `onChange` and a service's `withChanges(for:)`
    /// report.
    static func changedKeys(from old: [ServedFlag], to new: [ServedFlag]) -> Set<String> {
        var before: [String: ServedFlag] = [:]
        for flag in old { before[flag.key] = flag }
        var changed = Set<String>()
        for flag in new {
            if let o = before.removeValue(forKey: flag.key) {
                if o.value != flag.value || o.variant != flag.variant || o.reason != flag.reason
                    || o.errorCode != flag.errorCode
                {
                    changed.insert(flag.key)
                }
            } else {
                changed.insert(flag.key)
            }
        }
        changed.formUnion(before.keys)
        return changed
    }
}
