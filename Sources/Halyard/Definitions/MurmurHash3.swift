/// MurmurHash3, x86 32-bit variant (Austin Appleby's public-domain algorithm), as `fractional`
/// uses it to bucket a key (flagd's bucketing v2: seed 0, the key's UTF-8 bytes).
enum MurmurHash3 {
    /// The 32-bit hash of `bytes` with `seed`.
    static func x86_32<Bytes: Sequence>(_ bytes: Bytes, seed: UInt32 = 0) -> UInt32 where Bytes.Element == UInt8 {
        let c1: UInt32 = 0xcc9e_2d51
        let c2: UInt32 = 0x1b87_3593
        var h = seed
        var length: UInt32 = 0
        var block: UInt32 = 0
        var filled = 0
        for byte in bytes {
            block |= UInt32(byte) << (8 * UInt32(filled))
            filled += 1
            length &+= 1
            if filled == 4 {
                var k = block &* c1
                k = (k << 15) | (k >> 17)
                k = k &* c2
                h ^= k
                h = (h << 13) | (h >> 19)
                h = h &* 5 &+ 0xe654_6b64
                block = 0
                filled = 0
            }
        }
        if filled > 0 {
            var k = block &* c1
            k = (k << 15) | (k >> 17)
            k = k &* c2
            h ^= k
        }
        h ^= length
        h ^= h >> 16
        h = h &* 0x85eb_ca6b
        h ^= h >> 13
        h = h &* 0xc2b2_ae35
        h ^= h >> 16
        return h
    }

    /// The hash of a string's UTF-8 form with seed 0.
    static func hash(_ string: String) -> UInt32 {
        var string = string
        return string.withUTF8 { x86_32($0) }
    }
}
