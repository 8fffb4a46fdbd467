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
