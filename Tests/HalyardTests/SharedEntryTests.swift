import Foundation
import HalyardTesting
import Testing

@_spi(Fuzzing) @testable import Halyard

/// The shared cache's entry format and its breaker, without Redis (SPEC §15, docs/fleet.md):
/// an entry decodes only in its own namespace, under its own id, with the SDK key's secret and
/// every byte intact; the breaker opens, waits, tries once and closes as documented.
@Suite struct SharedEntryTests {
    static let keys = SharedTier.Keys(
        baseURL: URL(string: "https://plane.example")!, key: "srv-entry-key", appID: nil)

    static func entry() -> SharedEntry {
        SharedEntry(
            flags: [
                ServedFlag(key: "checkout.new", value: .bool(true), variant: "on", reason: .targetingMatch),
                ServedFlag(key: "limit", value: .int(3), reason: .staticValue),
                ServedFlag(
                    key: "broken", value: nil, reason: .error, errorCode: .parseError, errorMessage: "bad rule"),
            ],
            etag: "\"v7\"", confirmedAt: 1_780_000_000_123,
            flagConfig: FlagConfigVersion(etag: "cfg-9", lastModified: "1780000000"))
    }

    @Test func anEntryRoundTripsInItsNamespace() throws {
        let keys = Self.keys
        let id = keys.id(String(repeating: "ab", count: 20))
        let bytes = Self.entry().encoded(namespace: keys.namespace, id: id, secret: keys.secret)
        let decoded = try SharedEntry.decode(
            bytes, namespace: keys.namespace, id: id, secret: keys.secret, limit: 1 << 20)
        #expect(decoded == Self.entry())
        var bare = Self.entry()
        bare.flagConfig = nil
        bare.etag = nil
        let bareBytes = bare.encoded(namespace: keys.namespace, id: id, secret: keys.secret)
        #expect(
            try SharedEntry.decode(bareBytes, namespace: keys.namespace, id: id, secret: keys.secret, limit: 1 << 20)
                == bare)
    }

    @Test func anotherNamespaceIdOrKeyIsRefused() {
        let keys = Self.keys
        let id = keys.id(String(repeating: "ab", count: 20))
        let bytes = Self.entry().encoded(namespace: keys.namespace, id: id, secret: keys.secret)
        let rotated = SharedTier.Keys(baseURL: URL(string: "https://plane.example")!, key: "srv-other-key", appID: nil)
        let otherApp = SharedTier.Keys(baseURL: URL(string: "https://plane.example")!, key: "srv-entry-key", appID: "a")
        #expect(rotated.namespace != keys.namespace && otherApp.namespace != keys.namespace)
        #expect(!keys.namespace.contains("srv-entry-key"))
        let otherID = keys.id(String(repeating: "cd", count: 20))
        #expect(throws: SharedEntryError.unauthenticated) {
            try SharedEntry.decode(bytes, namespace: keys.namespace, id: otherID, secret: keys.secret, limit: 1 << 20)
        }
        #expect(throws: SharedEntryError.unauthenticated) {
            try SharedEntry.decode(bytes, namespace: rotated.namespace, id: id, secret: rotated.secret, limit: 1 << 20)
        }
        #expect(throws: SharedEntryError.unauthenticated) {
            try SharedEntry.decode(bytes, namespace: keys.namespace, id: id, secret: rotated.secret, limit: 1 << 20)
        }
        #expect(throws: SharedEntryError.tooLarge) {
            try SharedEntry.decode(
                bytes, namespace: keys.namespace, id: id, secret: keys.secret, limit: bytes.count - 1)
        }
    }

    /// Every single-byte change, every truncation: a typed error, never an entry.
    @Test func everyDamagedByteIsRefused() {
        let keys = Self.keys
        let id = keys.id(String(repeating: "ef", count: 20))
        let bytes = Self.entry().encoded(namespace: keys.namespace, id: id, secret: keys.secret)
        var random = SplitMix64(seed: 0x5EED_0015)
        for index in bytes.indices {
            var damaged = bytes
            damaged[index] ^= UInt8.random(in: 1...255, using: &random)
            #expect(
                (try? SharedEntry.decode(
                    damaged, namespace: keys.namespace, id: id, secret: keys.secret, limit: 1 << 20))
                    == nil, "byte \(index) changed")
        }
        for length in stride(from: 0, to: bytes.count, by: 7) {
            #expect(
                (try? SharedEntry.decode(
                    Array(bytes.prefix(length)), namespace: keys.namespace, id: id, secret: keys.secret, limit: 1 << 20))
                    == nil, "truncated to \(length)")
        }
    }

    /// RFC 2202's HMAC-SHA1 test cases 1, 2 and 6 (a key longer than a block).
    @Test func hmacMatchesRFC2202() {
        let one = SharedEntry.hmac([UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8))
        #expect(SHA1.hex(one) == "b617318655057264e28bc0b6fb378c8ef146be00")
        let two = SharedEntry.hmac(Array("Jefe".utf8), Array("what do ya want for nothing?".utf8))
        #expect(SHA1.hex(two) == "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79")
        let six = SharedEntry.hmac(
            [UInt8](repeating: 0xaa, count: 80), Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8))
        #expect(SHA1.hex(six) == "aa4ae5e15272d00e95705637ce8a3b55ed402112")
    }

    @Test func theBreakerOpensWaitsTriesOnceAndCloses() {
        var breaker = SharedCacheBreaker()
        var now = Duration.seconds(100)
        func admits(_ at: Duration) -> Bool { breaker.admit(now: at) }
        for _ in 0..<(SharedCacheBreaker.failuresToOpen - 1) {
            #expect(admits(now))
            breaker.failed(now: now)
        }
        #expect(!breaker.isOpen, "four failures in a row keep it closed")
        #expect(admits(now))
        breaker.failed(now: now)
        #expect(breaker.isOpen && breaker.openings == 1)
        #expect(!admits(now + .milliseconds(999)), "open for 1 s")
        #expect(admits(now + .seconds(1)), "then one trial")
        #expect(!admits(now + .seconds(1)), "and only one")
        // The trial fails: open twice as long.
        now += .seconds(1)
        breaker.failed(now: now)
        #expect(!admits(now + .milliseconds(1_999)))
        #expect(admits(now + .seconds(2)))
        breaker.succeeded()
        #expect(!breaker.isOpen && breaker.failuresInARow == 0)
        #expect(admits(now + .seconds(2)))
        // The open time is capped.
        var capped = SharedCacheBreaker()
        var t = Duration.zero
        for _ in 0..<SharedCacheBreaker.failuresToOpen { _ = capped.admit(now: t); capped.failed(now: t) }
        for _ in 0..<10 {
            guard case .open(let retryAt) = capped.phase else { Issue.record("not open"); return }
            #expect(retryAt - t <= SharedCacheBreaker.maxOpenTime)
            t = retryAt
            let trial = capped.admit(now: t)
            #expect(trial)
            capped.failed(now: t)
        }
        guard case .open(let last) = capped.phase else { Issue.record("not open"); return }
        #expect(last - t == SharedCacheBreaker.maxOpenTime)
    }

    /// A trial that never reports (its caller gone, its result lost) does not hold the breaker
    /// half-open for good: after ``SharedCacheBreaker/trialTime`` another trial goes.
    @Test func aTrialThatNeverReportsIsSupersededAfterItsDeadline() {
        var breaker = SharedCacheBreaker()
        let t = Duration.seconds(50)
        func admits(_ at: Duration) -> Bool { breaker.admit(now: at) }
        for _ in 0..<SharedCacheBreaker.failuresToOpen {
            _ = breaker.admit(now: t)
            breaker.failed(now: t)
        }
        let trialAt = t + SharedCacheBreaker.baseOpenTime
        #expect(admits(trialAt), "the first trial")
        // It never reports.
        let deadline = trialAt + SharedCacheBreaker.trialTime
        #expect(!admits(deadline - .milliseconds(1)), "one trial at a time until its deadline")
        #expect(breaker.isOpen)
        #expect(admits(deadline), "then another trial")
        #expect(!admits(deadline), "and only one")
        #expect(breaker.openings == 1, "a superseded trial is no new opening")
        #expect(admits(deadline + SharedCacheBreaker.trialTime), "nor does the second hold it for good")
        breaker.succeeded()
        #expect(!breaker.isOpen)
    }

    /// A call ended by the closed client (`RedisError.closed`, the service shutting down) is
    /// reported to the breaker as a failure: a trial so ended reopens it (for twice as long)
    /// instead of leaving it half-open for good; it is not an error of Redis's (neither counted
    /// nor logged).
    @Test func aTrialEndingInClosedIsReportedAsAFailure() async {
        let clock = ManualClock()
        let logged = Locked<[String]>([])
        let tier = SharedTier(
            client: RedisClient(endpoint: RedisEndpoint(address: .unix(path: "/nonexistent/halyard-test.sock"))),
            keys: Self.keys, leaseDuration: .seconds(2), entryLifetime: .seconds(60), clock: clock,
            logHandler: { record in logged.withLock { $0.append(record.message) } })
        // Nothing listens there: every call fails at once.
        for _ in 0..<SharedCacheBreaker.failuresToOpen { _ = await tier.lookup("fp") }
        #expect(tier.stats.breakerOpen && tier.stats.breakerOpenings == 1)
        let errors = tier.stats.errors
        #expect(errors == SharedCacheBreaker.failuresToOpen && logged.withLock { $0.count } == 1)
        tier.close()
        clock.advance(by: SharedCacheBreaker.baseOpenTime)
        _ = await tier.lookup("fp")  // the trial, ended by `.closed`
        #expect(tier.stats.breakerOpenings == 2, "the trial's `.closed` reached the breaker: it reopened")
        #expect(tier.stats.errors == errors && logged.withLock { $0.count } == 1, "not an error of Redis's")
        #expect(tier.stats.skippedCalls == 0)
        clock.advance(by: SharedCacheBreaker.baseOpenTime * 2 - .milliseconds(1))
        _ = await tier.lookup("fp")
        #expect(tier.stats.skippedCalls == 1, "open for twice as long")
        clock.advance(by: .milliseconds(1))
        _ = await tier.lookup("fp")
        #expect(tier.stats.breakerOpenings == 3 && tier.stats.skippedCalls == 1, "then the next trial")
    }
}
