/// The service's change signal per context (``FlagService/withChanges(for:isolation:_:)-(EvaluationContext,_,_)``):
/// the open ``ContextChangeBuffer``s by context fingerprint. The apply path asks
/// ``isWatching(_:)`` before it computes a diff, so an unwatched context costs one locked
/// lookup per stored answer and nothing on the read path.
final class ContextChangeHub: Sendable {
    private struct State {
        var buffers: [String: [UInt64: ContextChangeBuffer]] = [:]
        var nextID: UInt64 = 0
        var finished = false
    }

    private let state = Locked(State())

    /// Registers a buffer for the context `fingerprint`; the second value removes it. A hub
    /// that has finished returns a finished buffer.
    func open(_ fingerprint: String) -> (ContextChangeBuffer, @Sendable () -> Void) {
        let buffer = ContextChangeBuffer()
        let id = state.withLock { s -> UInt64? in
            guard !s.finished else { return nil }
            s.nextID &+= 1
            s.buffers[fingerprint, default: [:]][s.nextID] = buffer
            return s.nextID
        }
        guard let id else {
            buffer.finish()
            return (buffer, {})
        }
        return (
            buffer,
            { [weak self] in
                buffer.finish()
                self?.state.withLock { s in
                    s.buffers[fingerprint]?.removeValue(forKey: id)
                    if s.buffers[fingerprint]?.isEmpty == true { s.buffers.removeValue(forKey: fingerprint) }
                }
            }
        )
    }

    /// Whether a buffer is open for `fingerprint`.
    func isWatching(_ fingerprint: String) -> Bool { state.withLock { $0.buffers[fingerprint] != nil } }

    /// The buffers open now, over every context (tests check that a scope ended its own).
    var openCount: Int { state.withLock { $0.buffers.values.reduce(0) { $0 + $1.count } } }

    /// Hands `keys` to every buffer of `fingerprint`.
    func deliver(_ keys: Set<String>, for fingerprint: String) {
        guard !keys.isEmpty else { return }
        let buffers = state.withLock { $0.buffers[fingerprint].map { Array($0.values) } ?? [] }
        for buffer in buffers { buffer.deliver(keys) }
    }

    /// Finishes every buffer (the service closed); later ones are finished at once.
    func finish() {
        let buffers = state.withLock { s -> [ContextChangeBuffer] in
            s.finished = true
            defer { s.buffers.removeAll() }
            return s.buffers.values.flatMap(\.values)
        }
        for buffer in buffers { buffer.finish() }
    }
}
