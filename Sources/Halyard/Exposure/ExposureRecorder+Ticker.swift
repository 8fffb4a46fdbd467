extension ExposureRecorder {
    /// One ticker step: advances the coarse clock and starts an automatic drain when the
    /// periodic flush is due, a retry's backoff is over, or a full batch waits.
    package func tick() {
        let now = elapsed
        coarseClock.advance(to: Self.seconds(now))
        let start = state.withLock { $0.tick(now: now) }
        if start { Task { await self.drain(.automatic) } }
    }

    /// Starts the ticker unless it runs, the recorder is closed or it does not tick itself.
    func startTickerIfNeeded() {
        let start = tasks.withLock { t -> Bool in
            guard t.startsTicker, !t.closed, !t.ticking else { return false }
            t.ticking = true
            return true
        }
        if start { startTicker() }
    }

    /// Whether the ticker should keep running; when not, marks it stopped, atomically with the
    /// check, so a record that lands right after starts a new one (records update the state
    /// before they look at the ticker).
    private func keepTicking() -> Bool {
        let seconds = coarseNow()
        return tasks.withLock { t -> Bool in
            let keep = !t.closed && state.withLock { $0.needsTicker(coarseNow: seconds) }
            if !keep {
                t.ticking = false
                t.ticker = nil
            }
            return keep
        }
    }

    /// Starts the task that calls ``tick()`` every second (every `flushInterval` when shorter)
    /// while ``keepTicking()`` says so.
    private func startTicker() {
        let period = options.flushInterval > .zero ? min(.seconds(1), options.flushInterval) : .seconds(1)
        let clock = self.clock
        let task = Task { [weak self] in
            while !Task.isCancelled {
                do { try await clock.sleep(for: period) } catch { return }
                guard let self else { return }
                self.tick()
                if !self.keepTicking() { return }
            }
        }
        let cancelNow = tasks.withLock { t -> Bool in
            if t.closed { return true }
            if t.ticking { t.ticker = task }  // else it already stopped itself
            return false
        }
        if cancelNow { task.cancel() }
    }
}
