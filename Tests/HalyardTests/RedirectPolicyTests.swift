import Foundation
import Testing

@testable import Halyard

/// The redirect rule as a pure function (SPEC §5): same origin only, at most 3, never
/// https → http; 307/308 keep method and body, 303 (and 301/302 of a POST) become a GET.
@Suite struct RedirectPolicyTests {
    static let post = TransportRequest(
        method: "POST", url: URL(fileURLWithPath: "/").deletingLastPathComponent(),
        headers: ["Content-Type": "application/json", "Authorization": "Bearer k"], body: Data("{}".utf8))

    static func request(_ url: String, method: String = "POST") throws -> TransportRequest {
        var request = post
        request.url = try #require(URL(string: url))
        request.method = method
        return request
    }

    static func followed(_ decision: RedirectPolicy.Decision) -> TransportRequest? {
        if case .follow(let next) = decision { return next }
        return nil
    }

    static func refusal(_ decision: RedirectPolicy.Decision) -> TransportError? {
        if case .refuse(let error) = decision { return error }
        return nil
    }

    @Test func sameOriginIsFollowedKeepingMethodHeadersAndBodyOn307And308() throws {
        let from = try Self.request("http://127.0.0.1:8080/ofrep/v1/evaluate/flags?x=1")
        for status in [307, 308] {
            let next = try #require(
                Self.followed(RedirectPolicy.decide(from, status: status, location: "/moved", followed: 0)))
            #expect(next.url.absoluteString == "http://127.0.0.1:8080/moved")
            #expect(next.method == "POST")
            #expect(next.body == Data("{}".utf8))
            #expect(next.headers["Authorization"] == "Bearer k")
        }
        // The default port is the same origin as the explicit one.
        let https = try Self.request("https://flags.example.com/a")
        #expect(
            Self.followed(
                RedirectPolicy.decide(https, status: 308, location: "https://FLAGS.example.com:443/b", followed: 2))
                != nil)
    }

    @Test func anotherOriginIsRefusedNamingOnlyHostAndPort() throws {
        let from = try Self.request("http://127.0.0.1:8080/a")
        #expect(
            Self.refusal(
                RedirectPolicy.decide(from, status: 307, location: "http://127.0.0.1:9090/secret?q=1", followed: 0))
                == .redirectRefused(origin: "127.0.0.1:9090", reason: .otherOrigin))
        #expect(
            Self.refusal(RedirectPolicy.decide(from, status: 302, location: "http://127.0.0.2:8080/a", followed: 0))
                == .redirectRefused(origin: "127.0.0.2:8080", reason: .otherOrigin))
        #expect(
            Self.refusal(RedirectPolicy.decide(from, status: 301, location: "https://127.0.0.1:8080/a", followed: 0))
                == .redirectRefused(origin: "127.0.0.1:8080", reason: .otherOrigin))
        #expect(
            Self.refusal(RedirectPolicy.decide(from, status: 308, location: "ftp://127.0.0.1/a", followed: 0))
                == .redirectRefused(origin: "127.0.0.1", reason: .otherOrigin))
        let https = try Self.request("https://flags.example.com/a")
        #expect(
            Self.refusal(RedirectPolicy.decide(https, status: 308, location: "http://flags.example.com/a", followed: 0))
                == .redirectRefused(origin: "flags.example.com:80", reason: .insecure))
    }

    @Test func theFourthRedirectIsRefused() throws {
        let from = try Self.request("http://127.0.0.1:8080/a")
        for followed in 0..<RedirectPolicy.maxRedirects {
            #expect(Self.followed(RedirectPolicy.decide(from, status: 307, location: "/a", followed: followed)) != nil)
        }
        #expect(RedirectPolicy.maxRedirects == 3)
        #expect(
            Self.refusal(RedirectPolicy.decide(from, status: 307, location: "/a", followed: 3))
                == .redirectRefused(origin: "127.0.0.1:8080", reason: .tooManyRedirects))
    }

    @Test func seeOtherAndAPostMovedBecomeAGetWithoutBody() throws {
        let from = try Self.request("http://127.0.0.1:8080/a")
        for status in [301, 302, 303] {
            let next = try #require(
                Self.followed(RedirectPolicy.decide(from, status: status, location: "/b", followed: 0)))
            #expect(next.method == "GET")
            #expect(next.body.isEmpty)
            #expect(next.headers["Content-Type"] == nil)
            #expect(next.headers["Authorization"] == "Bearer k")
        }
        let put = try Self.request("http://127.0.0.1:8080/a", method: "PUT")
        #expect(Self.followed(RedirectPolicy.decide(put, status: 302, location: "/b", followed: 0))?.method == "PUT")
    }

    @Test func otherStatusesAndAMissingLocationAreTheAnswer() throws {
        let from = try Self.request("http://127.0.0.1:8080/a")
        for (status, location) in [(304, "/b"), (300, "/b"), (200, "/b"), (307, nil)] as [(Int, String?)] {
            guard case .answer = RedirectPolicy.decide(from, status: status, location: location, followed: 0) else {
                Issue.record("\(status) \(location ?? "nil") is not the answer")
                continue
            }
        }
    }

    /// The loop both transports' `send` run (``RedirectPolicy/send(_:perform:)``): every hop gets
    /// the one deadline of the whole request, a followed 303 reaches the next hop as a GET, the
    /// answer is the first response that is not a redirect, and a refusal sends nothing more.
    @Test func sendFollowsWithinOneDeadlineAndStopsAtARefusal() async throws {
        let start = try Self.request("http://127.0.0.1:8080/a")
        let hops = Locked<[(method: String, url: String, deadline: ContinuousClock.Instant)]>([])
        let before = ContinuousClock.now
        let answer = try await RedirectPolicy.send(start) { hop, deadline in
            hops.withLock { $0.append((hop.method, hop.url.absoluteString, deadline)) }
            let redirect = hops.value.count == 1
            return TransportResponse(status: redirect ? 303 : 200, headers: redirect ? ["Location": "/b"] : [:])
        }
        #expect(answer.status == 200)
        #expect(hops.value.map(\.method) == ["POST", "GET"])
        #expect(hops.value.map(\.url) == ["http://127.0.0.1:8080/a", "http://127.0.0.1:8080/b"])
        let deadlines = Set(hops.value.map(\.deadline))
        #expect(deadlines.count == 1)
        #expect(try #require(deadlines.first) >= before + start.timeout)

        let sent = Locked(0)
        await #expect(throws: TransportError.redirectRefused(origin: "127.0.0.2:8080", reason: .otherOrigin)) {
            _ = try await RedirectPolicy.send(start) { _, _ in
                sent.withLock { $0 += 1 }
                return TransportResponse(status: 307, headers: ["Location": "http://127.0.0.2:8080/a"])
            }
        }
        #expect(sent.value == 1)
    }
}
