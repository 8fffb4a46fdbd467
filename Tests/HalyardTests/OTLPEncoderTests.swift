import Foundation
import Testing

@testable import Halyard

/// The OTLP/HTTP JSON body (docs/exposures.md, "OTLP exporter"), byte for byte.
@Suite struct OTLPEncoderTests {
    static let resource = OTLPLogsEncoder.Resource(
        serviceName: "checkout-svc", sdkVersion: "0.1.0",
        attributes: ["service.version": "4.2.0", "deployment.environment.name": "prod", "telemetry.sdk.name": "x"],
        sampleRate: 0.25, dedupWindowSeconds: 60)

    static let events = [
        ExposureEvent(
            key: "checkout.new", variant: "treatment", reason: "TARGETING_MATCH", contextFingerprint: "fp1",
            creationDate: 1_800_000_012, flagVersion: "12", flagSetID: "checkout"),
        ExposureEvent(
            key: "limit", variant: nil, reason: "STATIC", contextFingerprint: "fp1", creationDate: 1_800_000_013,
            value: .int(42)),
        ExposureEvent(
            key: "theme", variant: nil, reason: "SPLIT", contextFingerprint: "fp2", creationDate: 1_800_000_014,
            value: .object(["b": .double(1.5), "a": .array([.bool(true), .null, .string("x\"")])])),
        ExposureEvent(
            key: "fallback", variant: nil, reason: "ERROR", contextFingerprint: "fp2", creationDate: 1_800_000_015,
            value: .string("v")),
    ]

    static func attribute(_ key: String, _ value: String) -> String {
        #"{"key":"\#(key)","value":{"stringValue":"\#(value)"}}"#
    }

    static func record(_ time: String, _ attributes: [String]) -> String {
        #"{"timeUnixNano":"\#(time)000000000","observedTimeUnixNano":"\#(time)000000000","#
            + #""eventName":"feature_flag.evaluation","attributes":["# + attributes.joined(separator: ",")
            + #",{"key":"halyard.exposure.sample_rate","value":{"doubleValue":0.25}},"#
            + #"{"key":"halyard.exposure.dedup_window","value":{"intValue":"60"}}]}"#
    }

    static func common(_ key: String, _ fp: String) -> (key: String, provider: String, context: String) {
        (
            attribute("feature_flag.key", key), attribute("feature_flag.provider.name", "Halyard"),
            attribute("feature_flag.context.id", fp)
        )
    }

    @Test func smallBatchIsExactlyTheProtobufJSONMapping() throws {
        let body = String(decoding: OTLPLogsEncoder.encode(resource: Self.resource, events: Self.events), as: UTF8.self)
        let a = Self.common("checkout.new", "fp1")
        let b = Self.common("limit", "fp1")
        let c = Self.common("theme", "fp2")
        let d = Self.common("fallback", "fp2")
        let records = [
            Self.record(
                "1800000012",
                [
                    a.key, Self.attribute("feature_flag.result.variant", "treatment"),
                    Self.attribute("feature_flag.result.reason", "targeting_match"), a.provider, a.context,
                    Self.attribute("feature_flag.version", "12"), Self.attribute("feature_flag.set.id", "checkout"),
                ]),
            Self.record(
                "1800000013",
                [
                    b.key, #"{"key":"feature_flag.result.value","value":{"intValue":"42"}}"#,
                    Self.attribute("feature_flag.result.reason", "static"), b.provider, b.context,
                ]),
            Self.record(
                "1800000014",
                [
                    c.key,
                    #"{"key":"feature_flag.result.value","value":{"kvlistValue":{"values":["#
                        + #"{"key":"a","value":{"arrayValue":{"values":[{"boolValue":true},{},{"stringValue":"x\""}]}}},"#
                        + #"{"key":"b","value":{"doubleValue":1.5}}]}}}"#,
                    Self.attribute("feature_flag.result.reason", "split"), c.provider, c.context,
                ]),
            Self.record(
                "1800000015",
                [
                    d.key, #"{"key":"feature_flag.result.value","value":{"stringValue":"v"}}"#,
                    Self.attribute("feature_flag.result.reason", "error"), d.provider, d.context,
                    Self.attribute("error.type", "general"),
                ]),
        ]
        let expected =
            #"{"resourceLogs":[{"resource":{"attributes":["#
            + [
                Self.attribute("service.name", "checkout-svc"),
                Self.attribute("deployment.environment.name", "prod"), Self.attribute("service.version", "4.2.0"),
                Self.attribute("telemetry.sdk.name", "halyard"),
                Self.attribute("telemetry.sdk.language", "swift"), Self.attribute("telemetry.sdk.version", "0.1.0"),
            ].joined(separator: ",")
            + #"]},"scopeLogs":[{"scope":{"name":"halyard","version":"0.1.0"},"logRecords":["#
            + records.joined(separator: ",")
            + #"],"schemaUrl":"https://opentelemetry.io/schemas/1.34.0"}],"#
            + #""schemaUrl":"https://opentelemetry.io/schemas/1.34.0"}]}"#
        #expect(body == expected)
        // And it is JSON.
        _ = try JSONSerialization.jsonObject(with: Data(body.utf8))
    }

    @Test func everyJSONTypeMapsToItsAnyValue() {
        func any(_ v: JSONValue) -> String {
            var out: [UInt8] = []
            OTLPLogsEncoder.anyValue(&out, v)
            return String(decoding: out, as: UTF8.self)
        }
        #expect(any(.null) == "{}")
        #expect(any(.bool(false)) == #"{"boolValue":false}"#)
        #expect(any(.int(-9_223_372_036_854_775_808)) == #"{"intValue":"-9223372036854775808"}"#)
        #expect(any(.double(0)) == #"{"doubleValue":0}"#)
        #expect(any(.double(-2)) == #"{"doubleValue":-2}"#)
        #expect(any(.double(1e300)) == #"{"doubleValue":1e+300}"#)
        #expect(any(.double(0.1)) == #"{"doubleValue":0.1}"#)
        #expect(any(.string("é\n")) == #"{"stringValue":"é\n"}"#)
        #expect(any(.array([])) == #"{"arrayValue":{"values":[]}}"#)
        #expect(any(.object([:])) == #"{"kvlistValue":{"values":[]}}"#)
    }

    @Test func errorTypeOnlyOnReasonErrorAndLowercased() {
        var e = ExposureEvent(
            key: "k", variant: "v", reason: "TARGETING_MATCH", contextFingerprint: "f", creationDate: 1)
        #expect(OTLPLogsEncoder.errorType(e) == nil)
        e.reason = "ERROR"
        #expect(OTLPLogsEncoder.errorType(e) == "general")
        e.errorCode = .targetingKeyMissing
        #expect(OTLPLogsEncoder.errorType(e) == "targeting_key_missing")
    }

    @Test func serviceNameFallsBackToAppIDThenUnknownService() {
        let meta = ExposureMeta(sdk: "Halyard", version: "0.1.0", appId: "my-app", installId: "i")
        #expect(OTLPLogsEncoder.Resource(meta: meta, processName: "p").serviceName == "my-app")
        var named = meta
        named.serviceName = "svc"
        #expect(OTLPLogsEncoder.Resource(meta: named, processName: "p").serviceName == "svc")
        var anonymous = meta
        anonymous.appId = ""
        #expect(
            OTLPLogsEncoder.Resource(meta: anonymous, processName: "worker").serviceName == "unknown_service:worker")
        #expect(OTLPLogsEncoder.Resource(meta: anonymous, processName: "").serviceName == "unknown_service")
    }

    @Test func timestampsAreNanosecondStringsClampedToInt64() {
        let late = ExposureEvent(key: "k", variant: "v", reason: "STATIC", contextFingerprint: "f", creationDate: .max)
        let body = String(decoding: OTLPLogsEncoder.encode(resource: Self.resource, events: [late]), as: UTF8.self)
        #expect(body.contains(#""timeUnixNano":"9223372036854775807""#))
    }
}
