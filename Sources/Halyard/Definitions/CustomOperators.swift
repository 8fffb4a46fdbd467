/// flagd's custom JsonLogic operators (docs/definitions.md, "Custom operators"). Each returns
/// null on bad input, so that a rule made only of one falls back to the default variant.
enum CustomOperators {
    /// The largest total weight `fractional` accepts (`Int32.max`).
    static let maxTotalWeight: Int64 = 2_147_483_647

    /// `fractional` with bucketing v2: the bucket key is the first argument when it evaluates
    /// to a string, else the flag key followed by the targeting key (null without one, or for
    /// an empty key); `(murmur3_x86_32(key, seed 0) × total) >> 32` picks a bucket over the
    /// relative integer weights (a missing weight is 1, a negative one 0). Null when a bucket
    /// is not `[variant]` or `[variant, integer]`, the total is 0 or above `Int32.max`.
    static func fractional(_ args: [JSONValue], _ env: LogicEnvironment) -> JSONValue {
        guard let first = args.first else { return .null }
        let hash: UInt32
        let buckets: ArraySlice<JSONValue>
        if case .string(let key) = first {
            guard !key.isEmpty else { return .null }
            hash = MurmurHash3.hash(key)
            buckets = args.dropFirst()
        } else {
            guard !env.targetingKey.isEmpty else { return .null }
            hash = MurmurHash3.hash(env.flagKey, env.targetingKey)
            buckets = args[...]
        }
        var total: Int64 = 0
        var weights: [Int64] = []
        weights.reserveCapacity(buckets.count)
        for bucket in buckets {
            guard case .array(let pair) = bucket, pair.count == 1 || pair.count == 2 else { return .null }
            var weight: Int64 = 1
            if pair.count == 2 {
                guard case .int(let w) = pair[1] else { return .null }
                weight = Swift.max(0, w)
            }
            total += weight
            guard total <= maxTotalWeight else { return .null }
            weights.append(weight)
        }
        let bucket = Int64((UInt64(hash) &* UInt64(total)) >> 32)
        var end: Int64 = 0
        for (index, bucketValue) in buckets.enumerated() {
            end += weights[index]
            if bucket < end {
                guard case .array(let pair) = bucketValue else { return .null }
                return pair[0]
            }
        }
        return .null
    }

    /// `sem_ver`: `[version, operator, version]` with `=`, `!=`, `<`, `<=`, `>`, `>=`, `^` (same
    /// major), `~` (same major and minor). Numbers are read as their text (`1.2` → `1.2.0`).
    /// Null for another argument count, a value that is not a version, or another operator.
    static func semVer(_ args: [JSONValue]) -> JSONValue {
        guard args.count == 3, case .string(let opText) = args[1], let op = SemanticVersionOperator(rawValue: opText),
            let left = version(args[0]), let right = version(args[2])
        else { return .null }
        return .bool(op.holds(left, right))
    }

    /// A value read as a version (strings and numbers, as their text), or nil.
    static func version(_ value: JSONValue) -> SemanticVersion? {
        versionText(value).flatMap(SemanticVersion.init)
    }

    private static func versionText(_ value: JSONValue) -> String? {
        switch value {
        case .string, .int, .double: LogicCoercion.plainString(value)
        default: nil
        }
    }

    /// `starts_with` / `ends_with`: exactly two strings, compared by code points; null otherwise.
    static func stringMatch(_ args: [JSONValue], suffix: Bool) -> JSONValue {
        guard args.count == 2, case .string(let text) = args[0], case .string(let part) = args[1] else {
            return .null
        }
        return .bool(matches(text, part, suffix: suffix))
    }

    /// Whether `text` starts (or ends) with `part`, by code points (UTF-8 bytes).
    static func matches(_ text: String, _ part: String, suffix: Bool) -> Bool {
        suffix ? text.utf8.reversed().starts(with: part.utf8.reversed()) : text.utf8.starts(with: part.utf8)
    }
}
