/// How urgently a fetch needs a slot (docs/service.md, "Brownout"): the queue's one priority rule.
///
/// Refreshes of contexts the service is serving go first: their values expire at
/// `maxStaleness`, and a hot user's requests depend on them. Cold fetches follow, in arrival
/// order. Anything else that re-fetches a held context (an event stream's change notice, say)
/// enqueues as `.refresh`.
enum FetchPriority: Int, Sendable, Hashable, CaseIterable {
    /// A context whose values are held (a background refresh, a change notice).
    case refresh = 0
    /// A context with nothing held (a miss).
    case cold = 1
}

/// The fetches waiting for a slot, by ticket: a pure value type (no threads, no continuations)
/// with two FIFO lanes, refreshes before cold fetches, bounded by ``capacity`` in all.
///
/// When the queue is full a refresh still gets in by displacing the newest cold fetch (the one
/// that has waited least); a cold fetch is then refused.
struct FetchQueue: Sendable {
    /// What ``enqueue(_:_:)`` did.
    enum Admission: Equatable, Sendable {
        case queued
        /// Queued, and this cold ticket was removed to make room (refuse it).
        case queuedDisplacing(UInt64)
        /// Not queued.
        case full
    }

    /// The most tickets waiting at once.
    let capacity: Int
    private var lanes: [[UInt64]] = [[], []]
    private var heads = [0, 0]
    private var members: [UInt64: FetchPriority] = [:]

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    /// Tickets waiting now.
    var count: Int { members.count }

    /// Whether `ticket` is waiting.
    func contains(_ ticket: UInt64) -> Bool { members[ticket] != nil }

    /// Adds `ticket` at the back of its priority's lane.
    mutating func enqueue(_ ticket: UInt64, _ priority: FetchPriority) -> Admission {
        var displaced: UInt64?
        if members.count >= capacity {
            guard priority == .refresh, let newest = newestCold() else { return .full }
            members.removeValue(forKey: newest)
            displaced = newest
        }
        members[ticket] = priority
        lanes[priority.rawValue].append(ticket)
        compact(priority.rawValue)
        return displaced.map { .queuedDisplacing($0) } ?? .queued
    }

    /// Removes and returns the next ticket: the oldest refresh, else the oldest cold fetch.
    mutating func popNext() -> UInt64? {
        for lane in 0..<lanes.count {
            while heads[lane] < lanes[lane].count {
                let ticket = lanes[lane][heads[lane]]
                heads[lane] += 1
                if members.removeValue(forKey: ticket) != nil {
                    compact(lane)
                    return ticket
                }
            }
            compact(lane)
        }
        return nil
    }

    /// Removes `ticket` wherever it waits; whether it was waiting.
    @discardableResult
    mutating func remove(_ ticket: UInt64) -> Bool {
        guard let priority = members.removeValue(forKey: ticket) else { return false }
        compact(priority.rawValue)
        return true
    }

    /// Removes every ticket; returns them.
    mutating func removeAll() -> [UInt64] {
        let all = Array(members.keys)
        members.removeAll()
        lanes = [[], []]
        heads = [0, 0]
        return all
    }

    private func newestCold() -> UInt64? {
        let lane = lanes[FetchPriority.cold.rawValue]
        var i = lane.count - 1
        while i >= heads[FetchPriority.cold.rawValue] {
            if members[lane[i]] != nil { return lane[i] }
            i -= 1
        }
        return nil
    }

    /// Drops consumed and removed tickets from a lane (amortised O(1)); a lane never holds
    /// more than `2 x capacity + 1024` tickets, live or not.
    private mutating func compact(_ lane: Int) {
        if members.isEmpty || heads[lane] >= lanes[lane].count {
            lanes[lane].removeAll(keepingCapacity: true)
            heads[lane] = 0
        } else if heads[lane] > 1024 && heads[lane] * 2 > lanes[lane].count {
            lanes[lane].removeFirst(heads[lane])
            heads[lane] = 0
        } else if lanes[lane].count - heads[lane] > 2 * capacity + 1024 {
            lanes[lane] = lanes[lane][heads[lane]...].filter { members[$0] != nil }
            heads[lane] = 0
        }
    }
}
