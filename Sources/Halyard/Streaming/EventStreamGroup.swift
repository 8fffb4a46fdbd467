import Foundation

/// The client's event streams (SPEC §14): one ``EventStreamDriver`` per advertised stream of a
/// known type, at most ``maxStreams`` (the decoder keeps no more). Each stream has its own
/// machine (reconnect backoff, inactivity, coalescing); the group hands their fetches to the
/// owner as they come and folds their polling wishes into one: the shortest interval any
/// followed stream asks for, so one failing stream brings back normal polling even while
/// another is healthy (its changes may be announced on the failing one only).
///
/// The ``maxStreams`` drivers are created up front (idle ones hold no connection and no task);
/// usually a control plane advertises one stream, and only the first driver then follows one.
final class EventStreamGroup: Sendable {
    /// The most streams followed at once.
    static let maxStreams = 4

    private struct State: Sendable {
        /// The polling interval each followed stream last asked for, by slot.
        var wishes: [Int: Duration] = [:]
        /// The slots following a stream now.
        var followed: Set<Int> = []
        /// The interval last handed to the owner.
        var applied: Duration?
    }

    private let drivers: [EventStreamDriver]
    private let owner = Locked<EventStreamDriver.Owner?>(nil)
    private let state = Locked(State())

    init(
        configuration: EventStreamDriver.Configuration, transport: any StreamingTransport, clock: any HalyardClock,
        logHandler: HalyardLogRecordHandler?
    ) {
        drivers = (0..<Self.maxStreams).map { _ in
            EventStreamDriver(
                configuration: configuration, transport: transport, clock: clock, logHandler: logHandler)
        }
    }

    /// The driver of the first stream (tests).
    var first: EventStreamDriver { drivers[0] }

    /// Sets who performs fetches and polling changes (once, before the first advertisement).
    func attach(_ owner: EventStreamDriver.Owner) {
        self.owner.withLock { $0 = owner }
        for (slot, driver) in drivers.enumerated() {
            driver.attach(
                .init(
                    fetch: owner.fetch,
                    pollInterval: { [weak self] interval in self?.wish(interval, slot: slot) }))
        }
    }

    /// The streams a bulk response advertised (already decoded, checked and capped): the n-th
    /// stream goes to the n-th driver; a driver with none withdraws what it followed.
    func advertised(_ streams: [OFREPEventStream]) {
        let count = min(streams.count, Self.maxStreams)
        let withdrawn = state.withLock { s -> [Int] in
            let gone = s.followed.filter { $0 >= count }.sorted()
            s.followed = Set(0..<count)
            return gone
        }
        for slot in 0..<count { drivers[slot].advertised([streams[slot]]) }
        for slot in withdrawn { drivers[slot].advertised([]) }
        // A stream no longer followed has no say in the polling interval (what it last asked
        // for, if it was the last one, has been handed over already).
        apply { s in s.wishes = s.wishes.filter { s.followed.contains($0.key) } }
    }

    /// `FlagClient.setActive(_:)`, for every stream.
    func setActive(_ active: Bool) {
        for driver in drivers { driver.setActive(active) }
    }

    /// The key changed (`setKey`): every stream that authenticates with it reconnects
    /// (``EventStreamDriver/keyChanged()``).
    func keyChanged() {
        for driver in drivers { driver.keyChanged() }
    }

    /// Closes every stream for good.
    func close() {
        for driver in drivers { driver.close() }
    }

    /// The streams' counters, added up; `advertised`, `connected` and `healthy` hold when they
    /// hold for any stream followed.
    var stats: EventStreamStats {
        var total = EventStreamStats()
        for driver in drivers {
            let s = driver.stats
            total.advertised = total.advertised || s.advertised
            total.connected = total.connected || s.connected
            total.healthy = total.healthy || s.healthy
            total.connects += s.connects
            total.connections += s.connections
            total.failures += s.failures
            total.refetchEvents += s.refetchEvents
            total.ignoredEvents += s.ignoredEvents
            total.coalescedEvents += s.coalescedEvents
            total.inactivityCloses += s.inactivityCloses
        }
        return total
    }

    private func wish(_ interval: Duration, slot: Int) {
        apply { s in
            if s.followed.contains(slot) {
                s.wishes[slot] = interval
            } else if s.followed.isEmpty {
                // The last stream withdrawn: its wish (polling at the normal interval) is the
                // client's.
                s.wishes = [slot: interval]
            } else {
                // A withdrawn stream's last word while others are followed: not a wish.
                s.wishes[slot] = nil
            }
        }
    }

    /// Updates the wishes and hands the owner the shortest, when it changed (outside the lock).
    private func apply(_ update: (inout State) -> Void) {
        let interval = state.withLock { s -> Duration? in
            update(&s)
            guard let shortest = s.wishes.values.min(), shortest != s.applied else { return nil }
            s.applied = shortest
            return shortest
        }
        guard let interval, let owner = owner.withLock({ $0 }) else { return }
        owner.pollInterval(interval)
    }
}
