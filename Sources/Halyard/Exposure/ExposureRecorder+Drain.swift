extension ExposureRecorder {
    /// Why a drain runs: started by the ticker or a full batch, by ``flush()``, or at close.
    enum DrainMode { case automatic, explicit, final }

    /// Who holds the drain turn and who waits for it.
    struct Turn {
        /// Whether a drain holds the turn.
        var busy = false
        /// The drains waiting for it, first come first served.
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    /// Waits until no other drain runs, then holds the turn.
    private func acquireTurn() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let acquired = turn.withLock { t -> Bool in
                if !t.busy { t.busy = true; return true }
                t.waiters.append(c)
                return false
            }
            if acquired { c.resume() }
        }
    }

    /// Hands the turn to the next waiting drain, or frees it.
    private func releaseTurn() {
        let next = turn.withLock { t -> CheckedContinuation<Void, Never>? in
            if t.waiters.isEmpty { t.busy = false; return nil }
            return t.waiters.removeFirst()
        }
        next?.resume()
    }

    /// Sends batches one at a time until nothing is pending, a backoff is in effect or an
    /// attempt fails retryably; logs rejections; at close (`.final`) drops what is left.
    func drain(_ mode: DrainMode) async -> ExposureFlushResult {
        await acquireTurn()
        var result = ExposureFlushResult()
        var rng = SystemRandomNumberGenerator()
        loop: while true {
            let now = elapsed  // read the injected clock outside the lock
            let next = state.withLock { $0.nextBatch(now: now, ignoreBackoff: mode == .final) }
            switch next {
            case .idle:
                break loop
            case .deferred:
                break loop
            case .send(let batch):
                let (outcome, statusMessage) = await upload(batch)
                let unit = Double(unitInterval: rng.next())
                let finishedAt = elapsed
                let finish = state.withLock { $0.finish(batch, outcome: outcome, now: finishedAt, unit: unit) }
                result.sentEvents += finish.sent
                if finish.sent > 0 { result.sentBatches += 1 }
                if finish.failed { result.failedBatches += 1 }
                result.droppedEvents += finish.dropped
                if let status = finish.rejectedStatus, let log {
                    let what = status == 0 ? "not sent (invalid exporter)" : "rejected with HTTP \(status)"
                    var line = "Halyard: exposure batch of \(batch.events.count) \(what); dropped"
                    if let statusMessage, firstMessage(for: status) { line += ": \(statusMessage)" }
                    log(line)
                }
                if finish.tooLarge, let log {
                    log(
                        "Halyard: exposure batch of \(batch.events.count) dropped: the answer was over "
                            + "\(Self.maxResponseBytes >> 20) MiB")
                }
                if case .partiallyDelivered(let rejected, let message) = outcome {
                    logPartialSuccess(
                        rejected: finish.partiallyRejected, of: batch.events.count, claimed: rejected, message)
                }
                if finish.stop { break loop }
            }
        }
        let now = elapsed
        let tail = state.withLock { s -> (dropped: Int, pending: Int, notBefore: Duration) in
            var dropped = 0
            if mode == .final { dropped = s.abandonQueued() }
            if mode == .automatic { s.automaticDrainFinished() }
            return (dropped, s.counters.pending, s.notBefore)
        }
        result.droppedEvents += tail.dropped
        result.pendingEvents = tail.pending
        if tail.pending > 0, tail.notBefore > now { result.retryAfter = tail.notBefore - now }
        releaseTurn()
        return result
    }

    /// Whether `status`'s receiver message has not been logged yet (and marks it logged).
    private func firstMessage(for status: Int) -> Bool {
        loggedStatusMessages.withLock { seen in
            guard !seen.contains(status), seen.count < Self.maxLoggedStatuses else { return false }
            seen.insert(status)
            return true
        }
    }

    /// Logs an OTLP partial success: the counts, and the receiver's `errorMessage` (cut to 512
    /// characters) unless it is the same message as the last one logged.
    private func logPartialSuccess(rejected: Int, of count: Int, claimed: Int, _ message: String?) {
        guard let log else { return }
        let text = message.map { String($0.prefix(512)) }
        let repeated = lastPartialMessage.withLock { last -> Bool in
            defer { last = text }
            return text != nil && last == text
        }
        var line = "Halyard: the OTLP receiver rejected \(rejected) of \(count) log records"
        if claimed > count { line += " (it reported \(claimed))" }
        if let text, !repeated { line += ": \(text)" }
        if repeated && rejected == 0 { return }
        log(line)
    }
}
