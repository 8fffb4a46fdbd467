import Halyard

/// The keys, values and access sequence every design reads, so that all designs do the same work.
struct Workload: Sendable {
    /// 64 keys shaped like real flag keys, 9 to 21 UTF-8 bytes: 30 fit in a small `String`
    /// (up to 15 bytes, stored inline) and 34 are longer (stored out of line), as in real code.
    let keys: [String]
    /// Two Bool value sets; the publisher alternates between them. Set 1 flips every third key.
    let values: [[Bool]]
    /// Key indices in a seeded pseudo-random order; length is a power of two.
    let sequence: [Int32]

    static let keyCount = 64
    static let sequenceLength = 1 << 13

    /// The keys, written as literals like real call sites (`flags.bool("checkout.new-flow", ...)`):
    /// literal strings are immortal, so passing one costs no reference counting. Keys built at
    /// run time would make every keyed design retain/release a `String` buffer shared by all
    /// reader threads, a cost of the harness and not of the designs.
    static let literalKeys: [String] = [
        "checkout.new-flow", "banner.text", "search.v2", "cart.enabled",
        "profile.dark-mode", "onboarding.skip", "pricing.tiers", "feed.ranking",
        "checkout.express-pay", "banner.color", "search.typeahead", "cart.save-later",
        "profile.avatar-upload", "onboarding.tour", "pricing.discount", "feed.autoplay",
        "checkout.apple-pay", "banner.dismissible", "search.filters", "cart.upsell",
        "profile.bio-limit", "onboarding.steps", "pricing.annual", "feed.infinite-scroll",
        "checkout.gift-wrap", "banner.position", "search.spellcheck", "cart.badge",
        "profile.pronouns", "onboarding.video", "pricing.trial-days", "feed.stories",
        "checkout.address-v3", "banner.countdown", "search.recent", "cart.coupon-field",
        "profile.export", "onboarding.email", "pricing.currency", "feed.ads-density",
        "checkout.split-pay", "banner.locale-fix", "search.voice", "cart.min-order",
        "profile.privacy-v2", "onboarding.push", "pricing.promo-code", "feed.reactions",
        "checkout.tip-jar", "banner.a11y", "search.semantic", "cart.recommend",
        "profile.share", "onboarding.locale", "pricing.bundles", "feed.share-sheet",
        "checkout.retry-3ds", "banner.rollout", "search.boost-new", "cart.quick-add",
        "profile.delete-v2", "onboarding.consent", "pricing.vat", "feed.comments-v2",
    ]

    init(seed: UInt64) {
        let keys = Self.literalKeys
        precondition(Set(keys).count == Self.keyCount)
        var rng = SplitMix64(seed: seed)  // Halyard's seeded generator (package access)
        let set0 = (0..<Self.keyCount).map { _ in rng.next() & 1 == 1 }
        let set1 = set0.enumerated().map { i, v in i % 3 == 0 ? !v : v }
        self.keys = keys
        self.values = [set0, set1]
        self.sequence = (0..<Self.sequenceLength).map { _ in
            Int32(truncatingIfNeeded: rng.next() % UInt64(Self.keyCount))
        }
    }

    /// The same keys built at run time (not literals): the 34 longer than 15 bytes are heap
    /// strings with reference counts, as keys read from configuration would be.
    var runtimeKeys: [String] { keys.map { String(decoding: Array($0.utf8), as: UTF8.self) } }

    func dictionary(_ set: Int) -> [String: Bool] {
        Dictionary(uniqueKeysWithValues: zip(keys, values[set]))
    }

    func jsonValues(_ set: Int) -> [String: JSONValue] {
        Dictionary(uniqueKeysWithValues: zip(keys, values[set].map { JSONValue.bool($0) }))
    }

    /// The checksum (number of `true` results) of `count` reads of value set 0 starting at
    /// sequence position `start`, computed directly: every design must reproduce it.
    func expectedChecksum(start: Int, count: Int) -> Int {
        var sum = 0
        for j in start..<(start + count) where values[0][Int(sequence[j & (sequence.count - 1)])] {
            sum += 1
        }
        return sum
    }
}
