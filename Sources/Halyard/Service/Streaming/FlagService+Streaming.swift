import Foundation

extension FlagService {
    /// Connects the stream's driver to this service (its fetch is a refresh wave; the service
    /// does not poll, so polling changes are ignored).
    func attachStreaming() {
        guard let streaming else { return }
        streaming.driver.attach(
            .init(
                fetch: { [weak self] fetch in
                    guard let self, let streaming = self.streaming else { return }
                    self.markFlights(fetch.flagConfig)
                    await streaming.wave(fetch) { [weak self] fitted, flagConfig in
                        await self?.refreshHeld(fitted, flagConfig: flagConfig)
                    }
                },
                pollInterval: { _ in },
                connected: { [weak self] isConnected in self?.streaming?.connected(isConnected) }))
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
                flight.markRefetch(flagConfig)
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
        stats.streaming.useBytes = uses.bytes
    }
}
