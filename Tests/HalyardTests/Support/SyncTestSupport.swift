import Foundation
import HalyardTesting

@testable import Halyard

/// Collects a client's events in order (test support).
final class EventRecorder: Sendable {
    private let events = Locked<[ClientEvent]>([])
    private let task = Locked<Task<Void, Never>?>(nil)

    init(_ client: FlagClient) {
        let stream = client.events()
        let events = self.events
        task.withLock {
            $0 = Task {
                for await event in stream { events.withLock { $0.append(event) } }
            }
        }
    }

    var all: [ClientEvent] { events.withLock { $0 } }

    /// Waits (real time, up to `seconds`) until `predicate` holds for the events so far.
    @discardableResult
    func wait(seconds: Double = 5, until predicate: ([ClientEvent]) -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if predicate(all) { return true }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return predicate(all)
    }

    func stop() { task.withLock { $0?.cancel() } }
}

/// Polls `condition` (real time) until it holds or `seconds` pass.
@discardableResult
func waitUntil(seconds: Double = 5, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return condition()
}

extension ClientEvent {
    var isError: Bool { if case .error = self { true } else { false } }
    var errorCode: FlagErrorCode? { if case .error(let code, _) = self { code } else { nil } }
    var changedKeys: Set<String>? { if case .configurationChanged(let keys) = self { keys } else { nil } }
}

extension ManualClock {
    /// Waits (real time) until at least `sleepers` tasks sleep on this clock, then advances it.
    /// Avoids advancing before the engine's timer task has started sleeping.
    func advanceWhenArmed(by duration: Duration, sleepers: Int = 1) async {
        await waitUntil { self.sleeperCount >= sleepers }
        advance(by: duration)
    }
}

/// Gzip-compresses test bodies.
func gzipForTest(_ data: Data) -> Data { Gzip.compress(data) }
