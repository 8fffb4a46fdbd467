/// The one pending wake-up of a state-machine driver (``RefreshEngine``, ``EventStreamDriver``):
/// at most one task, sleeping on the injected clock until the machine's next wake.
///
/// Kept in the driver's locked state. ``schedule(_:clock:cancels:fire:)`` runs under that lock
/// and does not cancel anything there: a replaced task is handed back in `cancels`, for the
/// driver to cancel after it unlocked. When the clock reaches the wake, the task calls `fire`;
/// the driver then asks ``take(_:)`` (under its lock) whether that wake is still the pending one,
/// so a task that was replaced but woke before its cancellation arrived does nothing.
struct WakeTimer: Sendable {
    private var pending: (wake: Duration, task: Task<Void, Never>)?

    init() {}

    /// The pending wake, if any (for inspection and tests).
    var wake: Duration? { pending?.wake }

    /// Makes the timer match `wake` (nil: no wake-up). A task already sleeping until `wake` is
    /// kept; otherwise the old one goes to `cancels` and, for a non-nil `wake`, a new one sleeps
    /// until the clock's monotonic time reaches it (measured when it wakes, not when scheduled,
    /// so a clock moved meanwhile is honoured) and calls `fire(wake)`. A sleep that throws (the
    /// task was cancelled) ends the task without firing.
    mutating func schedule(
        _ wake: Duration?, clock: any HalyardClock, cancels: inout [Task<Void, Never>],
        fire: @escaping @Sendable (Duration) -> Void
    ) {
        if let pending {
            if pending.wake == wake { return }
            cancels.append(pending.task)
            self.pending = nil
        }
        guard let wake else { return }
        let task = Task {
            while case let delay = wake - clock.monotonicNow, delay > .zero {
                do { try await clock.sleep(for: delay) } catch { return }
            }
            fire(wake)
        }
        pending = (wake, task)
    }

    /// Whether `wake` is the pending wake-up; if it is, the timer is now empty (the caller
    /// processes the wake).
    mutating func take(_ wake: Duration) -> Bool {
        guard let pending, pending.wake == wake else { return false }
        self.pending = nil
        return true
    }
}
