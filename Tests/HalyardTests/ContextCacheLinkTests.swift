import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// The link a fitting-memo entry keeps to its context's cache node
/// (`ContextCache.Shard.find(_:linkedBy:)`): it is only a hint, trusted when the linked node
/// holds the same fingerprint, so an evicted, reused, replaced or foreign node never answers
/// for another context.
@Suite struct ContextCacheLinkTests {
    /// The cache owns its budget's words: kept alive for the tests' shards.
    static let cache = ContextCache(maxContexts: 64, maxBytes: 1 << 24)
    static var budget: ContextCache.ByteBudget { cache.budget }

    static func node(_ key: String, _ value: Bool) -> ContextCache.Node {
        ContextCache.Node(
            key: key, snapshot: Snapshot(flags: [ServedFlag(key: "f", value: .bool(value))], source: .network),
            confirmedAt: .zero, retryAt: .zero, failures: 0, bytes: 100, prev: -1, next: -1)
    }

    static func value(_ s: ContextCache.Shard, _ i: Int32?) -> JSONValue? {
        guard let i, let snapshot = s.nodes[Int(i)].snapshot else { return nil }
        return snapshot.flags.first?.value
    }

    /// Runs `body` with a fresh link (-1: none yet).
    static func withLink(_ body: (UnsafeMutablePointer<Int32>) throws -> Void) rethrows {
        let link = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
        defer { link.deallocate() }
        link.initialize(to: -1)
        try body(link)
    }

    @Test func aLinkIsSetByTheFirstFindAndFollowedAfter() {
        var s = ContextCache.Shard(maxCount: 4, admission: false)
        _ = s.upsert(Self.node("a", true), budget: Self.budget)
        _ = s.upsert(Self.node("b", false), budget: Self.budget)
        Self.withLink { link in
            #expect(s.find("b", linkedBy: link) == s.find("b"))
            #expect(link.pointee == s.find("b"))
            #expect(s.find("b", linkedBy: link) == s.find("b"))
            // A link never made for a context held nowhere stays unset.
            link.pointee = -1
            #expect(s.find("z", linkedBy: link) == nil && link.pointee == -1)
        }
    }

    /// The linked context is evicted and its node reused by another: the link must not serve
    /// the newcomer's values (without the key check it would: same node index).
    @Test func anEvictedContextsLinkDoesNotServeTheNodesNextContext() {
        var s = ContextCache.Shard(maxCount: 2, admission: false)
        _ = s.upsert(Self.node("a", true), budget: Self.budget)
        _ = s.upsert(Self.node("b", false), budget: Self.budget)
        Self.withLink { link in
            let a = s.find("a", linkedBy: link)
            #expect(a != nil && link.pointee == a)
            if let b = s.find("b") { s.touch(b) }  // "a" is now the least recently used
            let result = s.upsert(Self.node("c", false), budget: Self.budget)
            #expect(result.evicted == 1 && s.find("a") == nil)
            #expect(s.find("c") == a, "the test needs c in a's old node")
            #expect(s.find("a", linkedBy: link) == nil)
            // Held again (another node or the same): found through the index, link renewed.
            _ = s.upsert(Self.node("a", true), budget: Self.budget)
            let again = s.find("a", linkedBy: link)
            #expect(again != nil && again == s.find("a") && link.pointee == again)
            #expect(Self.value(s, again) == .bool(true))
        }
    }

    /// A removed context (dropped, its node freed and not reused yet) is not found through
    /// its link.
    @Test func aDroppedContextsLinkFindsNothing() {
        var s = ContextCache.Shard(maxCount: 4, admission: false)
        _ = s.upsert(Self.node("a", true), budget: Self.budget)
        Self.withLink { link in
            #expect(s.find("a", linkedBy: link) != nil)
            #expect(s.drop("a", budget: Self.budget) != nil)
            #expect(s.find("a", linkedBy: link) == nil)
        }
    }

    /// New values for the same context replace the node's snapshot in place: the link serves
    /// the new values.
    @Test func aReplacedEntrysLinkServesTheNewValues() {
        var s = ContextCache.Shard(maxCount: 4, admission: false)
        _ = s.upsert(Self.node("a", true), budget: Self.budget)
        Self.withLink { link in
            let i = s.find("a", linkedBy: link)
            _ = s.upsert(Self.node("a", false), budget: Self.budget)
            #expect(s.find("a", linkedBy: link) == i)
            #expect(Self.value(s, s.find("a", linkedBy: link)) == .bool(false))
        }
    }

    /// A link followed in a shard other than the one it was made in (the same node index
    /// holds another context there) is not trusted.
    @Test func aLinkFromAnotherShardIsNotTrusted() {
        var first = ContextCache.Shard(maxCount: 4, admission: false)
        var second = ContextCache.Shard(maxCount: 4, admission: false)
        _ = first.upsert(Self.node("a", true), budget: Self.budget)
        _ = second.upsert(Self.node("e", false), budget: Self.budget)
        Self.withLink { link in
            let a = first.find("a", linkedBy: link)
            #expect(a != nil && second.find("e") == a, "the test needs e at a's node index")
            #expect(second.find("a", linkedBy: link) == nil)
        }
    }

    /// End to end, through the memo's entries: contexts read warm (links made) are pushed out
    /// by others, which take their nodes; every warm read after that is either the context's
    /// own values or a miss, never another context's.
    @Test func theWarmPathNeverServesAnotherContextsValues() async throws {
        let plane = DetailSharingTests.plane()
        var options = plane.makeServiceOptions()
        options.maxContexts = 64  // the memo holds as many
        let service = try FlagService(options: options)
        defer { service.close() }
        var wrong: [Int] = []
        var warm = 0
        for round in 0..<8 {
            for id in (round * 24)..<(round * 24 + 48) { _ = await service.flags(for: serviceContext(id)) }
            for id in 0..<(round * 24 + 48) {
                let flags = service.flagsIfCached(for: serviceContext(id))
                guard flags.hasValues else { continue }
                warm += 1
                if flags.string("who", default: "none") != "it is user-\(id), a per-user value" { wrong.append(id) }
            }
        }
        #expect(wrong.isEmpty, "served another context's values: \(wrong.prefix(10))")
        #expect(warm > 0 && service.stats.cache.evictions > 0)
    }
}
