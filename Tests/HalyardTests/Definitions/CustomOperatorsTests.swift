import Testing

@testable import Halyard

/// flagd's custom operators, each edge case the flagd docs and schema name.
@Suite struct CustomOperatorsTests {
    static func env(_ targetingKey: String = "", flagKey: String = "flag") -> LogicEnvironment {
        LogicEnvironment(attributes: [:], targetingKey: targetingKey, flagKey: flagKey, timestamp: 0)
    }

    @Test func fractionalBucketsByHashTimesTotalWeight() {
        // "jon@company.com" hashes to 0x5cd91845: (0x5cd91845 * 100) >> 32 = 36.
        let hash = UInt64(MurmurHash3.hash("jon@company.com"))
        #expect((hash * 100) >> 32 == 36)
        let buckets: [JSONValue] = ["jon@company.com", ["a", 36], ["b", 64]]
        #expect(CustomOperators.fractional(buckets, Self.env()) == "b")
        #expect(CustomOperators.fractional(["jon@company.com", ["a", 37], ["b", 63]], Self.env()) == "a")
        // Relative weights: over 25, (hash * 25) >> 32 = 9, so a bucket of 9 ends just before it.
        #expect((hash * 25) >> 32 == 9)
        #expect(CustomOperators.fractional(["jon@company.com", ["a", 9], ["b", 16]], Self.env()) == "b")
        #expect(CustomOperators.fractional(["jon@company.com", ["a", 10], ["b", 15]], Self.env()) == "a")
    }

    @Test func fractionalShorthandUsesFlagKeyAndTargetingKey() {
        let key = "my-flag" + "user-1"
        let expected = (UInt64(MurmurHash3.hash(key)) * 2) >> 32 == 0 ? "x" : "y"
        #expect(
            CustomOperators.fractional([["x", 1], ["y", 1]], Self.env("user-1", flagKey: "my-flag"))
                == .string(expected))
        // No targeting key: null (the default variant).
        #expect(CustomOperators.fractional([["x", 1], ["y", 1]], Self.env()) == nil)
        // A first argument that is not a string (null from a missing var) falls to the
        // shorthand, where it is a malformed bucket.
        #expect(CustomOperators.fractional([nil, ["x", 1]], Self.env("u")) == nil)
    }

    @Test func fractionalEdgeCases() {
        let env = Self.env("u")
        #expect(CustomOperators.fractional([], env) == nil)
        #expect(CustomOperators.fractional(["k"], env) == nil, "no buckets")
        #expect(CustomOperators.fractional(["", ["a", 1]], env) == nil, "empty bucket key")
        #expect(CustomOperators.fractional(["k", ["a", 0], ["b", 0]], env) == nil, "total weight 0")
        #expect(
            CustomOperators.fractional(["k", ["a", -50], ["b", 100]], env) == "b", "negative weight clamped to 0")
        #expect(CustomOperators.fractional(["k", ["a"]], env) == "a", "weight defaults to 1")
        #expect(CustomOperators.fractional(["k", ["a", 1.5]], env) == nil, "fractional weight")
        #expect(CustomOperators.fractional(["k", ["a", true]], env) == nil, "boolean weight")
        #expect(CustomOperators.fractional(["k", ["a", 1, 2]], env) == nil, "three-item bucket")
        #expect(CustomOperators.fractional(["k", "a"], env) == nil, "bucket not an array")
        #expect(CustomOperators.fractional(["k", ["a", 2_147_483_647]], env) == "a", "total Int32.max")
        #expect(
            CustomOperators.fractional(["k", ["a", 2_147_483_647], ["b", 1]], env) == nil, "total above Int32.max")
        #expect(CustomOperators.fractional(["k", [true, 1]], env) == true, "a variant may be any value")
    }

    @Test func semVerOperators() {
        func sv(_ a: JSONValue, _ op: String, _ b: JSONValue) -> JSONValue {
            CustomOperators.semVer([a, .string(op), b])
        }
        #expect(sv("1.0.0", "=", "1.0.0") == true)
        #expect(sv("1.0.0", "!=", "1.0.1") == true)
        #expect(sv("1.0.0-alpha", "<", "1.0.0") == true)
        #expect(sv("1.2.0", "<=", "1.2.0") == true)
        #expect(sv("2.0.0", ">", "1.9.9") == true)
        #expect(sv("1.0.0", ">=", "1.0.1") == false)
        #expect(sv("1.5.9", "^", "1.0.0") == true)
        #expect(sv("2.0.0", "^", "1.0.0") == false)
        #expect(sv("1.0.9", "~", "1.0.0") == true)
        #expect(sv("1.1.0", "~", "1.0.0") == false)
        // Same major or same major and minor, whichever side is greater (the reference).
        #expect(sv("1.0.0", "^", "1.9.0") == true)
        #expect(sv("v1.0.0", "=", "V1.0.0") == true)
        #expect(sv(1, "=", "1.0.0") == true)
        #expect(sv(1.2, ">", "1.1") == true)
        #expect(sv("1.0.0+a", "=", "1.0.0+b") == true)
        #expect(sv("not-a-version", "=", "1.0.0") == nil)
        #expect(sv("1.0.0", "===", "1.0.0") == nil)
        #expect(sv(true, "=", "1.0.0") == nil)
        #expect(CustomOperators.semVer(["1.0.0", "="]) == nil)
        #expect(CustomOperators.semVer(["1.0.0", 1, "1.0.0"]) == nil)
    }

    @Test func startsWithAndEndsWith() {
        #expect(CustomOperators.stringMatch(["abcdef", "abc"], suffix: false) == true)
        #expect(CustomOperators.stringMatch(["abcdef", "def"], suffix: true) == true)
        #expect(CustomOperators.stringMatch(["abcdef", "def"], suffix: false) == false)
        #expect(CustomOperators.stringMatch(["abc", ""], suffix: false) == true)
        #expect(CustomOperators.stringMatch([123, "1"], suffix: false) == nil)
        #expect(CustomOperators.stringMatch(["abc", 1], suffix: true) == nil)
        #expect(CustomOperators.stringMatch(["abc"], suffix: true) == nil)
        #expect(CustomOperators.stringMatch(["a", "b", "c"], suffix: false) == nil)
        // Code points: a decomposed é does not start with the precomposed one.
        #expect(CustomOperators.stringMatch(["e\u{301}x", "\u{e9}"], suffix: false) == false)
        #expect(CustomOperators.stringMatch(["x😀", "😀"], suffix: true) == true)
    }
}
