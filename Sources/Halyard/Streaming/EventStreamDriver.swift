import Foundation

/// Performs ``EventStreamMachine``'s actions: opens and closes the stream on a
/// ``StreamingTransport``, parses it (``EventStreamParser``), sleeps on the injected clock
/// until the machine's next wake, and hands fetches and polling changes to its owner. Actions
/// run in order, from one thread at a time, never while its lock is held; nothing here touches
/// the read path. The stream's URL lives only in ``State/stream`` and in the requests sent to
/// it: it is never logged, counted, or passed to the owner.
final class EventStreamDriver: Sendable {
    struct Configuration: Sendable {
        var machine: EventStreamMachine.Configuration
        /// The credential and identity headers, sent only to a stream on the control plane's origin.
        var identity: ClientIdentity
    }

    /// What the driver asks of its owner.
    struct Owner: Sendable {
        /// Send this fetch and return when it is over: false when nothing could be sent (a
        /// `Retry-After` or a backoff held it).
        var fetch: @Sendable (EventStreamMachine.Fetch) async -> Bool
        /// Poll at this interval from now on.
        var pollInterval: @Sendable (Duration) -> Void
        /// The stream became connected (`true`) or stopped being so (`false`); in order.
        var connected: @Sendable (Bool) -> Void = { _ in }
    }

    private enum Delivery {
        case open(UInt64, OFREPEventStream, lastEventID: String?)
        case close(Task<Void, Never>?)
        case fetch(EventStreamMachine.Fetch)
        case pollInterval(Duration)
        case log(HalyardLogRecord)
        case connected(Bool)
    }

    private struct State: Sendable, OutboxState {
        var machine: EventStreamMachine
        var random: SplitMix64
        /// The stream followed (sensitive: its URL never leaves this struct but to the transport).
        var stream: OFREPEventStream?
        var lastEventID: String?
        var tasks: [UInt64: Task<Void, Never>] = [:]
        var timer = WakeTimer()
        var outbox: [Delivery] = []
        var draining = false
    }

    private let configuration: Configuration
    private let transport: any StreamingTransport
    private let clock: any HalyardClock
    private let logHandler: HalyardLogRecordHandler?
    private let owner = Locked<Owner?>(nil)
    private let state: Locked<State>
    /// The redirect targets whose refusal was logged (SPEC §5: one warning per origin).
    private let loggedRefusals = Locked<Set<String>>([])

    init(
        configuration: Configuration, transport: any StreamingTransport, clock: any HalyardClock,
        logHandler: HalyardLogRecordHandler?, seed: UInt64 = UInt64.random(in: .min ... .max)
    ) {
        self.configuration = configuration
        self.transport = transport
        self.clock = clock
        self.logHandler = logHandler
        state = Locked(
            State(machine: EventStreamMachine(configuration: configuration.machine), random: SplitMix64(seed: seed)))
    }

    // MARK: - Operations

    /// Sets who performs fetches and polling changes (once, before the first advertisement).
    func attach(_ owner: Owner) {
        self.owner.withLock { $0 = owner }
    }

    /// The streams a bulk response advertised (already decoded and checked): follows the first
    /// (a new URL reconnects; none withdraws the one followed). A URL that differs from the
    /// followed one only in its query (a token a plane signs per answer) is the same stream:
    /// it replaces the URL for the next (re)connect and never closes the connection in use
    /// (SPEC §14, "Through a process's life"; docs/protocol.md, "Event streams").
    func advertised(_ streams: [OFREPEventStream]) {
        let chosen = streams.first
        var inputs: [EventStreamMachine.Input] = []
        state.withLock { s in
            if let chosen {
                if let current = s.stream, Self.sameStream(current, chosen) {
                    s.stream = chosen
                    inputs = [.advertised(inactivityDelay: chosen.inactivityDelay)]
                    return
                }
                if s.stream != nil { inputs.append(.withdrawn) }
                s.stream = chosen
                s.lastEventID = nil
                inputs.append(.advertised(inactivityDelay: chosen.inactivityDelay))
            } else if s.stream != nil {
                s.stream = nil
                inputs = [.withdrawn]
            }
        }
        for input in inputs { process(input) }
    }

    /// Whether `b` is the stream `a` is: the same URL but perhaps its query, and the same
    /// origin rule for credentials.
    static func sameStream(_ a: OFREPEventStream, _ b: OFREPEventStream) -> Bool {
        guard a.sameOriginAsControlPlane == b.sameOriginAsControlPlane else { return false }
        if a.url == b.url { return true }
        return withoutQuery(a.url) == withoutQuery(b.url)
    }

    /// `url` without its query (nil when it cannot be taken apart: then only equal URLs match).
    private static func withoutQuery(_ url: URL) -> URL? {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return nil }
        components.percentEncodedQuery = nil
        return components.url
    }

    /// `FlagClient.setActive(_:)`.
    func setActive(_ active: Bool) { process(.setActive(active)) }

    /// The key changed (`setKey`): a stream that authenticates with it (on the control plane's
    /// own origin, so it carries the identity headers) and is connected or connecting
    /// reconnects with the new key at once; a stream elsewhere carries its own credential in
    /// its URL and keeps its connection. A stream waiting to reconnect sends the new key when
    /// it does.
    func keyChanged() {
        let authenticated = state.withLock { $0.stream?.sameOriginAsControlPlane ?? false }
        if authenticated { process(.reauthenticate) }
    }

    /// Closes the stream for good.
    func close() { process(.stop) }

    /// Counters (no URL).
    var stats: EventStreamStats {
        state.withLock { s in
            var stats = s.machine.stats
            stats.advertised = s.stream != nil
            return stats
        }
    }

    /// The machine's phase (tests).
    var phase: EventStreamMachine.Phase { state.withLock { $0.machine.phase } }

    /// The machine's fetch slot: whether a fetch it asked for is still in flight (tests).
    var fetchSlot: EventStreamMachine.FetchSlot { state.withLock { $0.machine.fetch } }

    /// Connection tasks held for cancelling: at most the current one (tests).
    var connectionTasks: Int { state.withLock { $0.tasks.count } }

    // MARK: - The loop

    private func process(_ input: EventStreamMachine.Input, prepare: (inout State) -> Void = { _ in }) {
        let now = clock.monotonicNow
        var cancels: [Task<Void, Never>] = []
        state.withLock { s in
            prepare(&s)
            let wasConnected = s.machine.stats.connected
            let actions = s.machine.event(input, now: now, random: &s.random)
            if s.machine.stats.connected != wasConnected { s.outbox.append(.connected(s.machine.stats.connected)) }
            for action in actions {
                switch action {
                case .connect(let id):
                    if let stream = s.stream { s.outbox.append(.open(id, stream, lastEventID: s.lastEventID)) }
                case .disconnect(let id):
                    s.outbox.append(.close(s.tasks.removeValue(forKey: id)))
                case .fetch(let fetch): s.outbox.append(.fetch(fetch))
                case .pollInterval(let interval): s.outbox.append(.pollInterval(interval))
                case .log(let level, let message, var facts):
                    // The stream's origin only: its path and query may carry a credential.
                    if let url = s.stream?.url { facts[HalyardLogRecord.Key.origin] = HalyardLogRecord.origin(url) }
                    s.outbox.append(.log(HalyardLogRecord(level, message, .stream, facts)))
                }
            }
            if case .stopped = s.machine.phase {
                for (_, task) in s.tasks { cancels.append(task) }
                s.tasks.removeAll()
            }
            reschedule(&s, cancels: &cancels)
        }
        for task in cancels { task.cancel() }
        drain()
    }

    private func reschedule(_ s: inout State, cancels: inout [Task<Void, Never>]) {
        s.timer.schedule(s.machine.nextWake, clock: clock, cancels: &cancels) { [weak self] wake in
            self?.timerFired(wake)
        }
    }

    private func timerFired(_ wake: Duration) {
        if state.withLock({ $0.timer.take(wake) }) { process(.timer) }
    }

    private func drain() { state.drain(deliver) }

    private func deliver(_ delivery: Delivery) {
        switch delivery {
        case .open(let id, let stream, let lastEventID):
            let task = Task { [weak self] () -> Void in
                await self?.run(connection: id, stream: stream, lastEventID: lastEventID)
            }
            // Stale unless the machine is still on this very connection, connecting or (the task
            // may already have run its open) connected: a `.withdrawn`, a suspension or a stop
            // between the action and this delivery found no task to cancel.
            let stale = state.withLock { s -> Bool in
                guard s.machine.connection == id else { return true }
                switch s.machine.phase {
                case .connecting, .connected:
                    s.tasks[id] = task
                    return false
                case .idle, .waiting, .suspended, .stopped:
                    return true
                }
            }
            if stale { task.cancel() }
        case .close(let task):
            task?.cancel()
        case .fetch(let fetch):
            let owner = self.owner.value
            Task { [weak self] in
                let sent = await owner?.fetch(fetch) ?? true
                self?.process(sent ? .fetchFinished : .fetchHeld)
            }
        case .pollInterval(let interval):
            owner.value?.pollInterval(interval)
        case .log(let record):
            logHandler?(record)
        case .connected(let connected):
            owner.value?.connected(connected)
        }
    }

    /// The GET of SPEC §14: `Accept: text/event-stream`; the identity headers only on the
    /// control plane's own origin; `Last-Event-ID` when an id was seen.
    func request(for stream: OFREPEventStream, lastEventID: String?) -> TransportRequest {
        var headers: [String: String] = stream.sameOriginAsControlPlane ? configuration.identity.headers : [:]
        headers["Accept"] = "text/event-stream"
        headers["Cache-Control"] = "no-cache"
        if let lastEventID, !lastEventID.isEmpty { headers["Last-Event-ID"] = lastEventID }
        return TransportRequest(
            method: "GET", url: stream.url, headers: headers, body: Data(),
            timeout: configuration.machine.connectTimeout, maxResponseBytes: 64 << 10)
    }

    private func run(connection id: UInt64, stream: OFREPEventStream, lastEventID: String?) async {
        // However this connection ends, its task leaves the table: the machine asks to
        // disconnect only connections it gives up on, not one that ended or failed by itself,
        // so without this every reconnect left a finished task behind until close(). (A
        // delivery that comes after the end finds the machine moved on and stores nothing.)
        defer { state.withLock { _ = $0.tasks.removeValue(forKey: id) } }
        let request = request(for: stream, lastEventID: lastEventID)
        let opened: TransportStream
        do {
            opened = try await transport.openStream(
                request, inactivityTimeout: configuration.machine.readInactivityTimeout)
        } catch TransportError.redirectRefused(let origin, let reason) {
            if Task.isCancelled { return }
            // SPEC §5: the typed error, and one warning naming the target's origin only.
            if loggedRefusals.withLock({ $0.count < 64 && $0.insert(origin).inserted }) {
                logHandler?(
                    HalyardLogRecord(
                        .warning, "event stream redirect to \(origin) not followed (\(reason.rawValue))", .stream,
                        [
                            HalyardLogRecord.Key.origin: HalyardLogRecord.origin(stream.url),
                            HalyardLogRecord.Key.reason: "redirect_refused",
                        ]))
            }
            process(.closed(connection: id, .transportError))
            return
        } catch {
            if Task.isCancelled { return }
            process(.closed(connection: id, .transportError))
            return
        }
        let isEventStream = (opened.headers["content-type"] ?? "").lowercased().hasPrefix("text/event-stream")
        let retryAfter = opened.header("Retry-After").flatMap { RetryAfter.parse($0, now: clock.wallNow) }
        process(.opened(connection: id, status: opened.status, isEventStream: isEventStream, retryAfter: retryAfter))
        // Read on only when the machine took this head as its connection (not when it moved on
        // while the head was on its way): no connection nobody follows.
        let accepted = state.withLock { s -> Bool in
            guard s.machine.connection == id, case .connected = s.machine.phase else { return false }
            return true
        }
        guard accepted, (200..<300).contains(opened.status), isEventStream, !Task.isCancelled else {
            opened.cancel()
            return
        }
        var parser = EventStreamParser(lastEventID: lastEventID ?? "")
        let reason: EventStreamMachine.CloseReason
        do {
            try await withTaskCancellationHandler {
                for try await chunk in opened.chunks {
                    if Task.isCancelled { break }
                    let output = try parser.feed(chunk)
                    if output.sawBytes || output.retry != nil {
                        process(.bytes(connection: id, retry: output.retry))
                    }
                    for event in output.events {
                        let eventID = event.lastEventID
                        process(.message(connection: id, data: event.data)) { s in
                            if s.machine.connection == id { s.lastEventID = eventID }
                        }
                    }
                }
            } onCancel: {
                opened.cancel()
            }
            reason = .ended
        } catch is EventStreamError {
            reason = .garbage
        } catch {
            reason = .transportError
        }
        opened.cancel()
        if Task.isCancelled { return }
        process(.closed(connection: id, reason))
    }
}
