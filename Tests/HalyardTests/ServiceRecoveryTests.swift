import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// Answers the OFREP request of `user-0` with 200 only when the test releases it
/// (``release()``), and every other context with a 429 (no `Retry-After`).
final class HeldSuccessTransport: FlagTransport, Sendable {
    private let waiting = Locked<[CheckedContinuation<Void, Never>]>([])
    var held: Int { waiting.withLock { $0.count } }

    func release() {
        let all = waiting.withLock { w -> [CheckedContinuation<Void, Never>] in
            defer { w.removeAll() }
            return w
        }
        for c in all { c.resume() }
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        guard request.url.path.hasSuffix("/ofrep/v1/evaluate/flags") else { return TransportResponse(status: 404) }
        guard case .object(let body)? = OFREPWire.parse(request.body), case .object(let context)? = body["context"],
            context["targetingKey"] == .string("user-0")
        else { return TransportResponse(status: 429) }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in waiting.withLock { $0.append(c) } }
        let flags = #"{"flags":[{"key":"a","value":true,"reason":"STATIC"}]}"#
        return TransportResponse(status: 200, headers: ["Content-Type": "application/json"], body: Data(flags.utf8))
    }
}

/// Service mode after a brownout: refreshes in the fetch gate, the probe before expiry, the
/// recovery bound, failure records, the service-wide pause's growth, and any `maxContexts`
/// (SPEC §12, docs/service.md, "Recovery" and "Failure records").
@Suite struct ServiceRecoveryTests {
    /// The targeting key's number (`user-12` → 12).
    static func id(_ key: String) -> Int { Int(key.dropFirst(5)) ?? -1 }

    /// A stale hot context whose refresh finds no room creates no flight and no task: the gate
    /// sheds it and gives it a retry time, so however many requests read it, it gets at most
    /// one refresh task per backoff step (before: a flight, a task and three fetcher lock
    /// takes per request, the task refused by the full queue).
    @Test func aShedRefreshWaitsForItsBackoffStep() async throws {
        let plane = ServiceBrownoutTests.perContextPlane()
        let transport = GatedTransport(plane)
        let clock = ManualClock()
        var options = plane.makeServiceOptions()
        options.transport = transport
        options.requestTimeout = GatedTransport.requestTimeout
        options.clock = clock
        options.maxConcurrentFetches = 1
        options.maxQueuedFetches = 2
        let service = try FlagService(options: options)
        defer { service.close() }
        transport.allow(10)
        for id in 0..<10 { #expect(await service.flags(for: serviceContext(id)).hasValues) }
        clock.advance(by: .seconds(31))
        let before = service.fetcher.tasksCreated
        for _ in 0..<20 {
            for id in 0..<10 { #expect(service.flagsIfCached(for: serviceContext(id)).hasValues) }
            // Whatever was created and refused has ended: the three with room remain.
            try await Wait.until("the refreshes with room only") { service.stats.fetching.inFlight == 3 }
        }
        #expect(service.fetcher.tasksCreated - before == 3, "a refresh task per request that found no room")
        #expect(service.stats.fetching.shed == 7, "shed once each, then waiting for their retry time")
        // A backoff step later the gate is still full: shed again, still no task.
        clock.advance(by: .seconds(2))
        for id in 0..<10 { _ = service.flagsIfCached(for: serviceContext(id)) }
        #expect(service.fetcher.tasksCreated - before == 3)
        #expect(service.stats.fetching.shed == 14)
        // The plane answers: every context is refreshed, each by one task that sent its request.
        transport.allow(1_000)
        try await Wait.until("the held refreshes answered") { service.stats.fetching.inFlight == 0 }
        for _ in 0..<20 where transport.received < 20 {
            clock.advance(by: .seconds(1))
            for id in 0..<10 { _ = service.flagsIfCached(for: serviceContext(id)) }
            try await Wait.until("the refreshes answered") { service.stats.fetching.inFlight == 0 }
        }
        #expect(transport.received == 20)
        #expect(service.fetcher.tasksCreated - before == 10)
    }

    static func probeService(
        _ fault: ServiceFaultTransport.Fault, clock: ManualClock
    ) throws -> (FlagService, ServiceFaultTransport) {
        let plane = ServiceBrownoutTests.perContextPlane()
        let transport = ServiceFaultTransport(plane) { $0 == "user-999" ? fault : nil }
        var options = plane.makeServiceOptions()
        options.transport = transport
        options.clock = clock
        options.backoffAfterFailures = 1
        options.maxStaleness = .seconds(60)  // refreshAfter 30 s: probes in the last 15 s
        return (try FlagService(options: options), transport)
    }

    /// A service-wide pause (a 503 with `Retry-After: 120`) that would outlast a held entry
    /// lets one request for it through before it expires: the entry is served past its first
    /// expiry (before: no fetch until the pause ended, defaults from the expiry on).
    @Test func aProbeIsLetThroughBeforeAnEntryExpires() async throws {
        let clock = ManualClock()
        let (service, transport) = try Self.probeService(.status(503, headers: ["Retry-After": "120"]), clock: clock)
        defer { service.close() }
        let hot = serviceContext(1)
        #expect(await service.flags(for: hot).hasValues)
        clock.advance(by: .seconds(40))
        _ = await service.flags(for: serviceContext(999))
        // 40 s + the Retry-After's jittered floor, in [120 s, 132 s].
        let pausedUntil = try #require(service.fetcher.gate(now: clock.monotonicNow).pausedUntil)
        #expect(pausedUntil >= .seconds(160) && pausedUntil <= .seconds(172), "\(pausedUntil)")
        #expect(service.flagsIfCached(for: hot).hasValues)  // stale, paused, not yet near expiry
        #expect(transport.received["pass"] == 1)
        clock.advance(by: .seconds(10))  // 10 s before its expiry
        #expect(service.flagsIfCached(for: hot).hasValues)
        try await Wait.until("the probe answered", seconds: 20) {
            transport.received["pass"] == 2 && service.stats.fetching.inFlight == 0
        }
        for _ in 0..<5 { _ = service.flagsIfCached(for: hot) }  // one probe, not one per read
        clock.advance(by: .seconds(20))  // past the first expiry, still paused
        #expect(service.flagsIfCached(for: hot).hasValues)
        let stats = service.stats
        #expect(stats.fetching.probes == 1 && transport.received["pass"] == 2)
    }

    /// A 429's `Retry-After` is the server's own word: no probe goes before it.
    @Test func aProbeWaitsForA429sRetryAfter() async throws {
        let clock = ManualClock()
        let (service, transport) = try Self.probeService(.status(429, headers: ["Retry-After": "120"]), clock: clock)
        defer { service.close() }
        let hot = serviceContext(1)
        #expect(await service.flags(for: hot).hasValues)
        clock.advance(by: .seconds(40))
        _ = await service.flags(for: serviceContext(999))
        clock.advance(by: .seconds(10))
        _ = service.flagsIfCached(for: hot)
        #expect(service.stats.fetching.inFlight == 0 && service.stats.fetching.probes == 0)
        clock.advance(by: .seconds(20))
        #expect(service.flagsIfCached(for: hot).unavailableReason == .providerNotReady)
        #expect(transport.received["pass"] == 1)
    }

    /// 200 hot contexts read every second through 8 minutes of 503s (their values expire in
    /// the middle of it), then 200s: 30 s after the plane recovers, every one is served values
    /// (before: the pause and each context's backoff grew to 5 minutes).
    ///
    /// `burst`: every second's 200 reads find their fetches outstanding (held at the transport
    /// until the reads end), as on a machine too loaded to run a fetch task meanwhile. The gate
    /// (32 slots and a queue of 128) then sheds 40 refreshes in each round.
    @Test(arguments: [false, true]) func hotContextsAreServedWithinThirtySecondsOfRecovery(burst: Bool) async throws {
        let plane = ServiceBrownoutTests.perContextPlane()
        let outage = Locked(false)
        let transport = ServiceFaultTransport(plane) { _ in outage.withLock { $0 } ? .status(503) : nil }
        let barrier = BarrierTransport(transport)
        let clock = ManualClock()
        var options = plane.makeServiceOptions()
        options.transport = barrier
        options.clock = clock
        options.maxStaleness = .seconds(300)  // expires during the outage
        let service = try FlagService(options: options)
        defer { service.close() }
        let hot = (0..<200).map { serviceContext($0) }
        for context in hot { #expect(await service.flags(for: context).hasValues) }
        // The longest the service was paused ahead of any second (the recovery interval bounds it).
        var longestPause = Duration.zero
        func second() async throws -> Int {
            clock.advance(by: .seconds(1))
            if burst { barrier.close() }
            var served = 0
            for context in hot where service.flagsIfCached(for: context).hasValues { served += 1 }
            barrier.open()
            try await Wait.until("this second's fetches answered") { service.stats.fetching.inFlight == 0 }
            let now = clock.monotonicNow
            if let until = service.fetcher.gate(now: now).pausedUntil { longestPause = max(longestPause, until - now) }
            return served
        }
        outage.withLock { $0 = true }
        var served = 0
        for _ in 0..<480 { served = try await second() }
        #expect(served == 0, "the values expired during the outage")
        #expect(longestPause > .zero && longestPause <= .seconds(15), "\(longestPause)")  // refreshAfter / 2
        let outageRequests = transport.received["status 503"] ?? 0
        #expect(service.status == .error && (transport.received["status 503"] ?? 0) > 0)
        outage.withLock { $0 = false }
        var servedBySecond: [Int] = []
        for _ in 0..<30 { servedBySecond.append(try await second()) }
        served = servedBySecond.last ?? 0
        let stats = service.stats
        let seconds =
            "served by second: \(servedBySecond); sheds \(stats.fetching.shed), probes \(stats.fetching.probes)"
        #expect(served == 200, "30 s after the recovery; \(seconds)")
        // The rule's own bound (docs/service.md, "Recovery"): the pause in force and each
        // context's backoff end within the recovery interval (15 s) of the last failure, and a
        // context the full gate sheds then waits at most half of it more. 22.5 s: its request
        // goes at the 23rd second's reads, and the 24th second's count sees it.
        #expect(servedBySecond.count == 30 && servedBySecond[23] == 200, "24 s after the recovery; \(seconds)")
        #expect(service.status == .ready)
        // What the outage cost the plane: a few requests per pause and one probe per context
        // (~300 in the 8 minutes here), not a request per read.
        #expect(outageRequests < 1_000, "\(outageRequests) requests in 8 minutes")
    }

    /// A held context's backoff is drawn under a ceiling capped at the recovery interval, and a
    /// shed refresh's step under half of it, so the draws keep their spread whatever the count
    /// (before: drawn under the uncapped ceiling and then cut to the cap, every draw after a
    /// few failures or sheds was the cap itself: the contexts retried all at once, and one the
    /// gate shed after a pause waited a whole recovery interval more).
    @Test func heldAndShedDelaysKeepTheirSpreadUnderTheirCaps() throws {
        let service = try FlagService(options: ServiceBrownoutTests.perContextPlane().makeServiceOptions())
        defer { service.close() }
        let fetcher = service.fetcher
        let recovery = fetcher.recoveryInterval
        #expect(recovery == .seconds(15), "half of refreshAfter")
        let units = [0.0, 0.25, 0.5, 0.75, 0.999]
        for count in [1, 3, 6, 20, 1_000] {
            let held = units.map { fetcher.contextDelay(failures: count, unit: $0, held: true) }
            #expect(held.allSatisfy { $0 >= .milliseconds(500) && $0 <= recovery }, "\(count) failures: \(held)")
            #expect(Set(held).count == units.count, "\(count) failures, draws not spread: \(held)")
            let shed = units.map { fetcher.shedDelay(sheds: count, unit: $0) }
            #expect(shed.allSatisfy { $0 >= .milliseconds(500) && $0 <= recovery / 2 }, "\(count) sheds: \(shed)")
            #expect(Set(shed).count == units.count, "\(count) sheds, draws not spread: \(shed)")
        }
        // A context without values still backs off up to maxBackoff.
        #expect(fetcher.contextDelay(failures: 1_000, unit: 0.999, held: false) > .seconds(250))
    }

    /// Failures of contexts without values go to their own table: they never evict a held
    /// context (before: each 503 of a new context stored a negative entry, evicting one).
    @Test func failureRecordsNeverEvictAServableEntry() async throws {
        let plane = ServiceBrownoutTests.perContextPlane()
        let transport = ServiceFaultTransport(plane) { Self.id($0) >= 100 ? .status(503) : nil }
        var options = plane.makeServiceOptions()
        options.transport = transport
        options.clock = ManualClock()
        options.maxContexts = 8
        options.maxCacheBytes = 100_000  // one shard of 8 entries
        let service = try FlagService(options: options)
        defer { service.close() }
        #expect(service.cache.shards.count == 1)
        for id in 0..<8 { #expect(await service.flags(for: serviceContext(id)).hasValues) }
        for id in 100..<120 {
            #expect(await service.flags(for: serviceContext(id)).unavailableReason == .providerNotReady)
        }
        let stats = service.stats
        #expect(stats.cache.evictions == 0 && stats.cache.contextsHeld == 8 && stats.cache.failureRecords == 20)
        for id in 0..<8 { #expect(service.flagsIfCached(for: serviceContext(id)).hasValues) }
        // Each failing context keeps its backoff: asked again at once, nothing is sent.
        for id in 100..<120 { _ = await service.flags(for: serviceContext(id)) }
        #expect(transport.received["status 503"] == 20)
    }

    /// With frequency admission and a full cache, a 403 context's record is kept (before: the
    /// filter refused the negative entry, and the context was fetched on every request).
    @Test func aForbiddenContextKeepsItsBackoffWhateverTheAdmissionPolicy() async throws {
        let plane = ServiceBrownoutTests.perContextPlane()
        let transport = ServiceFaultTransport(plane) { $0 == "user-50" ? .status(403) : nil }
        var options = plane.makeServiceOptions()
        options.transport = transport
        options.clock = ManualClock()
        options.maxContexts = 8
        options.maxCacheBytes = 100_000
        options.frequencyAdmission = true
        let service = try FlagService(options: options)
        defer { service.close() }
        for _ in 0..<5 {
            for id in 0..<8 { #expect(await service.flags(for: serviceContext(id)).hasValues) }
        }
        for _ in 0..<10 {
            #expect(await service.flags(for: serviceContext(50)).unavailableReason == .providerFatal)
        }
        #expect(transport.received["status 403"] == 1)
        let stats = service.stats
        #expect(stats.cache.failureRecords == 1 && stats.cache.contextsHeld == 8 && stats.cache.evictions == 0)
    }

    /// The failure table is bounded: when full, the record retried soonest goes.
    @Test func theFailureTableIsBounded() {
        var shard = ContextCache.Shard(maxCount: 8, admission: false, maxFailureRecords: 4)
        for i in 0..<10 {
            shard.recordFailure(
                "k\(i)", FailureRecord(code: .providerNotReady, retryAt: .seconds(100 - i), failures: 1))
        }
        #expect(shard.failureRecords.count == 4 && shard.failureEvictions == 6)
        // Each newcomer had the soonest retry time of all: the one before it made room for it.
        #expect(Set(shard.failureRecords.keys) == ["k0", "k1", "k2", "k9"])
    }

    /// The service-wide pause has a floor (`initialBackoff`) and grows; a success of a request
    /// sent before the 429 does not reset it (before: full jitter from 0, and the success made
    /// the next 429 a first one again: a pause of 0-1 s).
    @Test func theServicePauseHasAFloorAndGrowsThroughOneSuccess() async throws {
        let transport = HeldSuccessTransport()
        let clock = ManualClock()
        var options = FlagServiceOptions(baseURL: InMemoryControlPlane.baseURL, key: "srv-k")
        options.transport = transport
        options.clock = clock
        options.exposures.enabled = false
        let service = try FlagService(options: options)
        defer { service.close() }
        _ = service.flagsIfCached(for: serviceContext(0))
        try await Wait.until("the request that will succeed is in flight") { transport.held == 1 }
        _ = await service.flags(for: serviceContext(1))  // 429: the first pause
        let first = try #require(service.fetcher.gate(now: clock.monotonicNow).pausedUntil)
        #expect(first >= .seconds(1), "the first pause is at least initialBackoff")
        transport.release()
        try await Wait.until("the success among the 429s") {
            service.flagsIfCached(for: serviceContext(0)).hasValues
        }
        #expect(service.status == .error, "a success during the pause does not end it")
        clock.advance(by: first)
        _ = await service.flags(for: serviceContext(2))  // 429 again, right after the pause
        let second = try #require(service.fetcher.gate(now: clock.monotonicNow).pausedUntil)
        #expect(second - first >= .seconds(1), "the second pause grows: \(second - first)")
        #expect(second - first <= .seconds(2))
    }

    /// `refreshHeld` (stream waves, a refetch owed after a flight) creates no flight while the
    /// service is paused (before: a flight and a task, refused only once started).
    @Test func refreshHeldCreatesNoFlightWhilePaused() async throws {
        let plane = ServiceBrownoutTests.perContextPlane()
        let transport = ServiceFaultTransport(plane) {
            $0 == "user-0" ? .status(429, headers: ["Retry-After": "60"]) : nil
        }
        var options = plane.makeServiceOptions()
        options.transport = transport
        options.clock = ManualClock()
        let service = try FlagService(options: options)
        defer { service.close() }
        let held = serviceContext(1)
        #expect(await service.flags(for: held).hasValues)
        _ = await service.flags(for: serviceContext(0))
        #expect(service.status == .error)
        let before = service.fetcher.tasksCreated
        await service.refreshHeld(try held.fitted())
        #expect(service.fetcher.tasksCreated == before && service.stats.fetching.inFlight == 0)
        #expect(transport.received["pass"] == 1)
    }

    /// Two requests that miss the memo for the same context at once insert one entry: the
    /// second finds the first's and returns it (before: both inserted, two entries).
    @Test func twoConcurrentMissesOfOneContextInsertOneMemoEntry() throws {
        let memo = FittingMemo(maxCount: 1_000, maxBytes: 1 << 20)
        let context = serviceContext(3)
        let arrived = DispatchSemaphore(value: 0)
        let go = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let entries = Locked<[FittingMemo.Entry]>([])
        for _ in 0..<2 {
            Thread {
                let entry = try? memo.entry(context) { (c) throws(ContextError) in
                    arrived.signal()
                    _ = go.wait(timeout: .now() + 30)
                    return try c.fitted()
                }
                if let entry { entries.withLock { $0.append(entry) } }
                done.signal()
            }.start()
        }
        // Both missed: both are fitting at once.
        #expect(arrived.wait(timeout: .now() + 30) == .success)
        #expect(arrived.wait(timeout: .now() + 30) == .success)
        go.signal()
        go.signal()
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(memo.totals.count == 1)
        let both = entries.withLock { $0 }
        #expect(both.count == 2 && both.first === both.last)
    }

    /// `maxContexts = .max` with frequency admission is accepted (before: the sketch was sized
    /// from it up front and the multiplication trapped); the sketch grows with the entries held.
    @Test func anyMaxContextsIsAcceptedWithAdmission() async throws {
        let plane = ServiceBrownoutTests.perContextPlane()
        var options = plane.makeServiceOptions()
        options.clock = ManualClock()
        options.maxContexts = .max
        options.frequencyAdmission = true
        let service = try FlagService(options: options)
        defer { service.close() }
        for id in 0..<300 { #expect(await service.flags(for: serviceContext(id)).hasValues) }
        let widths = service.cache.shards.map { $0.withLock { $0.sketch?.width ?? 0 } }
        #expect(widths.allSatisfy { $0 >= 64 && $0 <= 1_024 }, "\(widths)")
        #expect(service.stats.cache.contextsHeld == 300)
    }

    /// Widening the sketch keeps every estimate.
    @Test func theSketchKeepsItsCountsWhenItGrows() {
        var sketch = FrequencySketch(entries: 8)
        let keys = (0..<50).map { i -> String in
            let hex = String(i &* 2_654_435_761, radix: 16)
            return String(repeating: "0", count: 40 - hex.count) + hex
        }
        for (i, key) in keys.enumerated() { for _ in 0..<(i % 7) { sketch.increment(key) } }
        let before = keys.map { sketch.frequency($0) }
        sketch.reserve(entries: 10_000)
        #expect(sketch.width == 1 << 17)
        #expect(keys.map { sketch.frequency($0) } == before)
    }
}
