public import Foundation
public import Halyard

/// A clock that only moves when told to, for deterministic tests.
///
/// ```swift
/// let clock = ManualClock()
/// clock.advance(by: .seconds(30))   // wakes every sleeper whose deadline has passed
/// ```
public final class ManualClock: HalyardClock, Sendable {
    private struct Sleeper {
        var deadline: Duration
        var continuation: CheckedContinuation<Void, any Error>
    }
    private struct State {
        var now: Duration = .zero
        var wallOrigin: Date
        var sleepers: [UInt64: Sleeper] = [:]
        var nextID: UInt64 = 0
    }
    private let state: Locked<State>

    /// Creates a manual clock whose wall time starts at `wallStart`.
    public init(wallStart: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        state = Locked(State(wallOrigin: wallStart))
    }

    public var monotonicNow: Duration { state.withLock { $0.now } }

    public var wallNow: Date {
        state.withLock { s in
            s.wallOrigin.addingTimeInterval(s.now.fractionalSeconds)
        }
    }

    /// How many tasks are currently sleeping on this clock.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    public func sleep(for duration: Duration) async throws {
        let id = state.withLock { s -> UInt64 in
            s.nextID += 1
            return s.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let resumeNow = state.withLock { s -> Bool in
                    if duration <= .zero || Task.isCancelled { return true }
                    s.sleepers[id] = Sleeper(deadline: s.now + duration, continuation: c)
                    return false
                }
                if resumeNow {
                    if Task.isCancelled { c.resume(throwing: CancellationError()) } else { c.resume() }
                }
            }
        } onCancel: {
            let sleeper = state.withLock { $0.sleepers.removeValue(forKey: id) }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward and wakes every sleeper whose deadline has been reached.
    public func advance(by duration: Duration) {
        let due = state.withLock { s -> [Sleeper] in
            s.now += duration
            let ready = s.sleepers.filter { $0.value.deadline <= s.now }
            for id in ready.keys { s.sleepers.removeValue(forKey: id) }
            return ready.values.sorted { $0.deadline < $1.deadline }
        }
        for sleeper in due { sleeper.continuation.resume() }
    }
}
