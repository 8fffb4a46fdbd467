import Foundation

extension FittingMemo {
    /// The hash words of one memo: random per memo (an attacker cannot aim contexts at one
    /// table slot without knowing them), or fixed and degenerate for the collision test.
    struct HashKeys: Sendable {
        let k0: UInt64
        let k1: UInt64
        let k2: UInt64
        /// Test only: every context gets the same hash (all entries collide).
        let constant: Bool
        /// The bit that marks a string's small form in its second word (``StringLayout``)
        /// when small strings are written as their two words, else 0; fixed for the memo's
        /// life, so its entries and probes agree. Tested with one `and` per string (a flag
        /// tested first was a load, a compare and a branch more per string, measured).
        var smallMask: UInt64 = StringLayout.available ? StringLayout.smallBit : 0
        /// Attributes read in place from their dictionary's storage (``AttributeBuckets``)
        /// rather than through the dictionary's iterator; fixed for the memo's life. Both
        /// write the same bytes (tests compare them).
        private var readsInPlace: Bool = AttributeBuckets.available

        /// Whether attributes are read in place (only where ``AttributeBuckets/available``).
        var inPlace: Bool {
            get { readsInPlace }
            set { readsInPlace = newValue && AttributeBuckets.available }
        }

        /// Whether strings in Swift's small form are written as their two words.
        var smallStrings: Bool {
            get { smallMask != 0 }
            set { smallMask = newValue && StringLayout.available ? StringLayout.smallBit : 0 }
        }

        static func random() -> HashKeys {
            var g = SystemRandomNumberGenerator()
            return HashKeys(k0: g.next() | 1, k1: g.next() | 1, k2: g.next() | 1, constant: false)
        }

        static let colliding = HashKeys(
            k0: 0x9E37_79B9_7F4A_7C15, k1: 0xC2B2_AE3D_27D4_EB4F, k2: 0x1656_67B1_9E37_79F9, constant: true)
    }
}

/// A multiply folded to 64 bits: the mixing step of the hash.
@inline(__always)
func fold(_ a: UInt64, _ b: UInt64) -> UInt64 {
    let r = a.multipliedFullWidth(by: b)
    return r.high ^ r.low
}

extension FittingMemo.HashKeys {
    /// The hash of the bytes at `p`.
    @inline(__always)
    func hash(_ base: UnsafeRawPointer, _ n: Int) -> UInt64 {
        var h = fold(k0, k1 ^ UInt64(truncatingIfNeeded: n))
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
}
