import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// Service mode keeps one `EvaluationDetail` per distinct served result, shared by every cached
/// context served it (`DetailInterner`; docs/service.md, "Shared details").
@Suite struct DetailSharingTests {
    static func flag(_ key: String, _ value: JSONValue?, variant: String? = "on", metadata: FlagMetadata = [:])
        -> ServedFlag
    {
        ServedFlag(key: key, value: value, variant: variant, reason: .targetingMatch, metadata: metadata)
    }

    @Test func oneResultIsOneDetailAndOnlyAnExactlyEqualOneIsShared() throws {
        let interner = DetailInterner()
        let base = [
            Self.flag("b", .bool(true)), Self.flag("s", .string("caf\u{E9}")), Self.flag("d", .double(0)),
            Self.flag("o", .object(["caf\u{E9}": .int(1)])), Self.flag("m", .int(1), metadata: ["v": .number(0)]),
        ]
        let first = interner.details(for: base, keysShared: false)
        let again = interner.details(for: base, keysShared: false)
        for (index, flag) in base.enumerated() {
            let a = try #require(first[index], "\(flag.key) was not interned")
            #expect(again[index] === a, "\(flag.key): the same result got a second detail")
            #expect(a.interned && a.servedFlag == flag)
        }
        // Equal by `==` but not byte for byte (a canonically equivalent string, a member name
        // spelt so, -0.0, a metadata number's sign), or another variant: a detail of its own,
        // which shows exactly what was served.
        let near = [
            Self.flag("b", .bool(true), variant: "other"), Self.flag("s", .string("cafe\u{301}")),
            Self.flag("d", .double(-0.0)), Self.flag("o", .object(["cafe\u{301}": .int(1)])),
            Self.flag("m", .int(1), metadata: ["v": .number(-0.0)]),
        ]
        for (index, flag) in near.enumerated() { #expect(flag == base[index] || index == 0) }
        let others = interner.details(for: near, keysShared: false)
        for (index, flag) in near.enumerated() {
            let detail = try #require(others[index])
            #expect(detail !== first[index], "\(flag.key): \(flag) shared the detail of \(base[index])")
            #expect(detail.isExactly(flag) && !detail.isExactly(base[index]))
        }
        #expect(interner.count == 10)
        #expect(interner.bytes == (first + others).reduce(0) { $0 + ($1?.estimatedBytes(keyShared: false) ?? 0) })
    }

    @Test func aFlagWhoseValueDiffersPerContextStopsAtItsBoundAndTheRestAreStillShared() {
        let interner = DetailInterner()
        var held: [[EvaluationDetail?]] = []
        for user in 0..<(interner.maxPerKey + 10) {
            held.append(
                interner.details(
                    for: [Self.flag("who", .string("user-\(user)")), Self.flag("on", .bool(true))], keysShared: true))
        }
        #expect(held.filter { $0[0] != nil }.count == interner.maxPerKey)
        #expect(held.allSatisfy { $0[1] != nil && $0[1] === held[0][1] }, "a bounded key kept another from sharing")
        #expect(interner.count == interner.maxPerKey + 1)
    }

    @Test func detailsNoSnapshotHoldsAreSweptAndHeldOnesStay() throws {
        let interner = DetailInterner()
        let kept = try #require(interner.details(for: [Self.flag("who", .string("kept"))], keysShared: true)[0])
        for user in 1..<interner.maxPerKey {
            _ = interner.details(for: [Self.flag("who", .string("gone-\(user)"))], keysShared: true)  // dropped at once
        }
        #expect(interner.count == interner.maxPerKey)
        // Refused until `sweepEvery` refusals; then the unheld ones go, and there is room again.
        for user in 0..<(DetailInterner.sweepEvery - 1) {
            #expect(interner.details(for: [Self.flag("who", .string("late-\(user)"))], keysShared: true)[0] == nil)
        }
        let late = interner.details(for: [Self.flag("who", .string("late"))], keysShared: true)[0]
        #expect(late != nil, "a full table of unheld details was not swept")
        #expect(interner.count == 2)
        #expect(interner.details(for: [Self.flag("who", .string("kept"))], keysShared: true)[0] === kept)
        #expect(interner.bytes == kept.estimatedBytes(keyShared: true) + (late?.estimatedBytes(keyShared: true) ?? -1))
    }

    @Test func aSharedDetailIsNotCountedInItsSnapshotsBytes() {
        let flags = (0..<16).map {
            Self.flag("flag.number.\($0).with.a.long.key", .string("a value longer than 15 bytes"))
        }
        let own = Snapshot.make(
            flags: flags, source: .network, confirmedAt: nil, contextFingerprint: "", etag: nil, inheritingFrom: nil)
        let details = DetailInterner().details(for: flags, keysShared: false)
        let shared = Snapshot.make(
            flags: flags, source: .network, confirmedAt: nil, contextFingerprint: "", etag: nil, inheritingFrom: nil,
            details: details)
        let detailBytes = details.reduce(0) { $0 + ($1?.estimatedBytes(keyShared: false) ?? 0) }
        #expect(detailBytes > 16 * 128)
        #expect(own.estimatedBytes() - shared.estimatedBytes() == detailBytes)
        #expect(shared.flags == flags)
    }

    @Test func eachStripeKeepsItsOwnCopyOfAResult() throws {
        let interner = DetailInterner(stripes: 4)
        let flags = [Self.flag("on", .bool(true))]
        var copies: [EvaluationDetail] = []
        for stripe in 0..<8 {
            let detail = try #require(interner.details(for: flags, keysShared: true, stripe: stripe)[0])
            #expect(detail.isExactly(flags[0]))
            if stripe < 4 { copies.append(detail) } else { #expect(detail === copies[stripe % 4], "stripe \(stripe)") }
        }
        #expect(Set(copies.map(ObjectIdentifier.init)).count == 4, "the stripes share copies")
        #expect(interner.count == 4)
        #expect(interner.maxPerKey == 4 * 32)
    }

    static func plane() -> InMemoryControlPlane {
        let plane = InMemoryControlPlane()
        plane.setContextValues { context in
            guard case .object(let m) = context, case .string(let key)? = m["targetingKey"] else { return nil }
            var values: [String: JSONValue] = ["who": .string("it is \(key), a per-user value")]
            for i in 0..<8 { values["flag.\(i)"] = .int(Int64(i)) }
            values["limits"] = .object(["max": .int(10)])
            return values
        }
        return plane
    }

    @Test func contextsServedTheSameResultShareItsDetailAndReadTheirOwnValues() async throws {
        let plane = Self.plane()
        var options = plane.makeServiceOptions()
        options.sharedDetailStripes = 1  // one copy of each result (stripes: the next test)
        let service = try FlagService(options: options)
        defer { service.close() }
        let users = ["user-1", "user-2", "user-3"]
        var views: [ContextFlags] = []
        for user in users { views.append(await service.flags(for: EvaluationContext(targetingKey: user))) }
        let snapshots = try views.map { try #require($0.snapshot) }
        let limits = try #require(snapshots[0].index(of: "limits"))
        let who = try #require(snapshots[0].index(of: "who"))
        for (user, (view, snapshot)) in zip(users, zip(views, snapshots)) {
            #expect(view.string("who", default: "") == "it is \(user), a per-user value")
            #expect(view.detail("limits", default: .null).value == .object(["max": .int(10)]))
            #expect(snapshot.details[limits] === snapshots[0].details[limits], "\(user) built its own detail")
            #expect(snapshot.details[who].interned)
        }
        #expect(snapshots[1].details[who] !== snapshots[0].details[who])
        let stats = service.stats
        #expect(stats.cache.sharedDetails == 9 + 3)
        #expect(stats.cache.sharedDetailBytes == service.details.bytes && stats.cache.sharedDetailBytes > 0)
    }

    /// Contexts come and go (a cache of 8 over 600 users), so their snapshots are freed and the
    /// per-user flag's bound sweeps details while other tasks read views they hold. Run under
    /// TSan and ASan by `.ci/run`: a sweep that dropped a held detail would free it under a
    /// reader.
    @Test func sweepsWhileViewsAreReadServeEveryReaderItsOwnValues() async throws {
        let plane = Self.plane()
        var options = plane.makeServiceOptions()
        options.maxContexts = 8
        options.exposures.enabled = false
        let service = try FlagService(options: options)
        defer { service.close() }
        let failures = await withTaskGroup(of: Int.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    var failures = 0
                    var held: [(String, ContextFlags, Evaluation<String>)] = []
                    for round in 0..<150 {
                        let user = "user-\(worker * 150 + round)"
                        let view = await service.flags(for: EvaluationContext(targetingKey: user))
                        held.append((user, view, view.stringDetail("who", default: "")))
                        if held.count > 20 { held.removeFirst() }
                        for (user, view, evaluation) in held {
                            let expected = "it is \(user), a per-user value"
                            if view.stringDetail("who", default: "").value != expected || evaluation.value != expected
                                || view.detail("limits", default: .null).value != .object(["max": .int(10)])
                            {
                                failures += 1
                            }
                        }
                    }
                    return failures
                }
            }
            return await group.reduce(0, +)
        }
        #expect(failures == 0)
        #expect(service.details.count <= service.details.maxPerKey + 9 * service.details.stripes)
    }
}
