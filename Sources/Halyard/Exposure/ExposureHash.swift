/// The two hashes of a (fingerprint, key, variant) triple.
///
/// - ``hash(fingerprint:key:variant:)``, the *sampling* hash: FNV-1a 64 over the UTF-8 bytes of
///   `fingerprint 0xFF key 0xFF variant`, or `fingerprint 0xFF key 0xFE` when there is no variant.
///   0xFF and 0xFE never occur in UTF-8, so distinct triples give distinct byte strings. Specified
///   (docs/exposures.md) so tests and servers can predict sampling.
/// - ``dedupKey(fingerprint:key:variant:)``, the *de-duplication* identity: a word-at-a-time
///   multiply–xorshift hash with each string's length mixed in and a final avalanche. Not
///   specified and free to change; about 7x faster than byte-serial FNV-1a on a 76-byte triple,
///   which matters because every slow-path call computes it.
///
/// The de-duplication table is keyed by this hash alone (no byte comparison confirms a match),
/// so a collision suppresses an exposure: it must behave like a random 64-bit function on every
/// input, also short strings that differ by one character and a length. That is why it is not
/// the flag table's byte hash (`FlagTable.hash`), which a byte comparison backs: it XORs the
/// length into the seed that also holds a short string's last byte, so `"k1"` and `"k10"` get
/// the same hash. Nor the fitting memo's (`FittingMemo.HashKeys.hash`), keyed by random words
/// per memo and in `Service/`, a layer above this one.
package enum ExposureHash {
    /// FNV-1a 64's offset basis.
    static let offset: UInt64 = 0xcbf2_9ce4_8422_2325
    /// FNV-1a 64's prime.
    static let prime: UInt64 = 0x0000_0100_0000_01b3

    /// The sampling hash of a (fingerprint, key, variant) triple (FNV-1a 64, see above).
    @inline(__always)
    package static func hash(fingerprint: String, key: String, variant: String?) -> UInt64 {
        var h = offset
        @inline(__always) func mix(_ byte: UInt8) {
            h = (h ^ UInt64(byte)) &* prime
        }
        for b in fingerprint.utf8 { mix(b) }
        mix(0xFF)
        for b in key.utf8 { mix(b) }
        if let variant {
            mix(0xFF)
            for b in variant.utf8 { mix(b) }
        } else {
            mix(0xFE)
        }
        return h
    }

    /// The de-duplication hash's multiplier (2^64 / the golden ratio, odd).
    static let k1: UInt64 = 0x9E37_79B9_7F4A_7C15
    /// The multiplier of a string's length before it is absorbed.
    static let k2: UInt64 = 0xC2B2_AE3D_27D4_EB4F

    /// One step of the de-duplication hash: xor `word` in, multiply, xorshift.
    @inline(__always)
    static func round(_ h: UInt64, _ word: UInt64) -> UInt64 {
        let m = (h ^ word) &* k1
        return m ^ (m >> 29)
    }

    /// Absorbs `bytes` 8 at a time, then the tail, then the length (which delimits the string).
    @inline(__always)
    static func absorb(_ h: UInt64, _ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var h = h
        var i = 0
        let n = bytes.count
        while i + 8 <= n {
            h = round(h, bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            i += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while i < n {
            tail |= UInt64(bytes[i]) << shift
            shift += 8
            i += 1
        }
        h = round(h, tail)
        return round(h, UInt64(n) &* k2 | 1)  // the length delimits the string
    }

    /// Absorbs `s`'s UTF-8 bytes.
    @inline(__always)
    static func absorb(_ h: UInt64, _ s: String) -> UInt64 {
        if let r = s.utf8.withContiguousStorageIfAvailable({ absorb(h, UnsafeRawBufferPointer($0)) }) {
            return r
        }
        let bytes = Array(s.utf8)  // bridged strings without contiguous UTF-8 (Darwin)
        return bytes.withUnsafeBytes { absorb(h, $0) }
    }

    /// The de-duplication identity of a triple (see above).
    @inline(__always)
    package static func dedupKey(fingerprint: String, key: String, variant: String?) -> UInt64 {
        var h: UInt64 = 0x243F_6A88_85A3_08D3
        h = absorb(h, fingerprint)
        h = absorb(h, key)
        if let variant { h = absorb(h, variant) } else { h = round(h, 0xFE) }
        // Final avalanche (MurmurHash3 fmix64).
        h ^= h >> 33
        h = h &* 0xFF51_AFD7_ED55_8CCD
        h ^= h >> 33
        h = h &* 0xC4CE_B9FE_1A85_EC53
        h ^= h >> 33
        return h
    }

    /// The hash mapped into `[0, 1)`: its top 53 bits over 2^53.
    @inline(__always)
    package static func unit(_ hash: UInt64) -> Double {
        Double(unitInterval: hash)
    }

    /// Whether sampling at `rate` keeps the triple with this hash.
    @inline(__always)
    package static func keeps(_ hash: UInt64, rate: Double) -> Bool {
        rate >= 1 || unit(hash) < rate
    }
}
