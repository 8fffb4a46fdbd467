// A bridge while RefreshMachine and EventStreamMachine are rewritten as state enums (issue 33,
// item 2) on another branch: they still carry the pair as two strings, everything around them
// takes a ``FlagConfigVersion``. Once they store `flagConfig: FlagConfigVersion?` themselves,
// this file goes.

extension EventStreamMachine.Fetch {
    /// The flag configuration version this fetch forwards: an event's `etag` / `lastModified`;
    /// `nil` for a (re)connect's or an activation's fetch, and for an event that names neither.
    var flagConfig: FlagConfigVersion? {
        guard reason == .event else { return nil }
        return FlagConfigVersion(etag: flagConfigEtag, lastModified: flagConfigLastModified)
    }
}

extension RefreshMachine.Request {
    /// The flag configuration version the request forwards (event-triggered requests only).
    var flagConfig: FlagConfigVersion? {
        FlagConfigVersion(etag: flagConfigEtag, lastModified: flagConfigLastModified)
    }
}
