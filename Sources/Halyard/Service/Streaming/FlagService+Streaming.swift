import Foundation

extension FlagService {
    /// Connects the stream's driver to this service (its fetch is a refresh wave; the service
    /// does not poll, so polling changes are ignored).
    func attachStreaming() {
        guard let streaming else { return }
        streaming.driver.attach(
            .init(
                fetch: { [weak self] fetch in
                    guard let self, let streaming = self.streaming else { return true }
                    // The stream URL was refused: learn the advertisement again. A bare re-learn
                    // announces no change (no wave); one that absorbed an event's or a
                    // connect's fetch owes that wave too. A re-learn that could not go is
                    // reported held (false), whatever the wave did: the machine then keeps the
                    // refused URL closed and asks again at its reconnect time (SPEC §14).
                    var relearned = true
                    if fetch.unconditional {
                        relearned = await self.relearnStream()
                        guard fetch.announcesChange else { return relearned }
                    }
                    self.markFlights(fetch)
                    await streaming.wave(fetch) { [weak self] fitted, flagConfig in
                        await self?.refreshHeld(fitted, flagConfig: flagConfig)
                    }
                    return relearned
                },
                pollInterval: { _ in },
                connected: { [weak self] isConnected in self?.streaming?.connected(isConnected) }))
    }

    /// The stream URL answered 401, 403, 404 or 410 (SPEC §14: "client and service alike"):
    /// one request without `If-None-Match`, straight to the control plane (never answered by
    /// the shared cache), for the context the service fetched last, so that its 200 carries
    /// the advertisement in force; a new URL then replaces the refused one. Only the
    /// advertisement is taken from the answer: the context's held values stay as they are (its
    /// own refresh keeps them current).
    ///
    /// Returns what the stream driver feeds its machine (``EventStreamDriver/Owner/fetch``):
    /// - `false` (held) when the re-learn could not be sent now: the service is paused or
    ///   fatal, its fetch gate has no room for a refresh, or the request was refused or shed
    ///   on its way to a slot. The refused URL stays closed and the machine asks for the
    ///   re-learn again at its reconnect time, so the URL is not reopened before a re-learn
    ///   has gone (before, `true` here reopened it on backoff, over and over during a pause).
    /// - `true` (finished) when it was sent, whatever its answer (a 5xx or a 304 says the
    ///   plane was asked: the backoff goes on as for any failing step); when the service has
    ///   fetched nothing yet (no context to send: its first fetch is unconditional and learns
    ///   the stream anyway, so nothing is owed); and when the service is closed (the driver is
    ///   stopped, nothing follows either way).
    func relearnStream() async -> Bool {
        guard !isClosed, let streaming, let fitted = streaming.relearnContext else { return true }
        guard fetcher.gate(now: options.clock.monotonicNow).admits(.refresh) else { return false }
        let fetcher = self.fetcher
        fetcher.began(.refresh)
        // A tracked task, like every fetch: `close()` cancels it.
        let sent = await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            let started = fetcher.track {
                let result = await fetcher.fetch(fitted, etag: nil, priority: .refresh)
                fetcher.ended(.refresh)
                if case .updated(let response, _) = result { streaming.advertised(response.eventStreams) }
                c.resume(returning: !result.wasNotSent)
            }
            if !started {
                fetcher.ended(.refresh)
                c.resume(returning: true)
            }
        }
        return sent || isClosed
    }

    /// Refreshes a held context now (in the background flight machinery, with `If-None-Match`)
    /// and returns when it is over. Nothing for a context that is not held or is backing off,
    /// and no flight while the service is paused, fatal or closed or its refreshes have no
    /// room (the fetch gate, as for a request). A context with a fetch in flight (cold or
    /// refresh) is marked instead: its answer may predate the event, so it is fetched again
    /// when that fetch ends (`run`).
    func refreshHeld(_ fitted: FittedContext, flagConfig: FlagConfigVersion? = nil) async {
        guard !isClosed else { return }
        let fingerprint = fitted.fingerprint
        let now = options.clock.monotonicNow
        let gate = fetcher.gate(now: now)
        let start = cache.shard(for: fingerprint).withLock { s -> Start? in
            if let flight = s.flights[fingerprint] {
                // The wave's values for this context already follow the stream's rule; a wave
                // without any keeps an event's mark.
                flight.markRefetch(flagConfig, event: false)
                return nil
            }
            guard let i = s.find(fingerprint), let snapshot = s.nodes[Int(i)].snapshot,
                now >= s.nodes[Int(i)].retryAt, gate.admits(.refresh)
            else { return nil }
            let flight = ContextFlight()
            s.flights[fingerprint] = flight
            return Start(
                flight: flight, previous: snapshot, background: true, flagConfig: flagConfig,
                eventAt: streaming?.staleBefore)
        }
        guard let start else { return }
        run(start, fitted)
        _ = await start.flight.wait(timeout: options.requestTimeout + .seconds(1), clock: options.clock)
    }

    /// Adds the stream's counters to `stats`.
    func addStreamingStats(_ stats: inout FlagServiceStats) {
        guard let streaming else { return }
        stats.stream = streaming.driver.stats
        let counters = streaming.counters
        stats.streaming.waves = counters.waves
        stats.streaming.refreshes = counters.refreshes
        let uses = cache.streamUseCounts
        stats.streaming.usesHeld = uses.uses
        // The contexts recorded for the next wave and those the waves still hold.
        stats.streaming.useBytes = uses.bytes + counters.heldBytes
    }
}
