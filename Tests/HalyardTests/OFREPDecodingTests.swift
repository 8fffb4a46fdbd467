import Foundation
import Testing

@_spi(Fuzzing) @testable import Halyard

@Suite struct OFREPDecodingTests {
    private func decode(_ text: String) throws -> OFREPResponse {
        try OFREPResponse.decode(Data(text.utf8), limit: 1 << 20)
    }

    @Test func successFailureAndCodeDefaultItems() throws {
        let r = try decode(
            #"""
            {"flags": [
              {"key": "a", "value": true, "reason": "TARGETING_MATCH", "variant": "on", "metadata": {"team": "x", "n": 2, "b": true, "bad": [1]}},
              {"key": "b", "errorCode": "FLAG_NOT_FOUND", "errorDetails": "gone", "value": 3, "reason": "STATIC"},
              {"key": "c", "errorCode": "SOMETHING_NEW"},
              {"key": "d", "reason": "DISABLED"},
              {"key": "e", "value": null},
              {"key": "f", "value": 1, "reason": "EXPERIMENT_42"},
              {"key": "g", "value": 1.0},
              {"key": "h", "value": 1e2},
              {"key": "i", "errorCode": 7},
              {"value": 1},
              {"key": "a", "value": false, "reason": "SPLIT"}
            ], "metadata": {"version": "v1"}}
            """#)
        let byKey = Dictionary(uniqueKeysWithValues: r.flags.map { ($0.key, $0) })
        #expect(r.flags.count == 9)
        #expect(r.skippedItems == 1)
        #expect(byKey["a"]?.value == .bool(false))  // the later duplicate wins
        #expect(byKey["a"]?.reason == .split)
        #expect(byKey["b"]?.errorCode == .flagNotFound)
        #expect(byKey["b"]?.value == nil)
        #expect(byKey["b"]?.errorMessage == "gone")
        #expect(byKey["b"]?.reason == .error)
        #expect(byKey["c"]?.errorCode == .general)
        #expect(byKey["d"]?.value == nil)
        #expect(byKey["d"]?.reason == .disabled)
        #expect(byKey["d"]?.errorCode == nil)
        #expect(byKey["e"]?.value == nil)
        #expect(byKey["e"]?.reason == .defaultValue)
        #expect(byKey["f"]?.value == .int(1))
        #expect(byKey["f"]?.reason.rawValue == "EXPERIMENT_42")
        #expect(byKey["g"]?.value == .double(1))
        #expect(byKey["h"]?.value == .double(100))
        #expect(byKey["i"]?.errorCode == .general)
        #expect(r.metadata["version"] == .string("v1"))
    }

    @Test func firstDecodeMetadataKeepsOnlyScalars() throws {
        let r = try decode(#"{"flags":[{"key":"a","value":1,"metadata":{"team":"x","n":2,"b":true,"bad":[1]}}]}"#)
        #expect(r.flags[0].metadata == ["team": .string("x"), "n": .int(2), "b": .bool(true)])
    }

    /// Integer metadata keeps all 64 bits (2^53 + 1 is not rounded to a double); a fraction or
    /// an exponent makes a double, as for values.
    @Test func metadataNumbersKeepTheIntegerFloatDistinction() throws {
        let r = try decode(
            #"{"flags":[{"key":"a","value":1,"metadata":{"v":9007199254740993,"r":0.5,"e":1e3}}],"metadata":{"build":-9007199254740993}}"#
        )
        #expect(r.flags[0].metadata == ["v": .int(9_007_199_254_740_993), "r": .number(0.5), "e": .number(1000)])
        #expect(r.metadata == ["build": .int(-9_007_199_254_740_993)])
    }

    @Test func garbageIsRejected() {
        for text in ["", "{", "[]", "{\"flags\": {}}", "{\"flag\": []}", "{\"flags\": [", "null", "<html>"] {
            #expect(throws: OFREPDecodingError.self) { try decode(text) }
        }
    }

    @Test func bodiesAboveTheLimitAreRefused() {
        let body = Data(repeating: 0x20, count: 101)
        #expect(throws: OFREPDecodingError.tooLarge(limit: 100)) { try OFREPResponse.decode(body, limit: 100) }
    }

    @Test func requestHasTheOFREPShape() throws {
        let identity = ClientIdentity(
            baseURL: URL(string: "https://flags.example.com/base/")!, key: "k-1", appID: "app", installID: "inst")
        let builder = OFREPRequestBuilder(identity: identity, timeout: .seconds(3), maxResponseBytes: 1000)
        let request = builder.request(contextJSON: #"{"kind":"user","targetingKey":"u1"}"#, ifNoneMatch: "\"e\"")
        #expect(request.url.absoluteString == "https://flags.example.com/base/ofrep/v1/evaluate/flags")
        #expect(request.method == "POST")
        #expect(request.headers["Authorization"] == "Bearer k-1")
        #expect(request.headers["Content-Type"] == "application/json")
        #expect(request.headers["Accept-Encoding"] == "gzip")
        #expect(request.headers["User-Agent"]?.hasPrefix("Halyard-Swift/") == true)
        #expect(request.headers["X-Halyard-App-Id"] == "app")
        #expect(request.headers["X-Halyard-Install-Id"] == "inst")
        #expect(request.headers["If-None-Match"] == "\"e\"")
        #expect(String(decoding: request.body, as: UTF8.self) == #"{"context":{"kind":"user","targetingKey":"u1"}}"#)
        #expect(request.timeout == .seconds(3))
        #expect(request.maxResponseBytes == 1000)
        let plain = builder.request(contextJSON: "{}", ifNoneMatch: nil)
        #expect(plain.headers["If-None-Match"] == nil)
    }
}
