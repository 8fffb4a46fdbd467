extension FlagClient {
    /// A read view pinned to the values this client serves now (see ``PinnedFlags``): every read
    /// through it answers from that one snapshot, however often the client's values change
    /// meanwhile, with the client's rules, read counters and exposures. Use it where several
    /// reads must agree with each other (related flags, a configuration snapshot); read the
    /// client itself everywhere else.
    ///
    /// ```swift
    /// let pinned = client.pinnedFlags()
    /// let limit = pinned.int("upload.limit", default: 10)
    /// let unit = pinned.string("upload.unit", default: "MB")   // from the same values as limit
    /// ```
    ///
    /// Before the client has values, the view serves defaults with
    /// ``PinnedFlags/unavailableReason`` `PROVIDER_NOT_READY` (`PROVIDER_FATAL` once the key was
    /// refused), and stays so.
    public func pinnedFlags() -> PinnedFlags { PinnedFlags(client: self) }
}
