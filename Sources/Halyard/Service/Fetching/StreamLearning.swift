/// Whether a service still has to learn its event stream from a control-plane answer of its
/// own (SPEC §15, "Streams"): a pod served only from the shared cache would never see the
/// advertisement, so its first fetch goes to the control plane whatever the shared cache holds.
final class StreamLearning: Sendable {
    private let pending = AtomicU64(1)

    /// Takes the one unconditional fetch: true for one caller until ``giveBack()``.
    func take() -> Bool {
        pending.compareExchange(expected: 1, desired: 0)
    }

    /// That fetch did not get an answer with values: the next fetch tries again.
    func giveBack() { pending.store(1) }
}
