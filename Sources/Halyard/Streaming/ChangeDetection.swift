/// How a client or a service learns that values changed on the control plane (SPEC §14,
/// docs/protocol.md "Event streams").
public enum ChangeDetection: Sendable, Hashable {
    /// The *default*: follow the event stream the control plane advertises in its bulk response
    /// (`eventStreams`, OFREP ADR-0008), with polling at the longer of `pollInterval` and 5 min
    /// as a safety net while the stream is healthy; plain polling at `pollInterval` when no
    /// stream is advertised, when it fails, or when the transport cannot stream.
    case automatic
    /// Poll at `pollInterval` only; advertised streams are ignored.
    case polling
    /// Neither streaming nor polling: only start, `identify`, `refresh()` and
    /// `refreshIfStale()` fetch (in service mode: cold fetches and `refreshAfter`).
    case none
}
