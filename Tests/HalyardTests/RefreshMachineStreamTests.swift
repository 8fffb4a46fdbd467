import Foundation
import Testing

@testable import Halyard

@Suite("Refresh machine: the event stream's inputs")
struct RefreshMachineStreamTests {
    @Test("an event fetch carries flagConfig parameters and If-None-Match; an activated one neither header")
    func streamFetchParameters() throws {
        var d = MachineDriver()
        d.feed(.start(fingerprint: "fp"))
        try d.respond(.updated(etag: "\"e1\""))
        d.feed(.streamFetch(.init(reason: .event, flagConfig: FlagConfigVersion(etag: "\"v2\"", lastModified: "17"))))
        #expect(d.sent.last?.trigger == .stream)
        #expect(d.sent.last?.ifNoneMatch == "\"e1\"")
        #expect(d.sent.last?.flagConfig?.etag == "\"v2\"")
        #expect(d.sent.last?.flagConfig?.lastModified == "17")
        try d.respond(.notModified)
        d.feed(.streamFetch(.init(reason: .activated)))
        #expect(d.sent.last?.ifNoneMatch == nil)
        #expect(d.sent.last?.flagConfig == nil)
        try d.respond(.updated(etag: "\"e2\""))
        d.feed(.streamFetch(.init(reason: .connected)))
        #expect(d.sent.last?.ifNoneMatch == "\"e2\"")
        #expect(d.sent.last?.flagConfig == nil)
    }

    @Test("a warm start learns the stream: a 304 before any 200 is followed by one unconditional fetch")
    func warmStartLearnsTheAdvertisement() throws {
        var d = MachineDriver { $0.learnsAdvertisement = true }
        d.feed(.cachedValues(fingerprint: "fp", etag: "\"disk\""))
        d.feed(.start(fingerprint: "fp"))
        #expect(d.sent.last?.ifNoneMatch == "\"disk\"")
        try d.respond(.notModified)
        #expect(d.machine.status == .ready, "the 304 confirmed the cached values")
        #expect(d.sent.count == 2, "a 304 carries no advertisement: one more fetch")
        #expect(d.sent.last?.ifNoneMatch == nil)
        #expect(d.sent.last?.trigger == .stream)
        try d.respond(.updated(etag: "\"e1\""))
        // Learned: later 304s are followed by nothing.
        d.feed(.refresh)
        try d.respond(.notModified)
        #expect(d.sent.count == 3)
        #expect(d.machine.inFlight == nil)

        // A client that does not follow streams (polling, `.none`, a transport without streams)
        // keeps its 304 as it is.
        var polling = MachineDriver()
        polling.feed(.cachedValues(fingerprint: "fp", etag: "\"disk\""))
        polling.feed(.start(fingerprint: "fp"))
        try polling.respond(.notModified)
        #expect(polling.sent.count == 1)
    }

    @Test("a stream fetch while another fetch is in flight joins it and says so (the stream asks again)")
    func joinsInFlight() throws {
        var d = MachineDriver()
        d.feed(.start(fingerprint: "fp"))
        let step = d.feed(.streamFetch(.init(reason: .event)))
        #expect(d.sent.count == 1)
        #expect(step.wait == .request(try d.inFlightID))
        #expect(step.streamJoined)
        try d.respond(.updated(etag: nil))
        let own = d.feed(.streamFetch(.init(reason: .event)))
        #expect(d.sent.count == 2)
        #expect(own.streamJoined == false)
    }

    /// Found by the propagation checker (seed 8, fleet, clients 3 and 5): a refused stream URL's
    /// re-learn joined a poll's conditional request in flight, whose 304 carries no
    /// advertisement, so the client reopened the refused URL.
    @Test("a re-learn that joins a conditional request in flight is followed by an unconditional fetch after its 304")
    func relearnJoiningAConditionalRequestFollowsItsNotModified() throws {
        var d = MachineDriver { $0.learnsAdvertisement = true }
        d.feed(.start(fingerprint: "fp"))
        try d.respond(.updated(etag: "\"e1\""))
        d.feed(.refresh)
        #expect(d.sent.last?.ifNoneMatch == "\"e1\"")
        let joined = d.feed(.streamFetch(.init(reason: .relearn)))
        #expect(joined.streamJoined)
        #expect(d.sent.count == 2)
        try d.respond(.notModified)
        #expect(d.sent.count == 3, "the 304 showed no advertisement: an unconditional fetch follows")
        #expect(d.sent.last?.ifNoneMatch == nil)
        #expect(d.sent.last?.trigger == .stream)
        // A 200 to the joined request carried the advertisement: nothing follows it.
        try d.respond(.updated(etag: "\"e2\""))
        d.feed(.refresh)
        d.feed(.streamFetch(.init(reason: .relearn)))
        try d.respond(.updated(etag: "\"e3\""))
        #expect(d.sent.count == 4)
        #expect(d.machine.inFlight == nil)
    }

    /// Found by the propagation checker (seeds 7 and 8): a refused stream URL's re-learn asked
    /// for during a backoff or a `Retry-After` was dropped (or owed as a conditional fetch), so
    /// no answer showed the new advertisement.
    @Test("a re-learn that cannot go now makes the next request unconditional (backoff and Retry-After)")
    func deferredRelearnMakesTheNextRequestUnconditional() throws {
        let refusals: [RefreshMachine.Outcome] = [
            .transient(.status(503), retryAfter: nil), .rateLimited(retryAfter: .seconds(30)),
        ]
        for refusal in refusals {
            var d = MachineDriver { $0.learnsAdvertisement = true }
            d.feed(.start(fingerprint: "fp"))
            try d.respond(.updated(etag: "\"e1\""))
            d.feed(.refresh)
            try d.respond(refusal)
            #expect(d.feed(.streamFetch(.init(reason: .relearn))).wait == .none, "\(refusal)")
            let sent = d.sent.count
            d.fireTimer()
            #expect(d.sent.count == sent + 1, "\(refusal)")
            #expect(d.sent.last?.ifNoneMatch == nil, "the deferred re-learn's request went conditional (\(refusal))")
            try d.respond(.updated(etag: "\"e2\""))
            d.feed(.refresh)
            #expect(d.sent.last?.ifNoneMatch == "\"e2\"", "only one request is unconditional")
        }
    }

    /// An event's fetch held by a `Retry-After` (owed) or a backoff kept its reason but not its
    /// `flagConfig*` values: the request sent when the hold ended went without them (SPEC §14:
    /// an event's values survive being merged, as a service's refetch mark keeps them).
    @Test("an event fetch held by a backoff or a Retry-After keeps its flagConfig values for the next request")
    func heldEventFetchKeepsItsFlagConfig() throws {
        let refusals: [RefreshMachine.Outcome] = [
            .transient(.status(503), retryAfter: nil), .rateLimited(retryAfter: .seconds(30)),
        ]
        let v2 = FlagConfigVersion(etag: "\"v2\"", lastModified: "17")
        let v3 = FlagConfigVersion(etag: "\"v3\"", lastModified: nil)
        for refusal in refusals {
            var d = MachineDriver()
            d.feed(.start(fingerprint: "fp"))
            try d.respond(.updated(etag: "\"e1\""))
            d.feed(.refresh)
            try d.respond(refusal)
            #expect(d.feed(.streamFetch(.init(reason: .event, flagConfig: v2))).wait == .none, "\(refusal)")
            // A (re)connect's fetch, held too, keeps the event's values (it names none).
            #expect(d.feed(.streamFetch(.init(reason: .connected))).wait == .none, "\(refusal)")
            let sent = d.sent.count
            d.fireTimer()
            #expect(d.sent.count == sent + 1, "\(refusal)")
            #expect(d.sent.last?.flagConfig == v2, "the held event's flagConfig values were lost (\(refusal))")
            try d.respond(.updated(etag: "\"e2\""))
            d.feed(.refresh)
            #expect(d.sent.last?.flagConfig == nil, "only one request carries them (\(refusal))")
            try d.respond(.notModified)

            // A later event's values replace an earlier one's.
            d.feed(.refresh)
            try d.respond(refusal)
            d.feed(.streamFetch(.init(reason: .event, flagConfig: v2)))
            d.feed(.streamFetch(.init(reason: .event, flagConfig: v3)))
            d.fireTimer()
            #expect(d.sent.last?.flagConfig == v3, "\(refusal)")
        }
    }

    @Test("a key change forgets the held event's flagConfig values (another environment's version)")
    func keyChangeForgetsHeldFlagConfig() throws {
        var d = MachineDriver()
        d.feed(.start(fingerprint: "fp"))
        try d.respond(.updated(etag: "\"e1\""))
        d.feed(.refresh)
        try d.respond(.rateLimited(retryAfter: .seconds(30)))
        d.feed(.streamFetch(.init(reason: .event, flagConfig: FlagConfigVersion(etag: "\"v2\"", lastModified: nil))))
        #expect(d.feed(.keyChanged).wait == .none, "the Retry-After still holds")
        d.fireTimer()
        #expect(d.sent.last?.flagConfig == nil)
    }

    @Test("a stream fetch never bypasses backoff, Retry-After or a refused key")
    func obeysBackoff() throws {
        var d = MachineDriver()
        d.feed(.start(fingerprint: "fp"))
        try d.respond(.transient(.status(503), retryAfter: nil))
        #expect(d.feed(.streamFetch(.init(reason: .event))).wait == .none)
        #expect(d.sent.count == 1)
        var r = MachineDriver()
        r.feed(.start(fingerprint: "fp"))
        try r.respond(.rateLimited(retryAfter: .seconds(60)))
        #expect(r.feed(.streamFetch(.init(reason: .event))).wait == .none)
        #expect(r.sent.count == 1)
        var a = MachineDriver()
        a.feed(.start(fingerprint: "fp"))
        try a.respond(.unauthorized(status: 401))
        #expect(a.feed(.streamFetch(.init(reason: .event))).wait == .none)
        #expect(a.sent.count == 1)
    }

    @Test("changing the poll interval re-draws the next poll from the last success")
    func pollIntervalChange() throws {
        var d = MachineDriver()
        d.feed(.start(fingerprint: "fp"))
        try d.respond(.updated(etag: nil))
        #expect(try d.nextWake <= .seconds(33))
        d.feed(.setPollInterval(.seconds(300)))
        let safety = try d.nextWake
        #expect(safety >= .seconds(270) && safety <= .seconds(330))
        d.now = .seconds(100)
        d.feed(.setPollInterval(.seconds(30)))
        // Overdue under the normal interval: polls at once.
        #expect(try d.nextWake <= .seconds(33))
        d.fireTimer()
        #expect(d.sent.last?.trigger == .poll)
        d.feed(.setPollInterval(.zero))
        try d.respond(.updated(etag: nil))
        #expect(d.machine.nextWake == nil)
    }

    @Test("flagConfig query values are forwarded verbatim and percent-encoded (+ as %2B, quotes kept)")
    func flagConfigEncoding() throws {
        let base = try #require(URL(string: "http://127.0.0.1:8080/ofrep/v1/evaluate/flags"))
        let url = OFREPRequestBuilder.endpoint(
            base, flagConfig: FlagConfigVersion(etag: "\"a+b/c d\"", lastModified: "1733061234"))
        #expect(
            url.absoluteString
                == "http://127.0.0.1:8080/ofrep/v1/evaluate/flags?flagConfigEtag=%22a%2Bb%2Fc%20d%22&flagConfigLastModified=1733061234"
        )
        #expect(OFREPRequestBuilder.endpoint(base, flagConfig: nil) == base)
        #expect(FlagConfigVersion(etag: nil, lastModified: nil) == nil)
    }
}
