/// The locked state of a driver that delivers what its state machine decides ("mutate, collect,
/// unlock, deliver"): the deliveries collected under the lock, in order, and whether a thread is
/// delivering them now. ``RefreshEngine`` and ``EventStreamDriver`` keep one each.
protocol OutboxState {
    associatedtype Delivery
    /// The deliveries collected under the lock and not yet taken by ``Locked/drain(_:)``.
    var outbox: [Delivery] { get set }
    /// Whether a thread is delivering a batch (others then leave the outbox to it).
    var draining: Bool { get set }
}

extension Locked where State: OutboxState {
    /// Delivers the outbox in order, from one thread at a time, with no lock held while
    /// `deliver` runs. A caller that finds another thread delivering returns at once: that thread
    /// takes what was added meanwhile before it stops, so nothing is left behind and nothing is
    /// delivered out of order.
    func drain(_ deliver: (State.Delivery) -> Void) {
        while true {
            let batch: [State.Delivery]? = withLock { s in
                if s.draining || s.outbox.isEmpty { return nil }
                s.draining = true
                defer { s.outbox.removeAll() }
                return s.outbox
            }
            guard let batch else { return }
            for delivery in batch { deliver(delivery) }
            withLock { $0.draining = false }
        }
    }
}
