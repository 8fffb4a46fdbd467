import Foundation

/// The client's side of status and events: it holds the status last reported by the sync
/// engine, fans events out to `events` streams and `onChange` listeners, and sets the read
/// path's fatal flag. The engine reports to it through a ``SyncObserver``; nothing in Sync knows
/// about listeners, streams or read counters.
final class ClientEventHub: Sendable {
    private struct Listener {
        var queue: DispatchQueue
        var active: Locked<Bool>
        var handler: @Sendable (Set<String>) throws -> Void
    }

    private struct State {
        var status: ClientStatus = .notReady
        var listeners: [UInt64: Listener] = [:]
        var streams: [UInt64: AsyncStream<ClientEvent>.Continuation] = [:]
        var changeStreams: [UInt64: AsyncStream<Set<String>>.Continuation] = [:]
        var finished = false
        var nextID: UInt64 = 0
    }

    private let state = Locked(State())
    private let readCounters: ReadCounters

    init(readCounters: ReadCounters) { self.readCounters = readCounters }

    /// The status last reported.
    var status: ClientStatus { state.withLock { $0.status } }

    /// Records a status change (and the fatal flag reads check when there is nothing to serve).
    func statusChanged(_ status: ClientStatus) {
        readCounters.isFatal = status == .fatal
        state.withLock { $0.status = status }
    }

    /// Delivers an event to every stream and, for ``ClientEvent/configurationChanged(_:)``, to
    /// every `onChange` listener on the listener's own serial queue.
    func emit(_ event: ClientEvent) {
        let (streams, listeners, changeStreams) = state.withLock { s in
            (Array(s.streams.values), Array(s.listeners.values), Array(s.changeStreams.values))
        }
        for stream in streams { stream.yield(event) }
        guard case .configurationChanged(let keys) = event else { return }
        for stream in changeStreams { stream.yield(keys) }
        for listener in listeners {
            let active = listener.active
            let handler = listener.handler
            listener.queue.async {
                guard active.withLock({ $0 }) else { return }
                try? handler(keys)
            }
        }
    }

    /// Ends every stream; later streams end at once.
    func finish() {
        let (streams, changeStreams) = state.withLock { s in
            s.finished = true
            defer {
                s.streams.removeAll()
                s.changeStreams.removeAll()
            }
            return (Array(s.streams.values), Array(s.changeStreams.values))
        }
        for stream in streams { stream.finish() }
        for stream in changeStreams { stream.finish() }
    }

    /// Registers a change listener with a serial queue of its own (a slow one delays only itself).
    func onChange(_ handler: @escaping @Sendable (Set<String>) throws -> Void) -> ChangeSubscription {
        let active = Locked(true)
        let listener = Listener(queue: DispatchQueue(label: "halyard.onChange"), active: active, handler: handler)
        let id = state.withLock { s -> UInt64 in
            s.nextID &+= 1
            s.listeners[s.nextID] = listener
            return s.nextID
        }
        return ChangeSubscription { [weak self] in
            active.withLock { $0 = false }
            self?.state.withLock { _ = $0.listeners.removeValue(forKey: id) }
        }
    }

    /// The change streams open now (tests check that a scoped subscription ended).
    var changeStreamCount: Int { state.withLock { $0.changeStreams.count } }

    /// A new stream of the changed keys from now on, for ``FlagClient/withChanges(bufferingPolicy:isolation:_:)``:
    /// fed in emission order (as `events` streams are), finished when the client closes or when
    /// the continuation is finished (which unregisters it).
    func changes(
        bufferingPolicy: AsyncStream<Set<String>>.Continuation.BufferingPolicy
    ) -> (AsyncStream<Set<String>>, AsyncStream<Set<String>>.Continuation) {
        let (stream, continuation) = AsyncStream<Set<String>>.makeStream(bufferingPolicy: bufferingPolicy)
        register(continuation, in: \.changeStreams)
        return (stream, continuation)
    }

    /// A new stream of the events emitted from now on.
    func events(
        bufferingPolicy: AsyncStream<ClientEvent>.Continuation.BufferingPolicy = .unbounded
    ) -> AsyncStream<ClientEvent> {
        let (stream, continuation) = AsyncStream<ClientEvent>.makeStream(bufferingPolicy: bufferingPolicy)
        register(continuation, in: \.streams)
        return stream
    }

    /// Registers `continuation` in the table `table` until it terminates (its termination
    /// removes it); a hub that has finished finishes it at once instead.
    private func register<Element>(
        _ continuation: AsyncStream<Element>.Continuation,
        in table: any WritableKeyPath<State, [UInt64: AsyncStream<Element>.Continuation]> & Sendable
    ) {
        let finished = state.withLock { s -> Bool in
            if s.finished { return true }
            s.nextID &+= 1
            let id = s.nextID
            s[keyPath: table][id] = continuation
            continuation.onTermination = { [weak self] _ in
                self?.state.withLock { _ = $0[keyPath: table].removeValue(forKey: id) }
            }
            return false
        }
        if finished { continuation.finish() }
    }
}
