/// SHA-1 (FIPS 180-4), used for context fingerprints and cache file names.
///
/// SHA-1 is not collision-resistant against a determined attacker; Halyard uses it only as a
/// stable, portable identifier (SPEC §4, §8), never for security.
///
/// One-shot:
/// ```swift
/// let hex = SHA1.hexDigest(Array("abc".utf8))  // "a9993e364706816aba3e25717850c26c9cd0d89d"
/// ```
/// Incremental:
/// ```swift
/// var h = SHA1()
/// h.update(part1); h.update(part2)
/// let digest = h.finalize()
/// ```
public struct SHA1: Sendable {
    private var h0: UInt32 = 0x6745_2301
    private var h1: UInt32 = 0xEFCD_AB89
    private var h2: UInt32 = 0x98BA_DCFE
    private var h3: UInt32 = 0x1032_5476
    private var h4: UInt32 = 0xC3D2_E1F0
    /// Bytes waiting for a full 64-byte block (fewer than 64).
    private var pending: [UInt8] = []
    /// Total message length in bytes.
    private var length: UInt64 = 0

    /// The digest size in bytes (20).
    public static let digestByteCount = 20

    /// Creates a hasher in its initial state.
    public init() {
        pending.reserveCapacity(64)
    }

    /// The 20-byte digest of `bytes`.
    public static func hash(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        var h = SHA1()
        h.update(bytes)
        return h.finalize()
    }

    /// The digest of `bytes` as 40 lowercase hexadecimal characters.
    public static func hexDigest(_ bytes: some Sequence<UInt8>) -> String {
        hex(hash(bytes))
    }

    /// The digest of the UTF-8 bytes of `text` as 40 lowercase hexadecimal characters.
    public static func hexDigest(_ text: String) -> String {
        hexDigest(text.utf8)
    }

    /// Lowercase hexadecimal form of arbitrary bytes.
    public static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Adds bytes to the message. Contiguous collections (`[UInt8]`, `Data`, a `String`'s
    /// `utf8` view) are hashed block by block straight from their storage.
    public mutating func update(_ bytes: some Sequence<UInt8>) {
        let done: Void? = bytes.withContiguousStorageIfAvailable { buffer in
            self.update(UnsafeRawBufferPointer(buffer))
        }
        if done != nil { return }
        // Non-contiguous sequence: copy in chunks.
        var chunk: [UInt8] = []
        chunk.reserveCapacity(4096)
        for b in bytes {
            chunk.append(b)
            if chunk.count == 4096 {
                chunk.withUnsafeBytes { update($0) }
                chunk.removeAll(keepingCapacity: true)
            }
        }
        if !chunk.isEmpty { chunk.withUnsafeBytes { update($0) } }
    }

    /// Adds raw bytes to the message.
    public mutating func update(_ raw: UnsafeRawBufferPointer) {
        guard raw.count > 0 else { return }
        length &+= UInt64(raw.count)
        var offset = 0
        if !pending.isEmpty {
            let take = min(64 - pending.count, raw.count)
            pending.append(contentsOf: raw[0..<take])
            offset = take
            if pending.count == 64 {
                pending.withUnsafeBytes { compress(blocks: $0) }
                pending.removeAll(keepingCapacity: true)
            }
        }
        let full = (raw.count - offset) / 64 * 64
        if full > 0 {
            compress(blocks: UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + full)]))
            offset += full
        }
        if offset < raw.count {
            pending.append(contentsOf: raw[offset...])
        }
    }

    /// Pads the message and returns the 20-byte digest. The hasher should not be used after.
    public mutating func finalize() -> [UInt8] {
        let bitLength = length &* 8
        var tail = pending
        tail.append(0x80)
        while tail.count % 64 != 56 { tail.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) {
            tail.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift)))
        }
        tail.withUnsafeBytes { compress(blocks: $0) }
        pending.removeAll()
        var out: [UInt8] = []
        out.reserveCapacity(20)
        for word in [h0, h1, h2, h3, h4] {
            out.append(UInt8(truncatingIfNeeded: word >> 24))
            out.append(UInt8(truncatingIfNeeded: word >> 16))
            out.append(UInt8(truncatingIfNeeded: word >> 8))
            out.append(UInt8(truncatingIfNeeded: word))
        }
        return out
    }

    /// Processes whole 64-byte blocks (`blocks.count` is a multiple of 64).
    private mutating func compress(blocks: UnsafeRawBufferPointer) {
        var a0 = h0, b0 = h1, c0 = h2, d0 = h3, e0 = h4
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 16) { w in
            var blockStart = 0
            while blockStart < blocks.count {
                for t in 0..<16 {
                    w[t] = UInt32(bigEndian: blocks.loadUnaligned(fromByteOffset: blockStart + t * 4, as: UInt32.self))
                }
                var a = a0, b = b0, c = c0, d = d0, e = e0
                @inline(__always) func schedule(_ t: Int) -> UInt32 {
                    let x = w[(t &+ 13) & 15] ^ w[(t &+ 8) & 15] ^ w[(t &+ 2) & 15] ^ w[t & 15]
                    let v = x.rotl(1)
                    w[t & 15] = v
                    return v
                }
                for t in 0..<80 {
                    let wt = t < 16 ? w[t] : schedule(t)
                    let f: UInt32
                    let k: UInt32
                    if t < 20 {
                        f = (b & c) | (~b & d)
                        k = 0x5A82_7999
                    } else if t < 40 {
                        f = b ^ c ^ d
                        k = 0x6ED9_EBA1
                    } else if t < 60 {
                        f = (b & c) | (b & d) | (c & d)
                        k = 0x8F1B_BCDC
                    } else {
                        f = b ^ c ^ d
                        k = 0xCA62_C1D6
                    }
                    let temp = a.rotl(5) &+ f &+ e &+ k &+ wt
                    e = d
                    d = c
                    c = b.rotl(30)
                    b = a
                    a = temp
                }
                a0 &+= a
                b0 &+= b
                c0 &+= c
                d0 &+= d
                e0 &+= e
                blockStart += 64
            }
        }
        h0 = a0; h1 = b0; h2 = c0; h3 = d0; h4 = e0
    }
}

extension UInt32 {
    @inline(__always)
    fileprivate func rotl(_ n: UInt32) -> UInt32 { (self << n) | (self >> (32 - n)) }
}
