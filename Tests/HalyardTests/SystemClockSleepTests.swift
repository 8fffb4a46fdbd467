import Foundation
import Testing

@testable import Halyard

/// `SystemClock.sleep(for:)` keeps `Task.sleep`'s contract (on Linux it sleeps on a Dispatch
/// timer, `TimerSleep`, so that a cancelled sleep frees its memory at once: the memory figure is
/// `TransportProcessTests.cancelledSleepsKeepNoMemory`).
@Suite struct SystemClockSleepTests {
    let clock = SystemClock()

    @Test func sleepsAtLeastTheDuration() async throws {
        let start = clock.monotonicNow
        try await clock.sleep(for: .milliseconds(30))
        #expect(clock.monotonicNow - start >= .milliseconds(30))
    }

    @Test(arguments: [Duration.zero, .milliseconds(-5), .seconds(Int64.min)])
    func aNonPositiveDurationReturnsAtOnce(duration: Duration) async throws {
        try await Wait.result("sleep(for: \(duration))") { try await SystemClock().sleep(for: duration) }
    }

    @Test func aSleepInACancelledTaskThrowsAtOnce() async throws {
        let clock = self.clock
        let outcome = try await Wait.result("a sleep in a cancelled task") { () -> Bool in
            let task = Task { () -> Bool in
                withUnsafeCurrentTask { $0?.cancel() }
                do {
                    try await clock.sleep(for: .seconds(3600))
                    return false
                } catch is CancellationError { return true } catch { return false }
            }
            return await task.value
        }
        #expect(outcome, "a cancelled task's sleep must throw CancellationError")
    }

    @Test func cancellingAnHourLongSleepEndsItAtOnce() async throws {
        let clock = self.clock
        let started = Locked(false)
        let task = Task { () -> Bool in
            started.withLock { $0 = true }
            do {
                try await clock.sleep(for: .seconds(3600))
                return false
            } catch is CancellationError { return true } catch { return false }
        }
        try await Wait.until("the sleeping task started") { started.withLock { $0 } }
        try await Task.sleep(for: .milliseconds(20))  // most likely inside the sleep by now
        task.cancel()
        let threw = try await Wait.result("the cancelled sleep to end") { await task.value }
        #expect(threw, "a cancelled sleep must throw CancellationError")
    }

    /// Many sleeps at once each end at their own time (one timer each, none lost).
    @Test func concurrentSleepsAllEnd() async throws {
        let clock = self.clock
        let ended = try await Wait.result("200 concurrent sleeps") { () -> Int in
            await withTaskGroup(of: Int.self) { group in
                for i in 0..<200 {
                    group.addTask { (try? await clock.sleep(for: .milliseconds(Int64(i % 20)))) == nil ? 0 : 1 }
                }
                return await group.reduce(0, +)
            }
        }
        #expect(ended == 200)
    }
}
