extension FlagClient {
    /// Tells the client whether the app is active (in the foreground). With `false` the event
    /// stream is closed once the inactivity delay has passed
    /// (``FlagClientOptions/streamInactivityDelay``, else the server's `inactivityDelaySec`,
    /// else 120 s); with `true` after `false` it reconnects and re-fetches at once without
    /// `If-None-Match`. Does nothing offline, without a stream
    /// (``ChangeDetection/polling``/``ChangeDetection/none``), after `close()`, or when the
    /// state does not change. Never blocks.
    public func setActive(_ active: Bool) {
        sync?.streams?.setActive(active)
    }
}
