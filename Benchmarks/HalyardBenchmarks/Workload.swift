import Halyard

/// The keys, values and access sequence every design reads, so that all designs do the same work.
struct Workload: Sendable {
    /// 64 keys shaped like real flag keys, 8 to 24 UTF-8 bytes (Swift stores up to 15 bytes
    /// inline in the `String` and longer ones on the heap: both shapes occur).
    let keys: [String]
    /// Two Bool value sets; the publisher alternates between them. Set 1 flips every third key.
    let values: [[Bool]]
    /// Key indices in a seeded pseudo-random order; length is a power of two.
    let sequence: [Int32]

    static let keyCount = 64
    static let sequenceLength = 1 << 13

    init(seed: UInt64) {
        let areas = ["checkout", "banner", "search", "cart", "profile", "onboarding", "pricing", "feed"]
        let features = [
            "new-flow", "text", "v2", "enabled", "dark-mode", "fast-path", "beta-ui", "limits",
        ]
        var keys: [String] = []
        for (a, area) in areas.enumerated() {
            for (f, feature) in features.enumerated() {
                var key = "\(area).\(feature)"
                // Vary the lengths a little more so they spread over 8...24 bytes.
                if (a + f) % 5 == 0 { key += ".rollout" }
                while key.utf8.count < 8 { key += "-x" }
                if key.utf8.count > 24 { key = String(key.utf8.prefix(24))! }
                keys.append(key)
            }
        }
        precondition(Set(keys).count == Self.keyCount)
        var rng = SplitMix64(seed: seed)
        let set0 = (0..<Self.keyCount).map { _ in rng.next() & 1 == 1 }
        let set1 = set0.enumerated().map { i, v in i % 3 == 0 ? !v : v }
        self.keys = keys
        self.values = [set0, set1]
        self.sequence = (0..<Self.sequenceLength).map { _ in Int32(truncatingIfNeeded: rng.next() % UInt64(Self.keyCount)) }
    }

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

/// Small, fast, seeded generator (public-domain SplitMix64 constants).
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
