import Foundation

/// What ``FlagClient/shutdown(timeout:)`` achieved.
public struct ShutdownReport: Sendable, Hashable {
    /// Exposure events the control plane accepted during the shutdown (the final flush).
    public var sentEvents: Int = 0
    /// Exposure events that will never be delivered: dropped by the final flush (rejected, or
    /// still pending when it stopped at a failure), or still pending when the deadline passed.
    public var lostEvents: Int = 0
    /// Whether the final flush and the pending on-device cache writes finished before the
    /// deadline. When `false`, they go on in the background, but a process that exits now
    /// loses ``lostEvents`` and ``pendingCacheWrites``.
    public var completed: Bool = true
    /// On-device cache writes (docs/cache.md) not finished when the deadline passed: the
    /// entries a process that exits now does not save.
    public var pendingCacheWrites: Int = 0

    /// Creates a report.
    public init(sentEvents: Int = 0, lostEvents: Int = 0, completed: Bool = true, pendingCacheWrites: Int = 0) {
        self.sentEvents = sentEvents
        self.lostEvents = lostEvents
        self.completed = completed
        self.pendingCacheWrites = pendingCacheWrites
    }
}

extension FlagClient {
    /// Closes the client and waits, at most `timeout` (on the options' clock), for the final
    /// exposure flush and the pending on-device cache writes; reports what was sent and what is
    /// lost. The graceful shutdown of a service, a command or an extension: call it before the
    /// process exits.
    ///
    /// ```swift
    /// let report = await client.shutdown(timeout: .seconds(5))
    /// if report.lostEvents > 0 { log("\(report.lostEvents) exposures lost at shutdown") }
    /// ```
    ///
    /// ``close()`` does the same without waiting (the final flush runs detached, so a process
    /// that exits right after it may lose it). Calling `shutdown` after `close()` waits for that
    /// same final flush. Offline clients have nothing to flush.
    public func shutdown(timeout: Duration = .seconds(5)) async -> ShutdownReport {
        let before = stats.exposures
        close()
        guard let sync else { return ShutdownReport() }
        let recorder = sync.recorder
        let cache = sync.publisher.cache
        let clock = sync.options.clock
        let finished = Locked<CheckedContinuation<Bool, Never>?>(nil)
        let timer = Locked<Task<Void, Never>?>(nil)
        let completed = await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            finished.withLock { $0 = c }
            let resume: @Sendable (Bool) -> Void = { value in
                finished.withLock { c -> CheckedContinuation<Bool, Never>? in
                    defer { c = nil }
                    return c
                }?.resume(returning: value)
            }
            // Both the final flush and the cache writes: the last of the two to end resumes.
            let outstanding = Locked(cache == nil ? 1 : 2)
            let oneDone: @Sendable () -> Void = {
                let last = outstanding.withLock { n -> Bool in
                    n -= 1
                    return n == 0
                }
                if last { resume(true) }
            }
            Task {
                _ = await recorder.waitUntilClosed()
                oneDone()
            }
            cache?.whenIdle(oneDone)
            timer.withLock {
                $0 = Task {
                    do { try await clock.sleep(for: max(timeout, .zero)) } catch { return }
                    resume(false)
                }
            }
        }
        timer.withLock { $0 }?.cancel()
        let after = stats.exposures
        return ShutdownReport(
            sentEvents: after.sent - before.sent,
            lostEvents: (after.dropped - before.dropped) + after.pending,
            completed: completed, pendingCacheWrites: completed ? 0 : cache?.unfinishedWrites ?? 0)
    }
}
