/// SHA-1 (FIPS 180-4), used for context fingerprints and cache file names.
///
/// SHA-1 is not collision-resistant against a determined attacker; Halyard uses it only as a
/// stable, portable identifier (docs/context.md), never for security.
///
/// Not API: public only as SPI (`@_spi(Fuzzing) import Halyard`) for the fuzz package, which
/// checks it against libcrypto.
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
@_spi(Fuzzing) public struct SHA1: Sendable {
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
    @_spi(Fuzzing) public static let digestByteCount = 20

    /// Creates a hasher in its initial state.
    @_spi(Fuzzing) public init() {}

    /// The 20-byte digest of `bytes`. Contiguous collections are hashed straight from their
    /// storage with no intermediate buffer.
    @_spi(Fuzzing) public static func hash(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        if let digest = bytes.withContiguousStorageIfAvailable({ oneShot(UnsafeRawBufferPointer($0)) }) {
            return digest
        }
        var h = SHA1()
        h.update(bytes)
        return h.finalize()
    }

    /// Hashes a whole message: full blocks from the caller's memory, the padded tail from a
    /// stack buffer.
    private static func oneShot(_ raw: UnsafeRawBufferPointer) -> [UInt8] {
        var h = SHA1()
        let full = raw.count / 64 * 64
        if full > 0 { h.compress(blocks: UnsafeRawBufferPointer(rebasing: raw[0..<full])) }
        let rest = raw.count - full
        let paddedLength = rest < 56 ? 64 : 128
        let bitLength = UInt64(raw.count) &* 8
        withUnsafeTemporaryAllocation(byteCount: 128, alignment: 8) { tail in
            for i in 0..<rest { tail[i] = raw[full + i] }
            tail[rest] = 0x80
            for i in (rest + 1)..<(paddedLength - 8) { tail[i] = 0 }
            for i in 0..<8 { tail[paddedLength - 8 + i] = UInt8(truncatingIfNeeded: bitLength >> UInt64(56 - 8 * i)) }
            h.compress(blocks: UnsafeRawBufferPointer(rebasing: tail[0..<paddedLength]))
        }
        return h.digest()
    }

    /// The current chaining value as 20 big-endian bytes.
    private func digest() -> [UInt8] {
        let (w0, w1, w2, w3, w4) = (h0, h1, h2, h3, h4)
        return [UInt8](unsafeUninitializedCapacity: 20) { buffer, count in
            func put(_ word: UInt32, _ i: Int) {
                buffer[i] = UInt8(truncatingIfNeeded: word >> 24)
                buffer[i + 1] = UInt8(truncatingIfNeeded: word >> 16)
                buffer[i + 2] = UInt8(truncatingIfNeeded: word >> 8)
                buffer[i + 3] = UInt8(truncatingIfNeeded: word)
            }
            put(w0, 0); put(w1, 4); put(w2, 8); put(w3, 12); put(w4, 16)
            count = 20
        }
    }

    /// The digest of `bytes` as 40 lowercase hexadecimal characters.
    @_spi(Fuzzing) public static func hexDigest(_ bytes: some Sequence<UInt8>) -> String {
        hex(hash(bytes))
    }

    /// The digest of the UTF-8 bytes of `text` as 40 lowercase hexadecimal characters.
    @_spi(Fuzzing) public static func hexDigest(_ text: String) -> String {
        hexDigest(text.utf8)
    }

    /// Lowercase hexadecimal form of arbitrary bytes.
    @_spi(Fuzzing) public static func hex(_ bytes: some Sequence<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        @inline(__always) func digit(_ v: UInt8) -> UInt8 { v < 10 ? v &+ 48 : v &+ 87 }
        for b in bytes {
            out.append(digit(b >> 4))
            out.append(digit(b & 0x0F))
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Adds bytes to the message. Contiguous collections (`[UInt8]`, `Data`, a `String`'s
    /// `utf8` view) are hashed block by block straight from their storage.
    @_spi(Fuzzing) public mutating func update(_ bytes: some Sequence<UInt8>) {
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
    @_spi(Fuzzing) public mutating func update(_ raw: UnsafeRawBufferPointer) {
        guard raw.count > 0 else { return }
        length &+= UInt64(raw.count)
        var offset = 0
        if !pending.isEmpty {
            let take = min(64 - pending.count, raw.count)
            pending.append(contentsOf: raw[0..<take])
            offset = take
            if pending.count == 64 {
                let block = pending
                block.withUnsafeBytes { compress(blocks: $0) }
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
    @_spi(Fuzzing) public mutating func finalize() -> [UInt8] {
        let bitLength = length &* 8
        var tail = pending
        tail.append(0x80)
        while tail.count % 64 != 56 { tail.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) {
            tail.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift)))
        }
        tail.withUnsafeBytes { compress(blocks: $0) }
        pending.removeAll()
        return digest()
    }

    /// Processes whole 64-byte blocks (`blocks.count` is a multiple of 64).
    private mutating func compress(blocks: UnsafeRawBufferPointer) {
        var a0 = h0, b0 = h1, c0 = h2, d0 = h3, e0 = h4
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 16) { buffer in
            let w = buffer.baseAddress!
            var blockStart = 0
            while blockStart < blocks.count {
                for t in 0..<16 {
                    w[t] = UInt32(
                        bigEndian: blocks.loadUnaligned(fromByteOffset: blockStart &+ t &* 4, as: UInt32.self))
                }
                var a = a0, b = b0, c = c0, d = d0, e = e0
                // The message schedule lives in a 16-word ring: W[t] = rotl1(W[t-3]^W[t-8]^W[t-14]^W[t-16]).
                // One loop per round function, so no step branches on t.
                @inline(__always) func schedule(_ t: Int) -> UInt32 {
                    let v = (w[(t &+ 13) & 15] ^ w[(t &+ 8) & 15] ^ w[(t &+ 2) & 15] ^ w[t & 15]).rotl(1)
                    w[t & 15] = v
                    return v
                }
                for t in 0..<16 {
                    let temp = a.rotl(5) &+ ((b & c) | (~b & d)) &+ e &+ 0x5A82_7999 &+ w[t]
                    e = d; d = c; c = b.rotl(30); b = a; a = temp
                }
                for t in 16..<20 {
                    let temp = a.rotl(5) &+ ((b & c) | (~b & d)) &+ e &+ 0x5A82_7999 &+ schedule(t)
                    e = d; d = c; c = b.rotl(30); b = a; a = temp
                }
                for t in 20..<40 {
                    let temp = a.rotl(5) &+ (b ^ c ^ d) &+ e &+ 0x6ED9_EBA1 &+ schedule(t)
                    e = d; d = c; c = b.rotl(30); b = a; a = temp
                }
                for t in 40..<60 {
                    let temp = a.rotl(5) &+ ((b & c) | (d & (b | c))) &+ e &+ 0x8F1B_BCDC &+ schedule(t)
                    e = d; d = c; c = b.rotl(30); b = a; a = temp
                }
                for t in 60..<80 {
                    let temp = a.rotl(5) &+ (b ^ c ^ d) &+ e &+ 0xCA62_C1D6 &+ schedule(t)
                    e = d; d = c; c = b.rotl(30); b = a; a = temp
                }
                a0 &+= a
                b0 &+= b
                c0 &+= c
                d0 &+= d
                e0 &+= e
                blockStart &+= 64
            }
        }
        h0 = a0; h1 = b0; h2 = c0; h3 = d0; h4 = e0
    }
}

extension UInt32 {
    @inline(__always)
    fileprivate func rotl(_ n: UInt32) -> UInt32 { (self << n) | (self >> (32 - n)) }
}
