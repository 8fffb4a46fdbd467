import Foundation

// How the memo recognises a context it has fitted before (docs/service.md, "The warm path").
//
// **Hash: one pass.** Each attribute gets a 64-bit hash of the UTF-8 bytes of its name and of
// its value (a folded-multiply hash keyed by per-memo random words); the attribute hashes are
// combined by addition, so a dictionary's iteration order (which differs between equal
// dictionaries) does not matter. The targeting key, the kind and the counts are mixed in. The
// table keyed by the result finalizes it with `Hasher` once; `EvaluationContext`'s own
// `Hashable` would run a seeded `Hasher` (a full SipHash finalization) per attribute.
//
// **Equality: exact, byte for byte.** The memo's copy of a context keeps its attribute hashes
// sorted; a probe walks its own attributes once, finds each one's hash there by binary search
// and compares the name's and value's bytes. Nothing is hashed again (`Dictionary.==` looks up
// every key in the other dictionary, hashing each name anew). Counts, targeting key and kind
// are compared first. Strings compare by their UTF-8 bytes, doubles by their bit patterns:
// stricter than `==` (which treats canonically equivalent strings as equal although they fit
// to different canonical JSON, so different fingerprints), so two contexts the memo takes for
// one always fit to the same bytes. A hash collision costs a comparison, never a wrong answer.

extension FittingMemo {
    /// The hash words of one memo: random per memo (an attacker cannot aim contexts at one
    /// table slot without knowing them), or fixed and degenerate for the collision test.
    struct HashKeys: Sendable {
        let k0: UInt64
        let k1: UInt64
        let k2: UInt64
        /// Test only: every context gets the same hash (all entries collide).
        let constant: Bool

        static func random() -> HashKeys {
            var g = SystemRandomNumberGenerator()
            return HashKeys(k0: g.next() | 1, k1: g.next() | 1, k2: g.next() | 1, constant: false)
        }

        static let colliding = HashKeys(
            k0: 0x9E37_79B9_7F4A_7C15, k1: 0xC2B2_AE3D_27D4_EB4F, k2: 0x1656_67B1_9E37_79F9, constant: true)
    }

    /// One attribute of a memoized context: its hash and where it is in the memo's copy.
    struct StoredAttribute {
        let hash: UInt64
        let index: Dictionary<String, JSONValue>.Index
    }
}

/// A multiply folded to 64 bits: the mixing step of the hash.
@inline(__always)
private func fold(_ a: UInt64, _ b: UInt64) -> UInt64 {
    let r = a.multipliedFullWidth(by: b)
    return r.high ^ r.low
}

extension FittingMemo.HashKeys {
    /// The hash of `count` bytes at `p`, with `salt` (a different one per kind of value).
    @inline(__always)
    func hash(_ p: UnsafeRawBufferPointer, salt: UInt64) -> UInt64 {
        let n = p.count
        var h = fold(k0 ^ salt, k1 ^ UInt64(truncatingIfNeeded: n))
        guard let base = p.baseAddress else { return h }
        var i = 0
        while i + 16 <= n {
            let a = base.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            let b = base.loadUnaligned(fromByteOffset: i + 8, as: UInt64.self)
            h = fold(a ^ k1 ^ h, b ^ k2)
            i += 16
        }
        let rest = n - i
        var a: UInt64 = 0
        var b: UInt64 = 0
        if rest >= 8 {
            a = base.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            b = base.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self)
        } else if rest >= 4 {
            a = UInt64(base.loadUnaligned(fromByteOffset: i, as: UInt32.self))
            b = UInt64(base.loadUnaligned(fromByteOffset: n - 4, as: UInt32.self))
        } else if rest > 0 {
            a =
                UInt64(base.load(fromByteOffset: i, as: UInt8.self)) << 16
                | UInt64(base.load(fromByteOffset: i + rest / 2, as: UInt8.self)) << 8
                | UInt64(base.load(fromByteOffset: n - 1, as: UInt8.self))
        }
        return fold(a ^ k1 ^ h, b ^ k2)
    }

    @inline(__always)
    func hash(_ s: String, salt: UInt64) -> UInt64 {
        withUTF8Bytes(s) { hash($0, salt: salt) }
    }

    /// The hash of a value; objects combine their members by addition, as the context does.
    func hash(_ value: JSONValue) -> UInt64 {
        switch value {
        case .null: return fold(k0 ^ 1, k2)
        case .bool(let b): return fold(k0 ^ (b ? 3 : 2), k2)
        case .int(let i): return fold(k0 ^ 4, k2 ^ UInt64(bitPattern: i))
        case .double(let d): return fold(k0 ^ 5, k2 ^ d.bitPattern)
        case .string(let s): return hash(s, salt: 6)
        case .array(let items):
            var h = fold(k0 ^ 7, k2 ^ UInt64(items.count))
            for item in items { h = fold(h ^ k1, hash(item) ^ k2) }
            return h
        case .object(let members):
            var sum = fold(k0 ^ 8, k2 ^ UInt64(members.count))
            for (name, member) in members { sum &+= attributeHash(name, member) }
            return sum
        }
    }

    /// The hash of one attribute (name and value together).
    @inline(__always)
    func attributeHash(_ name: String, _ value: JSONValue) -> UInt64 {
        fold(hash(name, salt: 9) ^ k1, hash(value) ^ k2)
    }

    /// The context's hash: the attribute hashes (written to `hashes` in iteration order),
    /// summed, with the targeting key, kind and counts. Private attribute names count only by
    /// number here; equality compares them.
    func hash(_ context: EvaluationContext, into hashes: UnsafeMutableBufferPointer<UInt64>) -> UInt64 {
        var sum: UInt64 = 0
        var n = 0
        for (name, value) in context.attributes {
            let h = attributeHash(name, value)
            hashes[n] = h
            sum &+= h
            n += 1
        }
        if constant { return 0 }
        let counts =
            UInt64(truncatingIfNeeded: context.attributes.count) << 32
            | UInt64(truncatingIfNeeded: context.privateAttributes.count)
        let head = fold(hash(context.targetingKey, salt: 10) ^ k2, hash(context.kind, salt: 11) ^ counts)
        return fold(head ^ k0, sum ^ k1)
    }
}

/// Runs `body` on the UTF-8 bytes of `s` (in place for native strings).
@inline(__always)
private func withUTF8Bytes<R>(_ s: String, _ body: (UnsafeRawBufferPointer) -> R) -> R {
    if let r = s.utf8.withContiguousStorageIfAvailable({ body(UnsafeRawBufferPointer($0)) }) { return r }
    var copy = s
    return copy.withUTF8 { body(UnsafeRawBufferPointer($0)) }
}

/// Whether two strings have the same UTF-8 bytes.
@inline(__always)
func sameBytes(_ a: String, _ b: String) -> Bool {
    guard a.utf8.count == b.utf8.count else { return false }
    return withUTF8Bytes(a) { pa in
        withUTF8Bytes(b) { pb in
            pa.count == 0 || memcmp(pa.baseAddress!, pb.baseAddress!, pa.count) == 0
        }
    }
}

/// Whether two values are the same JSON, byte for byte (strings by bytes, doubles by bits).
func sameValue(_ a: JSONValue, _ b: JSONValue) -> Bool {
    switch (a, b) {
    case (.null, .null): return true
    case (.bool(let x), .bool(let y)): return x == y
    case (.int(let x), .int(let y)): return x == y
    case (.double(let x), .double(let y)): return x.bitPattern == y.bitPattern
    case (.string(let x), .string(let y)): return sameBytes(x, y)
    case (.array(let x), .array(let y)):
        guard x.count == y.count else { return false }
        for i in x.indices where !sameValue(x[i], y[i]) { return false }
        return true
    case (.object(let x), .object(let y)):
        guard x.count == y.count else { return false }
        for (name, value) in x {
            guard let j = y.index(forKey: name) else { return false }
            let (otherName, otherValue) = y[j]
            guard sameBytes(name, otherName), sameValue(value, otherValue) else { return false }
        }
        return true
    default: return false
    }
}

extension FittingMemo.Entry {
    /// Whether `context` (whose attribute hashes, in its iteration order, are `hashes`) is
    /// exactly this entry's context: counts, targeting key and kind first, then each attribute
    /// found by its hash and compared byte for byte, then the private names.
    func matches(_ context: EvaluationContext, _ hashes: UnsafeMutableBufferPointer<UInt64>) -> Bool {
        let mine = self.context
        guard context.attributes.count == mine.attributes.count,
            context.privateAttributes.count == mine.privateAttributes.count,
            sameBytes(context.targetingKey, mine.targetingKey), sameBytes(context.kind, mine.kind)
        else { return false }
        var n = 0
        for (name, value) in context.attributes {
            let h = hashes[n]
            n += 1
            // The first stored attribute with hash h (binary search), then each with that hash.
            var lo = 0
            var hi = order.count
            while lo < hi {
                let mid = (lo + hi) >> 1
                if order[mid].hash < h { lo = mid + 1 } else { hi = mid }
            }
            var found = false
            while lo < order.count, order[lo].hash == h {
                let (otherName, otherValue) = mine.attributes[order[lo].index]
                if sameBytes(name, otherName) && sameValue(value, otherValue) {
                    found = true
                    break
                }
                lo += 1
            }
            if !found { return false }
        }
        // Fitting tests names against the private set with String's `==`, so equal sets fit alike.
        return context.privateAttributes.isEmpty || context.privateAttributes == mine.privateAttributes
    }
}
