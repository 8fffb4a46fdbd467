import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// FlagService exports its exposures over OTLP when its `exposures.exporter` says so: the same
/// recorder factory as the client's, each context's fingerprint as `feature_flag.context.id`.
@Suite(.serialized) struct ServiceOTLPTests {
    @Test func serviceExposuresGoToTheOTLPReceiverWithEachContextsFingerprint() async throws {
        let server = try await ControlPlaneServer.launched(flags: [
            "default": [["key": "limit", "value": 10, "reason": "STATIC"]],
            "contexts": [
                "user-1": [["key": "checkout.new", "value": true, "reason": "TARGETING_MATCH", "variant": "on"]]
            ],
        ])
        defer { server.stop() }
        var options = FlagServiceOptions(baseURL: server.baseURL, key: "srv-otlp")
        options.clock = ManualClock()
        options.installID = "otlp-test"
        options.coldFetchTimeout = .seconds(5)
        options.serviceName = "checkout-service"
        options.exposures.flushInterval = .zero
        options.exposures.exporter = .otlp(endpoint: server.otlpEndpoint, headers: ["Authorization": "Basic c3Zj"])
        let service = try FlagService(options: options)
        defer { service.close() }

        let one = await service.flags(for: serviceContext(1))
        let two = await service.flags(for: serviceContext(2))
        #expect(one.bool("checkout.new", default: false))
        #expect(two.int("limit", default: 0) == 10)
        #expect(two.bool("checkout.new", default: false) == false)  // not found: no exposure
        let flushed = try await Wait.result("flushExposures()") { await service.flushExposures() }
        #expect(flushed.sentEvents == 2)

        let report = try await server.otlpReport(bodies: true)
        #expect((report["rejected"] as? [Any])?.isEmpty == true, "\(report["rejected"] ?? "")")
        let records = try #require(report["records"] as? [[String: Any]])
        var byKey: [String: [String: Any]] = [:]
        for record in records { byKey[record["feature_flag.key"] as? String ?? ""] = record }
        #expect(Set(byKey.keys) == ["checkout.new", "limit"])
        #expect(byKey["checkout.new"]?["feature_flag.context.id"] as? String == one.fingerprint)
        #expect(byKey["checkout.new"]?["feature_flag.result.variant"] as? String == "on")
        #expect(byKey["limit"]?["feature_flag.context.id"] as? String == two.fingerprint)
        #expect(byKey["limit"]?["feature_flag.result.value"] as? Int == 10)
        let body = try #require((report["bodies"] as? [String])?.first)
        #expect(body.contains(#"{"key":"service.name","value":{"stringValue":"checkout-service"}}"#))
        #expect(!body.contains("user-1") && !body.contains("srv-otlp"))
    }

    @Test func creationRefusesPlainHTTPToANonLoopbackCollector() throws {
        var options = FlagServiceOptions(baseURL: URL(string: "https://flags.example")!, key: "srv-1")
        options.exposures.exporter = .otlp(endpoint: URL(string: "http://collector.example:4318")!, headers: [:])
        #expect(throws: FlagServiceError.invalidExposureExporter(.insecureHTTPToNonLoopbackHost("collector.example"))) {
            _ = try FlagService(options: options)
        }
    }
}
