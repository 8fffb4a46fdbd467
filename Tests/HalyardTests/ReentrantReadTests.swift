import Foundation
import Testing

@testable import Halyard

/// docs/architecture.md: nothing but Halyard's own lookup and copy-out runs while a snapshot is protected.
///
/// User code reachable from a read — the injected clock (through the exposure recorder) and a
/// `FlagValue` conformance's `_fromJSON` — reads a flag on another client (which, with one
/// hazard slot per thread, would clear the outer read's protection) and publishes on the outer
/// client while the outer read is in progress. The outer snapshot must stay alive until the
/// outer read is done with it: the live-object registry must still list it, and under
/// AddressSanitizer nothing may touch freed memory.
@Suite(.serialized) struct ReentrantReadTests {
    /// A clock that runs a one-shot hook the next time the recorder asks it for the time.
    final class ReentrantClock: HalyardClock, Sendable {
        let hook = Locked<(@Sendable () -> Void)?>(nil)
        var monotonicNow: Duration {
            let run = hook.withLock { h -> (@Sendable () -> Void)? in
                defer { h = nil }
                return h
            }
            run?()
            return .seconds(1)
        }
        var wallNow: Date { Date(timeIntervalSince1970: 1_800_000_000) }
        func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
    }

    struct AcceptingTransport: FlagTransport {
        func send(_ request: TransportRequest) async throws -> TransportResponse { TransportResponse(status: 202) }
    }

    static func snapshot(_ value: Int64, _ counter: LiveCounter) -> Snapshot {
        Snapshot(
            flags: [
                ServedFlag(key: "n", value: .int(value), variant: "v\(value)", reason: .targetingMatch),
                ServedFlag(key: "j", value: .string("s\(value)"), variant: "v\(value)", reason: .targetingMatch),
            ],
            source: .network, contextFingerprint: "ctx", liveCounter: counter)
    }

    /// Publishes the first snapshot and returns its serial (no reference kept: the test must
    /// not be what keeps it alive).
    static func publishFirst(_ client: FlagClient, _ counter: LiveCounter) -> UInt {
        let first = snapshot(1, counter)
        client.store.publish(first)
        return first.liveSerial
    }

    /// The outer client (exposures on, recorder driven by `clock`) and an unrelated one.
    static func clients(clock: ReentrantClock) throws -> (outer: FlagClient, other: FlagClient) {
        let recorder = ExposureRecorder(
            options: ExposureOptions(), clock: clock, transport: AcceptingTransport(),
            endpoint: try #require(URL(string: "http://127.0.0.1:9")),
            meta: ExposureMeta(sdk: "test", version: "1", appId: "t", installId: "t"), startsTicker: false)
        let outer = FlagClient(mode: .online, exposureSink: recorder)
        let other = try FlagClient(offlineValues: ["x": .bool(true)])
        return (outer, other)
    }

    /// What the hook saw: whether the outer read's snapshot was still alive after the publishes.
    final class Observation: Sendable {
        let outerAlive = Locked<Bool?>(nil)
        let nestedRead = Locked<Bool?>(nil)
    }

    /// The hook: a nested read on another client, then publishes on the outer store, then a
    /// look at whether the snapshot the outer read started from still exists.
    static func hook(
        outer: FlagClient, other: FlagClient, counter: LiveCounter, serial: UInt, observation: Observation
    ) -> @Sendable () -> Void {
        {
            observation.nestedRead.withLock { $0 = other.bool("x", default: false) }
            for value in 2...4 { outer.store.publish(snapshot(Int64(value), counter)) }
            observation.outerAlive.withLock { $0 = counter.isLive(serial) }
        }
    }

    /// Two clients on one ``ReentrantClock``: the outer client's first value is published and
    /// counted, and the clock's hook (run by the outer client's exposure slow path) reads the
    /// other client and publishes three more snapshots on the outer one.
    static func armedClients() throws -> (outer: FlagClient, counter: LiveCounter, observation: Observation) {
        let clock = ReentrantClock()
        let (outer, other) = try clients(clock: clock)
        let counter = LiveCounter()
        let serial = publishFirst(outer, counter)
        let observation = Observation()
        clock.hook.withLock {
            $0 = hook(outer: outer, other: other, counter: counter, serial: serial, observation: observation)
        }
        return (outer, counter, observation)
    }

    @Test func reentrantClockCannotFreeTheSnapshotOfTheReadInProgress() throws {
        let (outer, counter, observation) = try Self.armedClients()
        // The first read of "n" is not yet exposed: its slow path asks the recorder, which asks
        // the clock, which runs the hook.
        #expect(outer.int("n", default: -1) == 1)
        #expect(observation.nestedRead.value == true)
        #expect(observation.outerAlive.value == true, "the snapshot of the read in progress was freed")
        #expect(outer.int("n", default: -1) == 4)
        // Once the outer read is over, the old snapshots are reclaimable.
        #expect(outer.store.reclaim() == 0)
        #expect(counter.value == 1)
    }

    @Test func reentrantClockThroughAHandle() throws {
        let (outer, counter, observation) = try Self.armedClients()
        let handle = outer.handle("n", default: -1)
        #expect(handle.value == 1 || handle.value == 4)
        #expect(observation.nestedRead.value == true)
        #expect(observation.outerAlive.value == true, "the snapshot of the read in progress was freed")
        #expect(handle.value == 4)
        #expect(outer.store.reclaim() == 0)
        #expect(counter.value == 1)
    }

    /// A user conformance of `FlagValue` (unsupported, but possible) whose conversion runs code.
    struct Reentrant: FlagValue, Equatable {
        static let hook = Locked<(@Sendable () -> Void)?>(nil)
        let json: JSONValue
        static var _flagValueKind: _FlagValueKind { .json }
        static func _fromJSON(_ value: JSONValue) -> Reentrant? {
            let run = hook.withLock { h -> (@Sendable () -> Void)? in
                defer { h = nil }
                return h
            }
            run?()
            return Reentrant(json: value)
        }
        static func _fromBits(_ bits: UInt64) -> Reentrant { Reentrant(json: .null) }
    }

    @Test func reentrantFlagValueCannotFreeTheSnapshotOfTheReadInProgress() throws {
        let outer = FlagClient(mode: .online, exposureSink: nil)
        let other = try FlagClient(offlineValues: ["x": .bool(true)])
        let counter = LiveCounter()
        let serial = Self.publishFirst(outer, counter)
        let observation = Observation()
        Reentrant.hook.withLock {
            $0 = Self.hook(outer: outer, other: other, counter: counter, serial: serial, observation: observation)
        }
        let result = outer.evaluation("j", default: Reentrant(json: .null))
        #expect(result.value == Reentrant(json: .string("s1")))
        #expect(result.variant == "v1")
        #expect(observation.nestedRead.value == true)
        // The conversion runs after the protection is released (the value was copied out), so
        // the old snapshot may be gone by now; what matters is that the read did not use it.
        #expect(outer.string("j", default: "") == "s4")
        #expect(outer.store.reclaim() == 0)
        #expect(counter.value == 1)
    }
}
