/// The client's provider status (docs/protocol.md), as OpenFeature defines it. Defined here, where
/// the sync state machine computes it; the client holds the value it last reported.
public enum ClientStatus: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// No values exist yet.
    case notReady = "NOT_READY"
    /// Serving values the control plane confirmed for the current context.
    case ready = "READY"
    /// Serving values the control plane has not confirmed: loaded from disk, or kept after
    /// failed refreshes once the last confirmation is older than the stale threshold.
    case stale = "STALE"
    /// The start failed with nothing confirmed, or the control plane answered 400/401/403 (or
    /// the last `identify` failed) while older values are still served.
    case error = "ERROR"
    /// The key was refused (401/403) and there is nothing to serve. Reads serve defaults with
    /// `PROVIDER_FATAL`.
    case fatal = "FATAL"
    /// An `identify` is in flight; reads answer from the previous context's values.
    case reconciling = "RECONCILING"

    /// The OpenFeature spelling (`"READY"`, ...).
    public var description: String { rawValue }
}

/// An event a ``FlagClient`` emits, in the order it happened.
///
/// Frozen: its cases are SPEC §6's events, and a `switch` over them may be exhaustive. A new
/// case would be a new major version (docs/public-api.md).
public enum ClientEvent: Sendable, Hashable {
    /// Values confirmed by the control plane are served (after start, or after recovering from
    /// `stale` or `error`). Not emitted after an `identify`: that emits ``contextChanged``.
    case ready
    /// A fetch failed or the control plane refused the request. The status may or may not change.
    case error(code: FlagErrorCode, message: String)
    /// The status became ``ClientStatus/stale``.
    case stale
    /// The served result (value, variant, reason or error) of exactly these keys changed, or
    /// they were added or removed. Never emitted with an empty set.
    case configurationChanged(Set<String>)
    /// An `identify` started.
    case reconciling
    /// Values for the new context are served (emitted once, for the last of overlapping identifies).
    case contextChanged
}
