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

@Suite struct SyncRetryAfterTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)  // 2027-01-15T08:00:00Z

    @Test func delaySeconds() {
        #expect(RetryAfter.parse("120", now: now) == .seconds(120))
        #expect(RetryAfter.parse(" 0 ", now: now) == .zero)
        #expect(RetryAfter.parse("99999999999999999999999", now: now) == RetryAfter.maxDelay)
        #expect(RetryAfter.parse("-5", now: now) == nil)
        #expect(RetryAfter.parse("1.5", now: now) == nil)
        #expect(RetryAfter.parse("", now: now) == nil)
        #expect(RetryAfter.parse("soon", now: now) == nil)
    }

    @Test func httpDates() {
        #expect(RetryAfter.parse("Fri, 15 Jan 2027 08:01:00 GMT", now: now) == .seconds(60))
        #expect(RetryAfter.parse("Friday, 15-Jan-27 08:01:00 GMT", now: now) == .seconds(60))
        #expect(RetryAfter.parse("Fri Jan 15 08:01:00 2027", now: now) == .seconds(60))
        #expect(RetryAfter.parse("Fri, 15 Jan 2027 07:00:00 GMT", now: now) == .zero)
    }

    @Test func iso8601() {
        #expect(RetryAfter.parse("2027-01-15T08:00:30Z", now: now) == .seconds(30))
        #expect(RetryAfter.parse("2027-01-15T08:00:30.500Z", now: now) == .milliseconds(30_500))
        #expect(RetryAfter.parse("2027-01-15T09:00:30+01:00", now: now) == .seconds(30))
        #expect(RetryAfter.parse("2027-01-16T09:00:30Z", now: now) == RetryAfter.maxDelay)
    }
}

@Suite struct ClientOptionsValidationTests {
    private func options(_ url: String, key: String = "cli-key") -> FlagClientOptions {
        FlagClientOptions(baseURL: URL(string: url)!, key: key)
    }

    @Test func programmingErrorsAreDistinct() {
        #expect(throws: FlagClientError.blankKey) { try options("https://a.example", key: "  ").validate() }
        #expect(throws: FlagClientError.serverKeyInClientRole(prefix: "srv-")) {
            try options("https://a.example", key: "srv-123").validate()
        }
        #expect(throws: FlagClientError.baseURLNotAbsolute) { try options("/relative/path").validate() }
        #expect(throws: FlagClientError.unsupportedScheme("ftp")) { try options("ftp://a.example").validate() }
        #expect(throws: FlagClientError.insecureHTTPToNonLoopbackHost("a.example")) {
            try options("http://a.example").validate()
        }
    }

    @Test func acceptedConfigurations() throws {
        try options("https://a.example").validate()
        try options("http://127.0.0.1:8080").validate()
        try options("http://localhost:1").validate()
        try options("http://[::1]:1").validate()
        var service = options("https://a.example", key: "srv-123")
        service.role = .service
        try service.validate()
        var custom = options("https://a.example", key: "srv-123")
        custom.serverKeyPrefixes = ["secret-"]
        try custom.validate()
    }

    @Test func loopbackDetection() {
        #expect(FlagClientOptions.isLoopback("127.0.0.1"))
        #expect(FlagClientOptions.isLoopback("127.1.2.3"))
        #expect(FlagClientOptions.isLoopback("LOCALHOST"))
        #expect(!FlagClientOptions.isLoopback("127.0.0.1.example.com"))
        #expect(!FlagClientOptions.isLoopback("128.0.0.1"))
        #expect(!FlagClientOptions.isLoopback("127.0.0.256"))
    }

    @Test func defaults() {
        let o = options("https://a.example")
        #expect(o.pollInterval == .seconds(30))
        #expect(o.pollJitter == 0.1)
        #expect(o.requestTimeout == .seconds(10))
        #expect(o.readyTimeout == .seconds(5))
        #expect(o.refreshIfStaleThreshold == .seconds(15))
        #expect(o.initialBackoff == .seconds(1))
        #expect(o.maxBackoff == .seconds(300))
        #expect(o.maxResponseBytes == 8 << 20)
        #expect(o.role == .client)
        #expect(o.effectiveStaleAfter == .seconds(90))
    }
}
