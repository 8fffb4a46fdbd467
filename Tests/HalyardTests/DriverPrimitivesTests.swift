import Dispatch
import HalyardTesting
import Testing

@testable import Halyard

/// The two pieces ``RefreshEngine`` and ``EventStreamDriver`` share: the one pending wake-up
/// (``WakeTimer``) and the ordered, one-thread-at-a-time delivery of what their state machines
/// decide (``Locked/drain(_:)``).
@Suite struct DriverPrimitivesTests {
    // MARK: - WakeTimer

    /// The wakes a timer fired, and the `fire` closure that records them.
    static func recorder() -> (fired: Locked<[Duration]>, fire: @Sendable (Duration) -> Void) {
        let fired = Locked<[Duration]>([])
        return (fired, { wake in fired.withLock { $0.append(wake) } })
    }

    @Test func aTimerKeepsATaskForTheSameWakeAndHandsBackOneItReplaces() {
        let clock = ManualClock()
        var timer = WakeTimer()
        var cancels: [Task<Void, Never>] = []
        timer.schedule(.seconds(10), clock: clock, cancels: &cancels) { _ in }
        #expect(timer.wake == .seconds(10))
        timer.schedule(.seconds(10), clock: clock, cancels: &cancels) { _ in }
        #expect(cancels.isEmpty, "the same wake must keep the sleeping task")
        timer.schedule(.seconds(20), clock: clock, cancels: &cancels) { _ in }
        #expect(cancels.count == 1 && timer.wake == .seconds(20))
        timer.schedule(nil, clock: clock, cancels: &cancels) { _ in }
        #expect(cancels.count == 2 && timer.wake == nil)
        for task in cancels { task.cancel() }
    }

    @Test func aTimerFiresWhenTheClockReachesItsWakeAndNotBefore() async {
        let clock = ManualClock()
        let (fired, fire) = Self.recorder()
        var timer = WakeTimer()
        var cancels: [Task<Void, Never>] = []
        timer.schedule(.seconds(5), clock: clock, cancels: &cancels, fire: fire)
        await clock.advanceWhenArmed(by: .seconds(4))
        // The sleeper is still due at 5 s: nothing fires until the clock gets there.
        #expect(await waitUntil { clock.sleeperCount == 1 }, "the timer's task must still be sleeping at 4 s")
        #expect(fired.value.isEmpty, "fired at 4 s: \(fired.value)")
        clock.advance(by: .seconds(1))
        #expect(await waitUntil { fired.value == [.seconds(5)] }, "fired: \(fired.value)")
        let first = timer.take(.seconds(5))
        let second = timer.take(.seconds(5))
        #expect(first, "the wake that fired must be the pending one")
        #expect(!second, "a wake is taken once")
    }

    @Test func aReplacedWakeIsNotTakenAndACancelledTaskNeverFires() async throws {
        let clock = ManualClock()
        let (fired, fire) = Self.recorder()
        var timer = WakeTimer()
        var cancels: [Task<Void, Never>] = []
        timer.schedule(.seconds(5), clock: clock, cancels: &cancels, fire: fire)
        #expect(await waitUntil { clock.sleeperCount == 1 })
        timer.schedule(.seconds(50), clock: clock, cancels: &cancels, fire: fire)
        let replaced = timer.take(.seconds(5))
        #expect(!replaced, "the replaced wake must not count as pending")
        for task in cancels { task.cancel() }
        let ended = Locked(false)
        let cancelled = try #require(cancels.first, "the replaced timer task was not handed back")
        Task {
            await cancelled.value
            ended.withLock { $0 = true }
        }
        #expect(await waitUntil { ended.value }, "the cancelled timer task did not end")
        clock.advance(by: .seconds(10))
        #expect(fired.value.isEmpty, "a cancelled timer fired: \(fired.value)")
        timer.schedule(nil, clock: clock, cancels: &cancels) { _ in }
        for task in cancels { task.cancel() }
    }

    // MARK: - Outbox

    struct Box: OutboxState {
        var outbox: [Int] = []
        var draining = false
    }

    @Test func aDrainDeliversInOrderIncludingWhatADeliveryAdds() {
        let state = Locked(Box(outbox: [1, 2, 3]))
        var delivered: [Int] = []
        state.drain { item in
            delivered.append(item)
            // A delivery that makes the machine decide more (e.g. a publish that schedules a fetch).
            if item < 3 { state.withLock { $0.outbox.append(item * 10) } }
            // Draining from inside a delivery returns at once: the outer drain takes it.
            state.drain { delivered.append(-$0) }
        }
        #expect(delivered == [1, 2, 3, 10, 20], "\(delivered)")
        #expect(state.value.outbox.isEmpty && !state.value.draining)
    }

    @Test func concurrentDrainsDeliverEachItemOnceFromOneThreadAtATime() {
        let state = Locked(Box())
        let threads = 4
        let perThread = 2_000
        let inside = Locked(0)
        let overlap = Locked(false)
        let delivered = Locked<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for i in 0..<perThread {
                state.withLock { $0.outbox.append(thread * perThread + i) }
                state.drain { item in
                    let concurrent = inside.withLock { count -> Int in
                        count += 1
                        return count
                    }
                    if concurrent > 1 { overlap.withLock { $0 = true } }
                    delivered.withLock { $0.append(item) }
                    inside.withLock { $0 -= 1 }
                }
            }
        }
        let all = delivered.value
        #expect(!overlap.value, "two threads delivered at once")
        #expect(all.count == threads * perThread, "delivered \(all.count)")
        #expect(Set(all).count == all.count, "an item was delivered twice")
        for thread in 0..<threads {
            let mine = all.filter { $0 / perThread == thread }
            let late = zip(mine, mine.dropFirst()).first { $0 > $1 }
            #expect(late == nil, "thread \(thread)'s item \(late?.0 ?? 0) was delivered before \(late?.1 ?? 0)")
        }
    }
}
