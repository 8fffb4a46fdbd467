extension FlagClient {
    /// A view of an object-valued flag (see ``FlagObject``). Reading an object records an
    /// exposure like any successful read; a value of another type is a mismatch for this view:
    /// it gives the defaults and records nothing.
    public func flagObject(_ key: String) -> FlagObject {
        // Peek first, so that a non-object never reaches the recording read. A publish between
        // the peek and the read can still swap an object for a non-object; the view then shows
        // the defaults, and that one read counts as seen (docs/exposures.md).
        guard servesObject(key) else { return FlagObject(key: key, value: nil) }
        let result = evaluation(key, default: JSONValue.null)
        return FlagObject(key: key, value: result.errorCode == nil ? result.value : nil)
    }

    /// Whether `key` is served now with an object value. Records nothing; only the lookup runs
    /// under the protection.
    private func servesObject(_ key: String) -> Bool {
        store.withCurrent { snapshot in snapshot.map { ReadRules.servesObject($0, key) } ?? false }
    }
}
