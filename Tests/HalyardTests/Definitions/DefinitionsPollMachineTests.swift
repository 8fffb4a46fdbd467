import Testing

@testable import Halyard

/// The definitions sources' poll policy, driven directly: intervals, validators, backoff,
/// `Retry-After` floors, one check at a time, close.
@Suite struct DefinitionsPollMachineTests {
    static func machine(backoff: Backoff? = Backoff(initial: .seconds(1), maximum: .seconds(300)))
        -> DefinitionsPollMachine
    {
        DefinitionsPollMachine(
            configuration: .init(pollInterval: .seconds(30), pollJitter: 0.1, backoff: backoff))
    }

    @Test func aHealthyCheckWaitsTheJitteredIntervalAndKeepsTheValidator() {
        var m = Self.machine()
        #expect(m.begin(now: .zero) == .check(validator: nil))
        #expect(m.finish(.loaded(validator: "v1"), now: .zero, unit: 0) == .seconds(27))
        #expect(m.nextCheck == .seconds(27))
        #expect(m.begin(now: .seconds(27)) == .check(validator: "v1"))
        #expect(m.finish(.notModified, now: .seconds(27), unit: 0.9999) > .seconds(32.9))
        #expect(m.begin(now: .seconds(60)) == .check(validator: "v1"))
        // A refused document's validator is kept: it is not fetched and refused again.
        m.finish(.refused(validator: "bad"), now: .seconds(60), unit: 0.5)
        #expect(m.begin(now: .seconds(90)) == .check(validator: "bad"))
        m.finish(.failed(retryAfter: nil), now: .seconds(90), unit: 0.5)
        #expect(m.validator == "bad")
    }

    @Test func failuresBackOffAndASuccessResets() {
        var m = Self.machine()
        var now = Duration.zero
        var delays: [Duration] = []
        for _ in 0..<4 {
            #expect(m.begin(now: now) == .check(validator: nil))
            let delay = m.finish(.failed(retryAfter: nil), now: now, unit: 0.9999)
            delays.append(delay)
            now += delay
        }
        #expect(m.failures == 4)
        #expect(delays.map { $0 > .seconds(0.9) && $0 <= .seconds(1) } == [true, false, false, false])
        #expect(delays[3] > .seconds(7.9) && delays[3] <= .seconds(8))
        #expect(m.begin(now: now) == .check(validator: nil))
        #expect(m.finish(.loaded(validator: "v"), now: now, unit: 0.5) == .seconds(30))
        #expect(m.failures == 0)
    }

    @Test func aFileSourceRetriesAtThePollInterval() {
        var m = Self.machine(backoff: nil)
        _ = m.begin(now: .zero)
        #expect(m.finish(.failed(retryAfter: nil), now: .zero, unit: 0.5) == .seconds(30))
    }

    @Test func retryAfterIsAFloorThatNoCheckPasses() {
        var m = Self.machine()
        _ = m.begin(now: .seconds(10))
        let delay = m.finish(.failed(retryAfter: .seconds(120)), now: .seconds(10), unit: 0)
        #expect(delay == .seconds(120))
        #expect(m.retryNotBefore == .seconds(130))
        // An explicit refresh before the floor is deferred, not sent.
        #expect(m.begin(now: .seconds(100)) == .deferred(until: .seconds(130)))
        #expect(m.begin(now: .seconds(130)) == .check(validator: nil))
        m.finish(.notModified, now: .seconds(130), unit: 0.5)
        #expect(m.retryNotBefore == nil)
        // The floor keeps its jitter window: [RA, RA + max(1 s, RA / 10)], capped at 1 h.
        _ = m.begin(now: .seconds(200))
        #expect(m.finish(.failed(retryAfter: .seconds(7_200)), now: .seconds(200), unit: 0) == .seconds(3_600))
        // A zero Retry-After is no floor: the backoff alone.
        var z = Self.machine()
        _ = z.begin(now: .zero)
        #expect(z.finish(.failed(retryAfter: .zero), now: .zero, unit: 0) == .seconds(1))
        #expect(z.retryNotBefore == nil)
    }

    @Test func oneCheckAtATimeAndNoneAfterClose() {
        var m = Self.machine()
        #expect(m.begin(now: .zero) == .check(validator: nil))
        #expect(m.begin(now: .zero) == .busy)
        m.close()
        #expect(m.begin(now: .zero) == .closed)
        m.finish(.loaded(validator: "v"), now: .zero, unit: 0.5)
        #expect(m.nextCheck == nil)
        #expect(m.begin(now: .seconds(60)) == .closed)
    }
}
