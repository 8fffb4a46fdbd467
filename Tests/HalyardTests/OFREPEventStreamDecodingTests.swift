import Foundation
import Testing

@_spi(Fuzzing) @testable import Halyard

/// `eventStreams` in the bulk response (ADR-0008, SPEC §14): both shapes, resolution against the
/// control plane, the URL rules, the bound, and that the URL is never printed.
@Suite struct OFREPEventStreamDecodingTests {
    private let controlPlane = URL(string: "https://flags.example.com/prefix/")!

    private func streams(_ entries: String, controlPlane: URL? = URL(string: "https://flags.example.com/prefix/")!)
        throws -> [OFREPEventStream]
    {
        let body = #"{"flags": [{"key": "a", "value": true}], "eventStreams": "# + entries + "}"
        let decoded = try OFREPResponse.decode(Data(body.utf8), limit: 1 << 20, controlPlane: controlPlane)
        #expect(decoded.flags.count == 1, "the flags decode whatever eventStreams holds")
        return decoded.eventStreams
    }

    private func urls(_ entries: String) throws -> [String] { try streams(entries).map(\.url.absoluteString) }

    @Test func noEventStreamsMeansNone() throws {
        let decoded = try OFREPResponse.decode(Data(#"{"flags": []}"#.utf8), limit: 1 << 20, controlPlane: controlPlane)
        #expect(decoded.eventStreams.isEmpty)
        #expect(try streams("null").isEmpty)
        #expect(try streams(#"{"type": "sse", "url": "https://a.example/s"}"#).isEmpty)
        #expect(try streams("[]").isEmpty)
    }

    @Test func urlShapeIsTakenAsGiven() throws {
        let got = try streams(
            #"[{"type": "sse", "url": "https://sse.example.net/events?channel=env_1&token=s3cret", "inactivityDelaySec": 30}]"#
        )
        let stream = try #require(got.first)
        #expect(got.count == 1)
        #expect(stream.url.absoluteString == "https://sse.example.net/events?channel=env_1&token=s3cret")
        #expect(!stream.sameOriginAsControlPlane)
        #expect(stream.inactivityDelay == .seconds(30))
    }

    @Test func endpointWithoutOriginResolvesAgainstTheControlPlanesOrigin() throws {
        // flagd's shape. The base URL's path prefix is not kept: requestUri is an absolute path.
        for origin in ["", #", "origin": """#, #", "origin": null"#] {
            let got = try streams(#"[{"type": "sse", "endpoint": {"requestUri": "/ofrep/v1/sse?x=1"\#(origin)}}]"#)
            let stream = try #require(got.first, "origin form \(origin)")
            #expect(stream.url.absoluteString == "https://flags.example.com/ofrep/v1/sse?x=1")
            #expect(stream.sameOriginAsControlPlane)
            #expect(stream.inactivityDelay == nil)
        }
        let loopback = try streams(
            #"[{"type": "sse", "endpoint": {"requestUri": "/sse"}}]"#,
            controlPlane: URL(string: "http://127.0.0.1:8013")!)
        #expect(loopback.first?.url.absoluteString == "http://127.0.0.1:8013/sse")
        #expect(loopback.first?.sameOriginAsControlPlane == true)
        // Without a control plane such an entry cannot be resolved.
        #expect(try streams(#"[{"type": "sse", "endpoint": {"requestUri": "/sse"}}]"#, controlPlane: nil).isEmpty)
    }

    @Test func endpointWithOriginMayBeAnotherHost() throws {
        let got = try streams(
            #"[{"type": "sse", "endpoint": {"origin": "https://push.example.net:8443", "requestUri": "/s/1"}},"#
                + #" {"type": "sse", "endpoint": {"origin": "HTTPS://Flags.Example.com:443/", "requestUri": "/s/2"}}]"#)
        #expect(
            got.map(\.url.absoluteString) == ["https://push.example.net:8443/s/1", "https://Flags.Example.com:443/s/2"])
        #expect(got.map(\.sameOriginAsControlPlane) == [false, true])
    }

    @Test func sameOriginComparesSchemeHostAndPort() throws {
        let got = try streams(
            #"[{"type": "sse", "url": "https://flags.example.com/a"}, {"type": "sse", "url": "https://flags.example.com:443/b"},"#
                + #" {"type": "sse", "url": "https://flags.example.com:8443/c"}, {"type": "sse", "url": "https://other.example.com/d"}]"#
        )
        #expect(got.map(\.sameOriginAsControlPlane) == [true, true, false, false])
    }

    @Test func invalidEntriesAreDropped() throws {
        let got = try urls(
            "["
                + [
                    #"{"type": "websocket", "url": "https://a.example/ws"}"#,  // unknown type
                    #"{"url": "https://a.example/none"}"#,  // no type
                    #"{"type": "SSE", "url": "https://a.example/upper"}"#,  // types are exact
                    #""https://a.example/not-an-object""#,
                    #"{"type": "sse", "url": "http://a.example/plain-http"}"#,  // http off loopback
                    #"{"type": "sse", "url": "ftp://a.example/x"}"#,
                    #"{"type": "sse", "url": "/relative"}"#,
                    #"{"type": "sse", "url": 7}"#,
                    #"{"type": "sse", "endpoint": {"requestUri": "no-slash"}}"#,
                    #"{"type": "sse", "endpoint": {"requestUri": "//evil.example/x"}}"#,  // another host
                    #"{"type": "sse", "endpoint": {}}"#,
                    #"{"type": "sse", "endpoint": {"origin": "https://a.example/path", "requestUri": "/x"}}"#,
                    #"{"type": "sse", "endpoint": {"origin": "https://user:pw@a.example", "requestUri": "/x"}}"#,
                    #"{"type": "sse", "endpoint": {"origin": "http://a.example", "requestUri": "/x"}}"#,
                    #"{"type": "sse", "endpoint": {"origin": 5, "requestUri": "/x"}}"#,
                    #"{"type": "sse", "url": "http://127.0.0.1:9/ok"}"#,  // http to loopback: kept
                    #"{"type": "sse", "url": "http://localhost:9/ok"}"#,
                ].joined(separator: ",") + "]")
        #expect(got == ["http://127.0.0.1:9/ok", "http://localhost:9/ok"])
    }

    @Test func atMostFourStreamsAndDuplicatesOnce() throws {
        let entries = (1...6).map { #"{"type": "sse", "url": "https://a.example/\#($0)"}"# }
        let duplicated = [entries[0], entries[0]] + entries
        let got = try urls("[" + duplicated.joined(separator: ",") + "]")
        #expect(got == (1...4).map { "https://a.example/\($0)" })
    }

    @Test func inactivityDelayMustBeAnIntegerOfAtLeastOne() throws {
        func delay(_ value: String) throws -> Duration? {
            try streams(#"[{"type": "sse", "url": "https://a.example/s", "inactivityDelaySec": \#(value)}]"#).first?
                .inactivityDelay
        }
        #expect(try delay("120") == .seconds(120))
        #expect(try delay("0") == nil, "the schema's minimum is 1")
        #expect(try delay("1") == .seconds(1))
        #expect(try delay("60.0") == .seconds(60))
        #expect(try delay("10000000") == .seconds(86_400))
        #expect(try delay("-1") == nil)
        #expect(try delay("1.5") == nil)
        #expect(try delay(#""120""#) == nil)
    }

    @Test func theURLIsNeverPrinted() throws {
        let secret = "tok_9f8e7d"
        let got = try streams(
            #"[{"type": "sse", "url": "https://sse.example.net/e?token=\#(secret)", "inactivityDelaySec": 5}]"#)
        let stream = try #require(got.first)
        var dumped = ""
        dump(stream, to: &dumped)
        var dumpedList = ""
        dump(got, to: &dumpedList)
        let decoded = try OFREPResponse.decode(
            Data(
                #"{"flags": [], "eventStreams": [{"type": "sse", "url": "https://sse.example.net/e?token=\#(secret)"}]}"#
                    .utf8),
            limit: 1 << 20, controlPlane: controlPlane)
        for text in [
            stream.description, stream.debugDescription, String(describing: stream), String(reflecting: stream),
            "\(stream)",
            "\(got)", dumped, dumpedList, String(describing: decoded), String(reflecting: decoded),
        ] {
            #expect(!text.contains(secret), "printed: \(text)")
            #expect(!text.contains("sse.example.net"), "printed: \(text)")
        }
        #expect(stream.description.contains("other origin"))
    }

    @Test func theServersStreamEntriesDecode() throws {
        // What Tests/ControlPlaneServer/server.py advertises in each shape.
        let base = URL(string: "http://127.0.0.1:4242")!
        let body = #"""
            {"eventStreams": [{"endpoint": {"requestUri": "/ofrep/v1/sse"}, "type": "sse"},
              {"endpoint": {"origin": "http://127.0.0.1:4242", "requestUri": "/ofrep/v1/sse?mode=flipt"}, "type": "sse"},
              {"inactivityDelaySec": 30, "type": "sse", "url": "http://127.0.0.1:4242/ofrep/v1/sse?mode=drop"},
              {"type": "websocket", "url": "wss://x"}], "flags": []}
            """#
        let decoded = try OFREPResponse.decode(Data(body.utf8), limit: 1 << 20, controlPlane: base)
        #expect(
            decoded.eventStreams.map(\.url.absoluteString) == [
                "http://127.0.0.1:4242/ofrep/v1/sse", "http://127.0.0.1:4242/ofrep/v1/sse?mode=flipt",
                "http://127.0.0.1:4242/ofrep/v1/sse?mode=drop",
            ])
        #expect(decoded.eventStreams.allSatisfy { $0.sameOriginAsControlPlane })
    }
}
