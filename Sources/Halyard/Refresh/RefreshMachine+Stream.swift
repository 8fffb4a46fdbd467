/// The two inputs the event stream feeds the refresh machine (docs/protocol.md, "Event
/// streams"): a fetch it asks for, and the polling interval it wants.
extension RefreshMachine {
    /// Sends the stream's fetch unless one for the current context is in flight (then the stream
    /// waits for that one and asks again: ``streamJoinedInFlight``), the key is refused, or a
    /// `Retry-After` or backoff is in force (the stream never makes a failing control plane
    /// retry faster). `activated` fetches go without `If-None-Match`.
    mutating func sendForStream(_ fetch: EventStreamMachine.Fetch, now: Duration, into step: inout Step) -> Wait {
        guard !authBlocked else { return .none }
        return send(.stream, now: now, into: &step, ignoreBackoff: false, stream: fetch)
    }

    /// Polls at `interval` from now on (`.zero`: no polling). The next poll is re-drawn from the
    /// last success so that lengthening it (a healthy stream) or shortening it (a failed one)
    /// takes effect at once rather than after the poll already scheduled.
    mutating func changePollInterval(to interval: Duration, random: inout SplitMix64) {
        let interval = max(interval, .zero)
        guard interval != pollInterval else { return }
        setPollIntervalStorage(interval)
        guard let base = pollBase, failures == 0, !authBlocked else { return }
        resetNextPoll(jitteredPoll(random: &random).map { base + $0 })
    }
}
