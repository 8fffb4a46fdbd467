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
