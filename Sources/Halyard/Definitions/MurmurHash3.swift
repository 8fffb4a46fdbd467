/// MurmurHash3, x86 32-bit variant (Austin Appleby's public-domain algorithm), as `fractional`
/// uses it to bucket a key (flagd's bucketing v2: seed 0, the key's UTF-8 bytes).
///
/// A hasher's state can be fed in parts, so a key made of two strings (the flag key, then the
/// targeting key) is hashed without concatenating them, and the state after a constant prefix
/// can be kept and resumed (a flag's key, fed once when its rule is compiled:
/// ``VariantRule``). A string's UTF-8 is read in place four bytes at a time where its storage
/// is contiguous (native and small strings); the byte-at-a-time walk is left for bridged ones
/// (docs/definitions.md, "Evaluation cost").
struct MurmurHash3: Sendable {
    private static let c1: UInt32 = 0xcc9e_2d51
    private static let c2: UInt32 = 0x1b87_3593

    private var h: UInt32
    private var length: UInt32 = 0
    private var block: UInt32 = 0
    private var filled: UInt32 = 0

    /// A hash of no bytes yet, with `seed`.
    init(seed: UInt32 = 0) { h = seed }

    /// Feeds one byte.
    @inline(__always)
    mutating func combine(_ byte: UInt8) {
        block |= UInt32(byte) << (8 * filled)
        filled += 1
        length &+= 1
        if filled == 4 {
            mix(block)
            block = 0
            filled = 0
        }
    }

    /// Mixes one whole four-byte block (little-endian) into the hash.
    @inline(__always)
    private mutating func mix(_ block: UInt32) {
        var k = block &* Self.c1
        k = (k << 15) | (k >> 17)
        k = k &* Self.c2
        h ^= k
        h = (h << 13) | (h >> 19)
        h = h &* 5 &+ 0xe654_6b64
    }

    /// Feeds `count` bytes from `bytes`: one at a time up to a block boundary, then whole
    /// blocks, then the tail.
    @inline(__always)
    private mutating func combine(_ bytes: UnsafePointer<UInt8>, count: Int) {
        var i = 0
        while filled != 0, i < count {
            combine(bytes[i])
            i += 1
        }
        while count - i >= 4 {
            let word =
                UInt32(bytes[i]) | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2]) << 16 | UInt32(bytes[i + 3]) << 24
            mix(word)
            length &+= 4
            i += 4
        }
        while i < count {
            combine(bytes[i])
            i += 1
        }
    }

    /// Feeds the UTF-8 of `string`.
    mutating func combine(utf8 string: String) {
        let done: Void? = string.utf8.withContiguousStorageIfAvailable { buffer in
            guard let base = buffer.baseAddress else { return }
            combine(base, count: buffer.count)
        }
        if done == nil { combine(contentsOf: string.utf8) }
    }

    /// Feeds every byte of `bytes`.
    mutating func combine<Bytes: Sequence>(contentsOf bytes: Bytes) where Bytes.Element == UInt8 {
        for byte in bytes { combine(byte) }
    }

    /// The hash of the bytes fed so far.
    func finalize() -> UInt32 {
        var h = self.h
        if filled > 0 {
            var k = block &* Self.c1
            k = (k << 15) | (k >> 17)
            k = k &* Self.c2
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

    /// The 32-bit hash of `bytes` with `seed`.
    static func x86_32<Bytes: Sequence>(_ bytes: Bytes, seed: UInt32 = 0) -> UInt32 where Bytes.Element == UInt8 {
        var hasher = MurmurHash3(seed: seed)
        hasher.combine(contentsOf: bytes)
        return hasher.finalize()
    }

    /// The hash of a string's UTF-8 form with seed 0.
    static func hash(_ string: String) -> UInt32 {
        var hasher = MurmurHash3()
        hasher.combine(utf8: string)
        return hasher.finalize()
    }

    /// The hash of `first` followed by `second` (UTF-8, seed 0): the hash of their concatenation.
    static func hash(_ first: String, _ second: String) -> UInt32 {
        var hasher = MurmurHash3()
        hasher.combine(utf8: first)
        hasher.combine(utf8: second)
        return hasher.finalize()
    }
}
