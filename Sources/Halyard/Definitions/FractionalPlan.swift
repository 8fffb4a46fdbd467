/// A `fractional` whose buckets are written as constants (the usual case), checked and summed
/// once when the rule is compiled: an evaluation hashes the bucketing key and walks the
/// cumulative weights, with no array built (docs/definitions.md, "Evaluation cost").
///
/// The result is ``CustomOperators/fractional(_:_:)``'s for the same arguments: a bucketing
/// expression that does not give a string is handed, evaluated, to that function.
struct FractionalPlan: Sendable {
    /// The first argument when it is not a bucket: its string value is the bucketing key.
    let key: LogicNode?
    /// The buckets as written (`[variant, weight]`), for the general path.
    let buckets: [JSONValue]
    /// Each bucket's variant, in order.
    let variants: [JSONValue]
    /// Each bucket's cumulative end (the sum of the weights up to and including it).
    let ends: [Int64]
    /// The sum of the weights.
    let total: Int64

    /// A plan for `fractional` with these compiled arguments, or nil when they are not
    /// constant, valid buckets (the general path then gives the same result, null included).
    init?(_ arguments: [LogicNode]) {
        guard let first = arguments.first else { return nil }
        let bucketNodes: ArraySlice<LogicNode>
        if case .array? = first.constant {
            key = nil
            bucketNodes = arguments[...]
        } else if first.constant == nil {
            key = first
            bucketNodes = arguments.dropFirst()
        } else if case .string? = first.constant {
            key = first
            bucketNodes = arguments.dropFirst()
        } else {
            return nil
        }
        var buckets: [JSONValue] = []
        var variants: [JSONValue] = []
        var ends: [Int64] = []
        var total: Int64 = 0
        for node in bucketNodes {
            guard let bucket = node.constant, case .array(let pair) = bucket, pair.count == 1 || pair.count == 2 else {
                return nil
            }
            var weight: Int64 = 1
            if pair.count == 2 {
                guard case .int(let w) = pair[1] else { return nil }
                weight = max(0, w)
            }
            total += weight
            guard total <= CustomOperators.maxTotalWeight else { return nil }
            buckets.append(bucket)
            variants.append(pair[0])
            ends.append(total)
        }
        self.buckets = buckets
        self.variants = variants
        self.ends = ends
        self.total = total
    }

    /// The variant for this evaluation, or null.
    func evaluate(_ data: LogicData, _ env: LogicEnvironment) throws(LogicError) -> JSONValue {
        let hash: UInt32
        if let key {
            let value = try key.evaluate(data, env)
            guard case .string(let text) = value else {
                return CustomOperators.fractional([value] + buckets, env)
            }
            guard !text.isEmpty else { return .null }
            hash = MurmurHash3.hash(text)
        } else {
            guard !env.targetingKey.isEmpty else { return .null }
            hash = MurmurHash3.hash(env.flagKey, env.targetingKey)
        }
        guard let bucket = bucket(of: hash) else { return .null }
        return variants[bucket]
    }

    /// The bucket a key's hash falls in: `(hash × total) >> 32` against the cumulative ends;
    /// nil when the weights are all 0.
    @inline(__always)
    func bucket(of hash: UInt32) -> Int? {
        let point = Int64((UInt64(hash) &* UInt64(total)) >> 32)
        for (index, end) in ends.enumerated() where point < end { return index }
        return nil
    }
}
