import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// FlagService against the loopback Python control plane, over the default transport.
@Suite(.serialized) struct ServiceLoopbackTests {
    @Test func servesEachContextFromTheLoopbackControlPlane() async throws {
        let server = try await ControlPlaneServer.launched(flags: [
            "default": [["key": "checkout.new", "value": false, "reason": "DEFAULT"]],
            "contexts": [
                "user-1": [["key": "checkout.new", "value": true, "reason": "TARGETING_MATCH", "variant": "on"]],
                "user-2": [["key": "banner", "value": "Hi two", "reason": "SPLIT", "variant": "b"]],
            ],
        ])
        defer { server.stop() }
        let clock = ManualClock()
        var options = FlagServiceOptions(baseURL: server.baseURL, key: "srv-loopback")
        options.clock = clock
        options.installID = "loopback-test"
        options.coldFetchTimeout = .seconds(5)
        let service = try FlagService(options: options)
        defer { service.close() }

        // The cold wait's timer is on the manual clock, which never moves here: each call
        // returns when its fetch completes.
        let one = await service.flags(for: serviceContext(1))
        let two = await service.flags(for: serviceContext(2))
        let other = await service.flags(for: serviceContext(3))
        let detail = one.boolDetail("checkout.new", default: false)
        #expect(detail.value && detail.variant == "on" && detail.reason == .targetingMatch)
        #expect(two.string("banner", default: "") == "Hi two")
        #expect(two.boolDetail("checkout.new", default: true).errorCode == .flagNotFound)
        #expect(!other.bool("checkout.new", default: true))
        #expect(service.stats.fetching.byStatus[200] == 3)

        // Older than refreshAfter: served, and revalidated with If-None-Match (304).
        clock.advance(by: .seconds(31))
        #expect(service.flagsIfCached(for: serviceContext(1)).bool("checkout.new", default: false))
        try await Wait.until("the 304") { service.stats.fetching.notModified == 1 }
        let requests = try await server.requests().filter { $0.path.hasPrefix("/ofrep/") }
        #expect(requests.count == 4)
        let last = try #require(requests.last)
        #expect(last.header("If-None-Match") != nil)
        #expect(last.header("Authorization") == "Bearer srv-loopback")
        #expect(last.body.contains("\"targetingKey\":\"user-1\""))

        // Exposures go to the loopback server's exposure endpoint with each fingerprint.
        let flushed = await service.flushExposures()
        #expect(flushed.sentEvents == 3)
    }
}
