import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// FlagService end to end against the in-memory control plane (SPEC §12, docs/service.md).
@Suite struct ServiceTests {
    static func plane() -> InMemoryControlPlane {
        let plane = InMemoryControlPlane(values: [
            "checkout.new": .bool(true), "banner.text": .string("Hello"), "max.items": .int(7),
            "discount": .double(0.25), "theme": .object(["color": .string("blue"), "enabled": .bool(true)]),
        ])
        plane.setFlag(ServedFlag(key: "broken", value: nil, reason: .error, errorCode: .parseError))
        plane.setFlag(ServedFlag(key: "code.default", value: nil, variant: "control", reason: .defaultValue))
        return plane
    }

    @Test func endToEndReadsFollowTheClientRules() async throws {
        let plane = Self.plane()
        let service = try FlagService(options: plane.makeServiceOptions())
        defer { service.close() }
        let context = serviceContext(1)
        let flags = await service.flags(for: context)
        #expect(flags.hasValues)
        #expect(flags.fingerprint == (try context.fitted()).fingerprint)
        #expect(flags.bool("checkout.new", default: false))
        #expect(flags.string("banner.text", default: "x") == "Hello")
        #expect(flags.int("max.items", default: 0) == 7)
        #expect(flags.double("max.items", default: 0) == 7)
        #expect(flags.double("discount", default: 0) == 0.25)
        #expect(flags.int("discount", default: 3) == 3)
        #expect(flags.json("theme", default: .null) == .object(["color": .string("blue"), "enabled": .bool(true)]))
        #expect(flags.flagObject("theme").isEnabled)
        #expect(!flags.flagObject("banner.text").isEnabled)
        let missing = flags.boolDetail("nope", default: true)
        #expect(missing.value && missing.errorCode == .flagNotFound && missing.reason == .error)
        let mismatch = flags.intDetail("banner.text", default: 4)
        #expect(mismatch.value == 4 && mismatch.errorCode == .typeMismatch)
        let broken = flags.stringDetail("broken", default: "d")
        #expect(broken.value == "d" && broken.errorCode == .parseError)
        let codeDefault = flags.boolDetail("code.default", default: true)
        #expect(codeDefault.value && codeDefault.errorCode == nil && codeDefault.variant == "control")

        // The second request for the same context is a hit: no new fetch.
        let again = await service.flags(for: context)
        #expect(again.bool("checkout.new", default: false))
        let stats = service.stats
        #expect(stats.cache.hits == 1 && stats.cache.misses == 1 && stats.fetching.requests == 1)
        #expect(stats.fetching.byStatus[200] == 1 && stats.status == .ready)
        #expect(stats.reads.flagNotFound == 1 && stats.reads.typeMismatch == 2 && stats.reads.servedError == 1)
        #expect(
            stats.cache.contextsHeld == 1 && stats.cache.bytesHeld > 0
                && stats.cache.bytesHeld == stats.cache.peakBytesHeld)

        // What was sent: the fitted context, a Bearer server key.
        let request = try #require(plane.requests.first)
        #expect(request.headers["Authorization"] == "Bearer srv-test-key")
        #expect(plane.contextUpdates == [try context.fitted().wireValue])
    }

    /// One implementation of the rules: a FlagClient and a ContextFlags over the same served
    /// flags answer every read identically.
    @Test func contextFlagsAndFlagClientAgreeOnEveryRead() async throws {
        let plane = Self.plane()
        let client = try plane.makeClient(context: serviceContext(3))
        defer { client.close() }
        #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
        let service = try FlagService(options: plane.makeServiceOptions())
        defer { service.close() }
        let flags = await service.flags(for: serviceContext(3))
        for key in ["checkout.new", "banner.text", "max.items", "discount", "theme", "broken", "code.default", "nope"] {
            #expect(flags.boolDetail(key, default: false) == client.boolDetail(key, default: false), "\(key)")
            #expect(flags.intDetail(key, default: -1) == client.intDetail(key, default: -1), "\(key)")
            #expect(flags.doubleDetail(key, default: -1) == client.doubleDetail(key, default: -1), "\(key)")
            #expect(flags.stringDetail(key, default: "d") == client.stringDetail(key, default: "d"), "\(key)")
            #expect(flags.detail(key, default: .null) == client.detail(key, default: .null), "\(key)")
            #expect(flags.bool(key, default: false) == client.bool(key, default: false), "\(key)")
            #expect(flags.int(key, default: -1) == client.int(key, default: -1), "\(key)")
            #expect(flags.flagObject(key) == client.flagObject(key), "\(key)")
        }
        #expect(service.stats.reads == client.stats.reads)
    }

    @Test func eachContextGetsItsOwnValues() async throws {
        let plane = InMemoryControlPlane()
        plane.setContextValues { context in
            guard case .object(let m) = context, case .string(let key)? = m["targetingKey"] else { return nil }
            return ["who": .string(key), "pro": .bool(m["plan"] == .string("pro"))]
        }
        let service = try FlagService(options: plane.makeServiceOptions())
        defer { service.close() }
        for id in 0..<20 {
            let flags = await service.flags(for: serviceContext(id))
            #expect(flags.string("who", default: "") == "user-\(id)")
            #expect(flags.bool("pro", default: false) == (id % 3 == 0))
        }
        #expect(plane.evaluationCount == 20 && service.stats.cache.contextsHeld == 20)
    }

    /// SPEC §2: flag keys are exact bytes. The key interner looked keys up in a `Set<String>`,
    /// which merges canonically equivalent strings: the key served to the second context was
    /// stored as the first context's bytes, and that context's read of its own key missed.
    @Test func canonicallyEquivalentKeysServedToTwoContextsStayTheirOwn() async throws {
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        #expect(Array(composed.utf8) != Array(decomposed.utf8))
        let plane = InMemoryControlPlane()
        plane.setContextValues { context in
            guard case .object(let m) = context, case .string(let key)? = m["targetingKey"] else { return nil }
            return [key == "a" ? composed : decomposed: .bool(true)]
        }
        let service = try FlagService(options: plane.makeServiceOptions())
        defer { service.close() }
        let a = await service.flags(for: try EvaluationContext(targetingKey: "a").fitted())
        let b = await service.flags(for: try EvaluationContext(targetingKey: "b").fitted())
        #expect(a.boolDetail(composed, default: false).errorCode == nil)
        let own = b.boolDetail(decomposed, default: false)
        #expect(own.errorCode == nil, "b's read of its own key: \(own)")
        #expect(own.value == true)
        #expect(b.boolDetail(composed, default: false).errorCode == .flagNotFound, "b was never served a's bytes")
    }

    @Test func flagsIfCachedNeverWaitsAndStartsTheFetch() async throws {
        let plane = Self.plane()
        plane.holdInitialization()
        let service = try FlagService(options: plane.makeServiceOptions())
        defer { service.close() }
        let cold = service.flagsIfCached(for: serviceContext(1))
        #expect(!cold.hasValues && cold.unavailableReason == .providerNotReady)
        let detail = cold.boolDetail("checkout.new", default: false)
        #expect(!detail.value && detail.errorCode == .providerNotReady && detail.reason == .error)
        try await Wait.until("the fetch started") { plane.requests.count == 1 }
        // A second miss joins the flight: still one request.
        _ = service.flagsIfCached(for: serviceContext(1))
        plane.completeInitialization()
        try await Wait.until("values held") { service.flagsIfCached(for: serviceContext(1)).hasValues }
        #expect(plane.evaluationCount == 1)
    }

    @Test func aColdWaitEndsAtTheTimeoutWithDefaults() async throws {
        let plane = Self.plane()
        plane.holdInitialization()
        let clock = ManualClock()
        var options = plane.makeServiceOptions()
        options.clock = clock
        let service = try FlagService(options: options)
        defer { service.close() }
        let waiting = Task { await service.flags(for: serviceContext(1)) }
        try await Wait.advance(clock, by: .milliseconds(250), "the cold wait's timer")
        let flags = try await Wait.result("flags(for:)") { await waiting.value }
        #expect(flags.unavailableReason == .providerNotReady)
        #expect(flags.boolDetail("checkout.new", default: false).errorCode == .providerNotReady)
        #expect(service.stats.cache.coldWaits == 1 && service.stats.cache.coldWaitTimeouts == 1)
        // The fetch goes on: once it completes the context is served.
        plane.completeInitialization()
        try await Wait.until("values held") { service.flagsIfCached(for: serviceContext(1)).hasValues }
        #expect(plane.evaluationCount == 1)
    }

    @Test func invalidContextsServeDefaultsAndSendNothing() async throws {
        let plane = Self.plane()
        let service = try FlagService(options: plane.makeServiceOptions())
        defer { service.close() }
        let badKind = await service.flags(for: EvaluationContext(targetingKey: "u1", kind: "Not A Kind"))
        let huge = await service.flags(for: EvaluationContext(targetingKey: String(repeating: "k", count: 5000)))
        let reserved = service.flagsIfCached(
            for: EvaluationContext(targetingKey: "u1", attributes: ["kind": .string("x")]))
        for flags in [badKind, huge, reserved] {
            #expect(flags.unavailableReason == .invalidContext && flags.fingerprint == nil)
            let detail = flags.boolDetail("checkout.new", default: true)
            #expect(detail.value && detail.errorCode == .invalidContext && detail.reason == .error)
            #expect(!flags.bool("checkout.new", default: false))
        }
        #expect(plane.evaluationCount == 0 && service.stats.cache.invalidContexts == 3)

        // A context the control plane rejects (400) is remembered: no second request until
        // refreshAfter.
        let transport = ServiceFaultTransport(plane) { $0 == "rejected" ? .status(400) : nil }
        var options = plane.makeServiceOptions()
        options.transport = transport
        let second = try FlagService(options: options)
        defer { second.close() }
        let rejected = EvaluationContext(targetingKey: "rejected")
        #expect(await second.flags(for: rejected).unavailableReason == .invalidContext)
        #expect(await second.flags(for: rejected).unavailableReason == .invalidContext)
        #expect(transport.received["status 400"] == 1)
    }

    @Test func status429PausesEveryContext() async throws {
        let plane = Self.plane()
        let clock = ManualClock()
        let transport = ServiceFaultTransport(plane) {
            $0 == "user-1" ? .status(429, headers: ["Retry-After": "60"]) : nil
        }
        var options = plane.makeServiceOptions()
        options.transport = transport
        options.clock = clock
        let service = try FlagService(options: options)
        defer { service.close() }
        #expect(await service.flags(for: serviceContext(1)).unavailableReason == .providerNotReady)
        // Another context, during the pause: nothing is sent, defaults are served at once.
        #expect(await service.flags(for: serviceContext(2)).unavailableReason == .providerNotReady)
        #expect(transport.received["pass"] == nil && service.stats.fetching.paused >= 1)
        clock.advance(by: .seconds(67))  // past the Retry-After's window, [60 s, 66 s]
        #expect(await service.flags(for: serviceContext(2)).hasValues)
        #expect(transport.received["pass"] == 1 && transport.received["status 429"] == 1)
    }

    @Test func unauthorizedMakesTheServiceFatal() async throws {
        let plane = Self.plane()
        let served = try FlagService(options: plane.makeServiceOptions())
        defer { served.close() }
        _ = await served.flags(for: serviceContext(1))
        plane.failInitialization(status: 401)
        let flags = await served.flags(for: serviceContext(2))
        #expect(flags.unavailableReason == .providerFatal)
        #expect(flags.boolDetail("checkout.new", default: false).errorCode == .providerFatal)
        #expect(served.status == .fatal && served.stats.status == .fatal)
        // Held values keep serving; no further request is sent for anyone.
        #expect(await served.flags(for: serviceContext(1)).bool("checkout.new", default: false))
        #expect(await served.flags(for: serviceContext(3)).unavailableReason == .providerFatal)
        #expect(plane.evaluationCount == 2)
    }

    @Test func refreshAfterRevalidatesWithIfNoneMatchAndMaxStalenessStopsServing() async throws {
        let plane = Self.plane()
        let clock = ManualClock()
        var options = plane.makeServiceOptions()
        options.clock = clock
        let service = try FlagService(options: options)
        defer { service.close() }
        let context = serviceContext(1)
        #expect(await service.flags(for: context).bool("checkout.new", default: false))
        clock.advance(by: .seconds(31))
        // Older than refreshAfter: served at once, refreshed in the background with If-None-Match.
        #expect(service.flagsIfCached(for: context).bool("checkout.new", default: false))
        try await Wait.until("the revalidation") { service.stats.fetching.notModified == 1 }
        let revalidation = try #require(plane.requests.last)
        let etag = try #require(service.flagsIfCached(for: context).snapshot?.etag)
        #expect(revalidation.headers["If-None-Match"] == etag)
        #expect(service.stats.fetching.backgroundRefreshes == 1 && service.stats.fetching.byStatus[304] == 1)
        // The 304 confirmed the values: younger than refreshAfter again, no refresh.
        _ = service.flagsIfCached(for: context)
        #expect(plane.evaluationCount == 2)

        // A changed value arrives with the next background refresh.
        plane.setValue(.bool(false), for: "checkout.new")
        clock.advance(by: .seconds(31))
        #expect(service.flagsIfCached(for: context).bool("checkout.new", default: false))
        try await Wait.until("the refresh") { service.stats.fetching.byStatus[200] == 2 }
        #expect(!service.flagsIfCached(for: context).bool("checkout.new", default: true))

        // Past maxStaleness with the control plane away: the values are not served.
        plane.holdInitialization()
        clock.advance(by: .seconds(601))
        let stale = service.flagsIfCached(for: context)
        #expect(stale.unavailableReason == .providerNotReady)
        plane.completeInitialization()
        try await Wait.until("fresh values") { service.flagsIfCached(for: context).hasValues }
    }

    @Test func anEvictedSnapshotLivesWhileAViewHoldsIt() async throws {
        let plane = InMemoryControlPlane()
        plane.setContextValues { context in
            guard case .object(let m) = context, case .string(let key)? = m["targetingKey"] else { return nil }
            return ["who": .string(key)]
        }
        var options = plane.makeServiceOptions()
        options.maxContexts = 1
        let service = try FlagService(options: options)
        defer { service.close() }
        var held: ContextFlags? = await service.flags(for: serviceContext(1))
        weak let snapshot = held?.snapshot
        _ = await service.flags(for: serviceContext(2))
        #expect(service.stats.cache.evictions == 1 && service.stats.cache.contextsHeld == 1)
        // Evicted from the cache, still alive and correct for the view that holds it.
        #expect(snapshot != nil)
        #expect(held?.string("who", default: "") == "user-1")
        held = nil
        #expect(snapshot == nil)
        // Asked again: a miss and a new fetch.
        #expect(await service.flags(for: serviceContext(1)).string("who", default: "") == "user-1")
        #expect(plane.evaluationCount == 3)
    }

    @Test func theByteBoundHolds() async throws {
        let plane = InMemoryControlPlane()
        plane.setContextValues { _ in
            var values: [String: JSONValue] = [:]
            for i in 0..<64 { values["flag.number.\(i)"] = .string(String(repeating: "v", count: 40)) }
            return values
        }
        var options = plane.makeServiceOptions()
        options.maxCacheBytes = 200_000
        let service = try FlagService(options: options)
        defer { service.close() }
        for id in 0..<100 { _ = await service.flags(for: serviceContext(id)) }
        let stats = service.stats
        #expect(stats.cache.peakBytesHeld <= 200_000 && stats.cache.bytesHeld <= 200_000)
        #expect(stats.cache.evictions > 0 && stats.cache.contextsHeld < 100)
        #expect(stats.cache.bytesHeld == service.cache.totals().bytes)
    }

    @Test func exposuresCarryEachContextsFingerprint() async throws {
        let plane = Self.plane()
        let service = try FlagService(options: plane.makeServiceOptions())
        defer { service.close() }
        let one = await service.flags(for: serviceContext(1))
        let two = await service.flags(for: serviceContext(2))
        for _ in 0..<3 {
            _ = one.bool("checkout.new", default: false)
            _ = two.bool("checkout.new", default: false)
        }
        _ = one.int("banner.text", default: 0)  // a mismatch records nothing
        _ = two.bool("nope", default: false)  // nor does a missing flag
        let result = await service.flushExposures()
        #expect(result.sentEvents == 2)
        let fingerprints = plane.receivedExposures.compactMap { event -> String? in
            guard case .object(let m) = event, case .string(let f)? = m["contextFingerprint"] else { return nil }
            return f
        }
        #expect(Set(fingerprints) == [try #require(one.fingerprint), try #require(two.fingerprint)])
        #expect(service.stats.exposures.sent == 2)
    }

    @Test func exposureMemoryIsBoundedWhateverTheNumberOfContexts() async throws {
        let plane = Self.plane()
        var options = plane.makeServiceOptions()
        options.exposures.capacity = 50
        options.exposures.dedupCapacity = 100
        options.exposures.flushInterval = .seconds(3600)
        options.exposures.batchSize = 1000
        options.maxContexts = 64
        let service = try FlagService(options: options)
        defer { service.close() }
        for id in 0..<500 {
            _ = await service.flags(for: serviceContext(id)).bool("checkout.new", default: false)
        }
        let counters = service.stats.exposures
        #expect(counters.recorded == 500)
        #expect(counters.pending <= 50 && counters.dropped >= 450)
        #expect(service.stats.cache.contextsHeld <= 64)
    }

    @Test func closeStopsFetchingAndViewsKeepAnswering() async throws {
        let plane = Self.plane()
        let service = try FlagService(options: plane.makeServiceOptions())
        let held = await service.flags(for: serviceContext(1))
        service.close()
        service.close()
        #expect(service.isClosed)
        #expect(held.bool("checkout.new", default: false))
        #expect(await service.flags(for: serviceContext(1)).hasValues)
        #expect(await service.flags(for: serviceContext(2)).unavailableReason == .providerNotReady)
        #expect(plane.evaluationCount == 1)
    }

    @Test func optionsAreValidated() throws {
        let url = try #require(URL(string: "https://flags.example.com"))
        #expect(throws: FlagServiceError.blankKey) {
            try FlagService(options: FlagServiceOptions(baseURL: url, key: " "))
        }
        let http = try #require(URL(string: "http://flags.example.com"))
        #expect(throws: FlagServiceError.insecureHTTPToNonLoopbackHost("flags.example.com")) {
            try FlagService(options: FlagServiceOptions(baseURL: http, key: "srv-1"))
        }
        var options = FlagServiceOptions(baseURL: url, key: "srv-1")
        options.maxContexts = 0
        #expect(throws: FlagServiceError.self) { try FlagService(options: options) }
        // A server key is fine for a service.
        let service = try FlagService(options: FlagServiceOptions(baseURL: url, key: "srv-1"))
        service.close()
    }
}

@Suite struct ServiceAdmissionTests {
    /// With frequency admission, a context asked for once does not push out one asked for
    /// often; with plain LRU it does.
    @Test(arguments: [false, true]) func aOneOffContextDoesNotEvictAPopularOne(admission: Bool) async throws {
        let plane = ServiceTests.plane()
        var options = plane.makeServiceOptions()
        options.maxContexts = 2
        options.frequencyAdmission = admission
        let service = try FlagService(options: options)
        defer { service.close() }
        for _ in 0..<5 { _ = await service.flags(for: serviceContext(1)) }
        for _ in 0..<5 { _ = await service.flags(for: serviceContext(2)) }
        _ = await service.flags(for: serviceContext(3))  // once
        let popularHeld =
            service.flagsIfCached(for: serviceContext(1)).hasValues
            && service.flagsIfCached(for: serviceContext(2)).hasValues
        #expect(popularHeld == admission)
        #expect(service.stats.cache.admissionRejections == (admission ? 1 : 0))
    }
}

/// Flat `FlagServiceStats` names of earlier releases (docs/public-api.md, "Stats groups"),
/// reached through a protocol so that the test that they forward compiles without a
/// deprecation warning.
protocol DeprecatedFlatServiceStats {
    var timeouts: Int { get set }
    var fetchTimeouts: Int { get set }
    var hits: Int { get set }
    var requestsSent: Int { get set }
    var fetchesByStatus: [Int: Int] { get set }
    var streamWaves: Int { get set }
}
extension FlagServiceStats: DeprecatedFlatServiceStats {}

extension ServiceTests {
    /// Each flat name reads and writes its group's field; `timeouts` and `fetchTimeouts` are two
    /// different counters.
    @Test func flatStatsNamesForwardToTheirGroups() throws {
        var flat: any DeprecatedFlatServiceStats = FlagServiceStats()
        flat.timeouts = 1
        flat.fetchTimeouts = 2
        flat.hits = 3
        flat.requestsSent = 4
        flat.fetchesByStatus = [200: 5]
        flat.streamWaves = 6
        var stats = try #require(flat as? FlagServiceStats)
        #expect(stats.cache.coldWaitTimeouts == 1)
        #expect(stats.fetching.timeouts == 2)
        #expect(stats.cache.hits == 3)
        #expect(stats.fetching.requests == 4)
        #expect(stats.fetching.byStatus == [200: 5])
        #expect(stats.streaming.waves == 6)
        stats.cache.coldWaitTimeouts = 10
        stats.fetching.timeouts = 20
        flat = stats
        #expect(flat.timeouts == 10)
        #expect(flat.fetchTimeouts == 20)
    }
}
