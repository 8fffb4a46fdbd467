import Foundation
import Testing

@testable import Halyard

/// The pure state machine: de-dup, sampling, bounded buffer, batching, retry — no threads.
@Suite struct ExposureStateTests {
    static let fp = String(repeating: "ab", count: 20)

    static func options(_ edit: (inout ExposureOptions) -> Void = { _ in }) -> ExposureOptions {
        var o = ExposureOptions()
        o.initialBackoff = .seconds(1)
        o.maxBackoff = .seconds(60)
        edit(&o)
        return o
    }

    @discardableResult
    static func record(
        _ s: inout ExposureState, key: String, variant: String? = "on", fp: String = fp,
        at seconds: Int = 0
    ) -> ExposureState.RecordResult {
        s.record(
            key: key, variant: variant, reason: "TARGETING_MATCH", contextFingerprint: fp,
            dedupKey: ExposureHash.dedupKey(fingerprint: fp, key: key, variant: variant),
            now: .seconds(seconds), nowSeconds: UInt32(seconds), creationDate: 1_800_000_000 + Int64(seconds))
    }

    static func identityHolds(_ c: ExposureStats) -> Bool {
        c.recorded == c.deduplicated + c.sampledOut + c.sent + c.dropped + c.pending
    }

    // MARK: De-duplication

    @Test func deduplicatesWithinTheWindowPerTriple() {
        var s = ExposureState(options: Self.options(), idempotencyKeyPrefix: "t")
        let first = Self.record(&s, key: "a", at: 10)
        #expect(first.decision == .buffered)
        #expect(first.windowEnd == 310)
        let again = Self.record(&s, key: "a", at: 309)
        #expect(again.decision == .deduplicated)
        #expect(again.windowEnd == 310)
        // Another variant, key or fingerprint is another exposure.
        #expect(Self.record(&s, key: "a", variant: "off", at: 20).decision == .buffered)
        #expect(Self.record(&s, key: "a", variant: nil, at: 20).decision == .buffered)
        #expect(Self.record(&s, key: "b", at: 20).decision == .buffered)
        #expect(Self.record(&s, key: "a", fp: "other", at: 20).decision == .buffered)
        // The window ends: recorded again, new window.
        let later = Self.record(&s, key: "a", at: 310)
        #expect(later.decision == .buffered)
        #expect(later.windowEnd == 610)
        let c = s.counters
        #expect(c.recorded == 7 && c.deduplicated == 1 && c.pending == 6)
        #expect(Self.identityHolds(c))
    }

    @Test func zeroWindowDisablesDeduplication() {
        var s = ExposureState(options: Self.options { $0.dedupWindow = .zero }, idempotencyKeyPrefix: "t")
        #expect(Self.record(&s, key: "a", at: 5).decision == .buffered)
        let r = Self.record(&s, key: "a", at: 5)
        #expect(r.decision == .buffered)
        #expect(r.windowEnd == 5)  // the read's slot stays expired: every read calls in
    }

    @Test func dedupTableIsBoundedAndPrunes() {
        var t = ExposureDedupTable(capacity: 100)
        for i in 0..<1_000 { _ = t.check(UInt64(i), now: 0, window: 300) }
        #expect(t.count == 100)
        #expect(t.evicted == 900)
        // The newest survive (evicted oldest-window first).
        let newest = t.check(999, now: 1, window: 300)
        let oldest = t.check(0, now: 1, window: 300)
        #expect(newest == 300 && oldest == nil)
        // Expired entries are pruned as time passes.
        var u = ExposureDedupTable(capacity: 10_000)
        for i in 0..<50 { _ = u.check(UInt64(i), now: 0, window: 10) }
        for i in 0..<10 { _ = u.check(UInt64(10_000 + i), now: 20, window: 10) }
        #expect(u.count < 60)
        u.prune(now: 20, limit: 1_000)
        #expect(u.count == 10)
    }

    // MARK: Sampling

    /// An independent FNV-1a 64 over `fp 0xFF key 0xFF variant` / `fp 0xFF key 0xFE`.
    static func referenceKeeps(fp: String, key: String, variant: String?, rate: Double) -> Bool {
        var bytes = Array(fp.utf8) + [0xFF] + Array(key.utf8)
        if let variant { bytes += [0xFF] + Array(variant.utf8) } else { bytes.append(0xFE) }
        var h: UInt64 = 14_695_981_039_346_656_037
        for b in bytes { h ^= UInt64(b); h = h &* 1_099_511_628_211 }
        return Double(h >> 11) / 9_007_199_254_740_992.0 < rate
    }

    @Test func samplingIsDeterministicAndPredictable() {
        let rate = 0.3
        var s = ExposureState(
            options: Self.options {
                $0.sampleRate = rate; $0.capacity = 100_000
            }, idempotencyKeyPrefix: "t")
        var predicted = 0
        for i in 0..<3_000 {
            let key = "flag.\(i % 100)"
            let fp = "ctx-\(i / 100)"
            let variant: String? = i % 7 == 0 ? nil : "v\(i % 3)"
            let keep = Self.referenceKeeps(fp: fp, key: key, variant: variant, rate: rate)
            if keep { predicted += 1 }
            let r = Self.record(&s, key: key, variant: variant, fp: fp)
            #expect(r.decision == (keep ? .buffered : .sampledOut), "\(fp) \(key) \(String(describing: variant))")
            // A sampled-out triple is de-duplicated in its window like a kept one.
            #expect(Self.record(&s, key: key, variant: variant, fp: fp).decision == .deduplicated)
        }
        let c = s.counters
        #expect(c.pending == predicted)
        #expect(c.sampledOut == 3_000 - predicted)
        #expect(abs(Double(predicted) / 3_000 - rate) < 0.05)
        #expect(Self.identityHolds(c))
    }

    @Test func dedupKeysSeparateFieldsAndDoNotCollide() {
        func k(_ fp: String, _ key: String, _ variant: String?) -> UInt64 {
            ExposureHash.dedupKey(fingerprint: fp, key: key, variant: variant)
        }
        #expect(k("ab", "c", "v") != k("a", "bc", "v"))
        #expect(k("f", "key", nil) != k("f", "key", ""))
        #expect(k("f", "k", "v") != k("f", "kv", nil))
        #expect(k("f", "k", "v") == k(String("xf".dropFirst()), "k", "v"))  // by value, not identity
        #expect(k("f", "", "") != k("f", "", nil))
        // Short strings one character and one length apart (the flag table's byte hash gives
        // "k1" and "k10" the same value: it cannot key this table).
        #expect(k("f", "k1", "on") != k("f", "k10", "on"))
        #expect(k("f", "k", "v1") != k("f", "k", "v10"))
        var seen = Set<UInt64>()
        for i in 0..<200_000 {
            let fp = String(format: "%040x", i / 400)
            seen.insert(k(fp, "flag-\(i % 400)", i % 2 == 0 ? "on" : nil))
        }
        #expect(seen.count == 200_000)
        // The sampling hash is FNV-1a 64 exactly (the offset basis for the empty input).
        let basis: UInt64 = 14_695_981_039_346_656_037, prime: UInt64 = 1_099_511_628_211
        let expected = (((basis ^ 0xFF) &* prime) ^ 0xFE) &* prime
        let actual = ExposureHash.hash(fingerprint: "", key: "", variant: nil)
        #expect(actual == expected)
    }

    @Test func sampleRateIsClamped() {
        var o = ExposureOptions()
        o.sampleRate = 2; #expect(o.sampleRate == 1)
        o.sampleRate = -1; #expect(o.sampleRate == 0)
        o.sampleRate = .nan; #expect(o.sampleRate == 1)
        var s = ExposureState(options: Self.options { $0.sampleRate = 0 }, idempotencyKeyPrefix: "t")
        #expect(Self.record(&s, key: "a").decision == .sampledOut)
    }

    // MARK: Bounded buffer and batching

    @Test func fullBufferDropsOldestAndCounts() {
        var s = ExposureState(options: Self.options { $0.capacity = 5 }, idempotencyKeyPrefix: "t")
        for i in 0..<8 { Self.record(&s, key: "k\(i)") }
        var c = s.counters
        #expect(c.dropped == 3 && c.pending == 5)
        guard case .send(let batch) = s.nextBatch(now: .zero) else { Issue.record("no batch"); return }
        #expect(batch.events.map(\.key) == ["k3", "k4", "k5", "k6", "k7"])
        _ = s.finish(batch, outcome: .delivered, now: .zero, unit: 0)
        c = s.counters
        #expect(c.sent == 5 && c.pending == 0 && Self.identityHolds(c))
    }

    @Test func batchesHoldAtMostBatchSizeAndTriggerADrain() {
        var s = ExposureState(options: Self.options { $0.batchSize = 4 }, idempotencyKeyPrefix: "p")
        var starts = 0
        for i in 0..<10 where Self.record(&s, key: "k\(i)").startDrain { starts += 1 }
        #expect(starts == 1)  // one request until the drain finishes
        var keys: [String] = []
        var sizes: [Int] = []
        while case .send(let b) = s.nextBatch(now: .zero) {
            keys.append(b.idempotencyKey); sizes.append(b.events.count)
            _ = s.finish(b, outcome: .delivered, now: .zero, unit: 0)
        }
        #expect(sizes == [4, 4, 2])
        #expect(keys == ["p-1", "p-2", "p-3"])
        s.automaticDrainFinished()
        for i in 10..<14 where Self.record(&s, key: "k\(i)").startDrain { starts += 1 }
        #expect(starts == 2)
    }

    @Test func batchSizeIsCappedAtOneThousand() {
        var s = ExposureState(
            options: Self.options {
                $0.batchSize = 5_000; $0.capacity = 5_000
            }, idempotencyKeyPrefix: "p")
        for i in 0..<2_500 { Self.record(&s, key: "k\(i)") }
        guard case .send(let b) = s.nextBatch(now: .zero) else { Issue.record("no batch"); return }
        #expect(b.events.count == 1_000)
    }

    @Test func periodicFlushIsDueAfterTheInterval() {
        var s = ExposureState(options: Self.options { $0.flushInterval = .seconds(30) }, idempotencyKeyPrefix: "p")
        let idle = s.tick(now: .seconds(31))  // nothing pending
        Self.record(&s, key: "a", at: 31)
        let early = s.tick(now: .seconds(29))
        let due = s.tick(now: .seconds(31))
        let again = s.tick(now: .seconds(32))  // already requested
        #expect(!idle && !early && due && !again)
    }

    // MARK: Retry policy

    @Test func retryableFailuresRequeueAtTheFrontWithTheSameKey() {
        for outcome in [
            ExposureUploadOutcome.classify(status: 500, retryAfterHeader: nil, wallNow: Date()),
            .classify(status: 503, retryAfterHeader: nil, wallNow: Date()),
            .classify(status: 408, retryAfterHeader: nil, wallNow: Date()),
            .classify(status: 429, retryAfterHeader: "7", wallNow: Date()),
            .retry(retryAfter: nil) /* a transport error */,
        ] {
            var s = ExposureState(options: Self.options { $0.batchSize = 3 }, idempotencyKeyPrefix: "p")
            for i in 0..<5 { Self.record(&s, key: "k\(i)") }
            guard case .send(let first) = s.nextBatch(now: .seconds(100)) else { Issue.record("no batch"); return }
            let f = s.finish(first, outcome: outcome, now: .seconds(100), unit: 0.5)
            #expect(f.stop && f.failed && f.sent == 0 && f.dropped == 0)
            #expect(s.counters.pending == 5 && s.counters.failed == 1)
            // Backoff: base 1 s, first failure, unit 0.5 → 0.5 s; Retry-After 7 → its window
            // [7 s, 8 s] at 0.5 → 7.5 s.
            let expectedWait: Duration =
                outcome == .retry(retryAfter: .seconds(7)) ? .milliseconds(7_500) : .milliseconds(500)
            #expect(s.notBefore == .seconds(100) + expectedWait)
            let deferred = s.nextBatch(now: .seconds(100))
            #expect(deferred == .deferred(until: .seconds(100) + expectedWait))
            Self.record(&s, key: "late", at: 100)
            guard case .send(let retry) = s.nextBatch(now: .seconds(108)) else { Issue.record("no retry"); return }
            #expect(retry.idempotencyKey == first.idempotencyKey)
            #expect(retry.events == first.events)
            #expect(retry.attempts == 2)
            _ = s.finish(retry, outcome: .delivered, now: .seconds(108), unit: 0)
            guard case .send(let next) = s.nextBatch(now: .seconds(108)) else { Issue.record("no batch"); return }
            #expect(next.idempotencyKey != first.idempotencyKey)
            #expect(next.events.map(\.key) == ["k3", "k4", "late"])
        }
    }

    @Test func otherStatusesDropTheBatchAndContinue() {
        for status in [400, 401, 403, 404, 413, 422, 301] {
            let outcome = ExposureUploadOutcome.classify(status: status, retryAfterHeader: "5", wallNow: Date())
            #expect(outcome == .rejected(status: status))
            var s = ExposureState(options: Self.options { $0.batchSize = 2 }, idempotencyKeyPrefix: "p")
            for i in 0..<3 { Self.record(&s, key: "k\(i)") }
            guard case .send(let b) = s.nextBatch(now: .zero) else { Issue.record("no batch"); return }
            let f = s.finish(b, outcome: outcome, now: .zero, unit: 0.5)
            #expect(!f.stop && f.dropped == 2 && f.rejectedStatus == status)
            let c = s.counters
            #expect(c.dropped == 2 && c.rejected == 2 && c.failed == 1 && c.pending == 1)
            #expect(Self.identityHolds(c))
            #expect(s.notBefore == .zero)
        }
        #expect(ExposureUploadOutcome.classify(status: 204, retryAfterHeader: nil, wallNow: Date()) == .delivered)
    }

    @Test func requeueStaysWithinCapacityDroppingTheOldest() {
        var s = ExposureState(
            options: Self.options {
                $0.batchSize = 4; $0.capacity = 6
            }, idempotencyKeyPrefix: "p")
        for i in 0..<4 { Self.record(&s, key: "k\(i)") }
        guard case .send(let b) = s.nextBatch(now: .zero) else { Issue.record("no batch"); return }
        for i in 4..<8 { Self.record(&s, key: "k\(i)") }  // 4 queued while 4 in flight
        let f = s.finish(b, outcome: .retry(retryAfter: nil), now: .zero, unit: 0)
        #expect(f.dropped == 2)
        var c = s.counters
        #expect(c.pending == 6 && c.dropped == 2 && Self.identityHolds(c))
        // Still full: a new event pushes the oldest requeued one out.
        Self.record(&s, key: "k8")
        c = s.counters
        #expect(c.pending == 6 && c.dropped == 3 && Self.identityHolds(c))
        guard case .send(let retry) = s.nextBatch(now: .seconds(10)) else { Issue.record("no retry"); return }
        // Trimmed: a different body, so a new Idempotency-Key (issue 14; a reused key with a
        // different body gets 422 from servers that follow the Idempotency-Key draft).
        #expect(retry.idempotencyKey != b.idempotencyKey)
        #expect(retry.events.map(\.key) == ["k3"])
    }

    /// Issue 14: a requeued batch keeps its key while its events are unchanged, and gets a new,
    /// never-used key each time the full buffer trims it.
    @Test func aTrimmedRetryBatchGetsANewIdempotencyKey() {
        var s = ExposureState(
            options: Self.options {
                $0.batchSize = 3; $0.capacity = 3
            }, idempotencyKeyPrefix: "p")
        for i in 0..<3 { Self.record(&s, key: "k\(i)") }
        guard case .send(let first) = s.nextBatch(now: .zero) else { Issue.record("no batch"); return }
        _ = s.finish(first, outcome: .retry(retryAfter: nil), now: .zero, unit: 0)
        guard case .send(let same) = s.nextBatch(now: .seconds(1)) else { Issue.record("no retry"); return }
        #expect(same.idempotencyKey == first.idempotencyKey)  // unchanged body: same key
        _ = s.finish(same, outcome: .retry(retryAfter: nil), now: .seconds(1), unit: 0)
        Self.record(&s, key: "k3", at: 1)  // full: pushes k0 out of the requeued batch
        guard case .send(let trimmed) = s.nextBatch(now: .seconds(2)) else { Issue.record("no retry"); return }
        #expect(trimmed.events.map(\.key) == ["k1", "k2"])
        #expect(trimmed.idempotencyKey != first.idempotencyKey)
        _ = s.finish(trimmed, outcome: .retry(retryAfter: nil), now: .seconds(2), unit: 0)
        Self.record(&s, key: "k4", at: 2)  // trims again: yet another key
        guard case .send(let again) = s.nextBatch(now: .seconds(3)) else { Issue.record("no retry"); return }
        #expect(again.events.map(\.key) == ["k2"])
        #expect(Set([first.idempotencyKey, trimmed.idempotencyKey, again.idempotencyKey]).count == 3)
    }

    @Test func backoffIsExponentialWithFullJitterAndCapped() {
        let b = Backoff(base: .seconds(1), maximum: .seconds(300))
        #expect(b.delay(failures: 1, retryAfter: nil, unit: 0) == .zero)
        #expect(b.delay(failures: 1, retryAfter: nil, unit: 0.5) == .milliseconds(500))
        #expect(b.delay(failures: 4, retryAfter: nil, unit: 0.5) == .seconds(4))
        #expect(b.delay(failures: 30, retryAfter: nil, unit: 0.5) == .seconds(150))
        #expect(b.delay(failures: 1_000, retryAfter: nil, unit: 0.999_999) <= .seconds(300))
        // Retry-After: capped at 1 h, spread over [RA, RA + max(1 s, RA / 10)] by the same unit.
        #expect(b.delay(failures: 3, retryAfter: .seconds(42), unit: 0.1) == .milliseconds(42_420))
        #expect(b.delay(failures: 3, retryAfter: .seconds(86_400), unit: 0.1) == .seconds(3_636))
    }

    @Test func closeIgnoresLaterRecordsAndAbandonsWhatIsLeft() {
        var s = ExposureState(options: Self.options(), idempotencyKeyPrefix: "p")
        Self.record(&s, key: "a")
        let first = s.close()
        let second = s.close()
        #expect(first && !second)
        let r = Self.record(&s, key: "b")
        #expect(r.decision == .ignored && r.windowEnd == .max)
        let final = s.nextBatch(now: .zero, ignoreBackoff: true)
        #expect(final != .idle)
        var s2 = ExposureState(options: Self.options(), idempotencyKeyPrefix: "p")
        Self.record(&s2, key: "a")
        _ = s2.close()
        let abandoned = s2.abandonQueued()
        #expect(abandoned == 1)
        let c = s2.counters
        #expect(c.recorded == 1 && c.dropped == 1 && Self.identityHolds(c))
    }

    // MARK: Retry-After

    @Test func retryAfterParsesAllThreeForms() {
        let now = Date(timeIntervalSince1970: 1_445_412_400)  // 2015-10-21T07:26:40Z
        #expect(RetryAfter.parse("120", now: now) == .seconds(120))
        #expect(RetryAfter.parse(" 0 ", now: now) == .zero)
        #expect(RetryAfter.parse("Wed, 21 Oct 2015 07:28:00 GMT", now: now) == .seconds(80))
        #expect(RetryAfter.parse("Wednesday, 21-Oct-15 07:28:00 GMT", now: now) == .seconds(80))
        #expect(RetryAfter.parse("Wed Oct 21 07:28:00 2015", now: now) == .seconds(80))
        #expect(RetryAfter.parse("2015-10-21T07:28:00Z", now: now) == .seconds(80))
        #expect(RetryAfter.parse("2015-10-21T09:28:00+02:00", now: now) == .seconds(80))
        #expect(RetryAfter.parse("2015-10-21T07:27:59.5Z", now: now) == .milliseconds(79_500))
        #expect(RetryAfter.parse("2015-10-21T07:00:00Z", now: now) == .zero)  // past
        for bad in [
            "", "soon", "-5", "1.5", "Wed, 32 Oct 2015 07:28:00 GMT", "2015-13-01T00:00:00Z",
            "2015-10-21T07:28:00Zjunk", "Wed, 21 Oct 2015 07:28:00 PST", "\u{0}",
        ] {
            #expect(RetryAfter.parse(bad, now: now) == nil, "\(bad)")
        }
        #expect(RetryAfter.unixSeconds(year: 1970, month: 1, day: 1, hour: 0, minute: 0, second: 0) == 0)
        #expect(
            RetryAfter.unixSeconds(year: 2000, month: 3, day: 1, hour: 0, minute: 0, second: 0) == 951_868_800)
    }

    /// Issue 14: during a backoff or Retry-After the ticker starts no drain (there is nothing it
    /// could send), even when the periodic flush is due.
    @Test func noDrainIsStartedDuringABackoff() {
        var s = ExposureState(options: Self.options { $0.flushInterval = .seconds(1) }, idempotencyKeyPrefix: "p")
        Self.record(&s, key: "k")
        guard case .send(let b) = s.nextBatch(now: .zero) else { Issue.record("no batch"); return }
        _ = s.finish(b, outcome: .retry(retryAfter: .seconds(60)), now: .zero, unit: 0)
        Self.record(&s, key: "k2")
        var started: [Int] = []
        for second in 1..<60 where s.tick(now: .seconds(Int64(second))) { started.append(second) }
        #expect(started.isEmpty, "drains started at \(started) s")
        let due = s.tick(now: .seconds(60))
        #expect(due)

    }
}
