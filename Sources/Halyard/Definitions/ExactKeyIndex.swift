import Foundation

/// A fixed set of strings, each given a slot (its position in the array it was built from),
/// looked up by exact UTF-8 bytes as flagd compares names (not by Swift's canonical
/// equivalence). Built once per definitions document (flag keys) and per flag (variant names),
/// so that an evaluation finds a flag or a variant without `String` hashing.
///
/// Why not `[String: Int]`: a dictionary read hashes the key with SipHash-1-3 through
/// `Hasher` (~250 instructions for a 10-byte key, measured with callgrind), then compares
/// with `==` and then again byte for byte. Here the key's UTF-8 is read in place and hashed
/// eight bytes at a time with a multiply-xorshift mix (~30 instructions for short keys), the
/// table is open addressing with linear probing at most half full, and a candidate is
/// confirmed by its full 64-bit hash, its length and one `memcmp`. The whole lookup is ~135
/// instructions for the benchmark's 9-byte keys, against ~450 for a `[String: JSONValue]` read
/// of them (docs/benchmarks-definitions.md, "Instruction counts").
///
/// The mix is seeded per process but is not a keyed cryptographic hash: the strings indexed
/// are the definitions' own (whoever writes them controls the flags anyway), and a collision
/// costs a probe step, never a wrong answer.
///
/// A class holding three buffers it frees in `deinit` (immutable after `init`, hence
/// `@unchecked Sendable`): a lookup reads plain memory, with no array retained or
/// bounds-checked per probe.
final class ExactKeyIndex: @unchecked Sendable {
    /// Per slot: its key's hash, and where its UTF-8 is in ``bytes`` (start, count).
    private struct Entry {
        let hash: UInt64
        let start: Int
        let count: Int
    }

    /// The keys' UTF-8, one after the other.
    private let bytes: UnsafeMutablePointer<UInt8>
    /// Per slot (``count`` of them).
    private let entries: UnsafeMutablePointer<Entry>
    /// Open addressing: slot + 1, or 0 for empty; `mask + 1` of them (a power of two, at
    /// least twice the keys, so a probe ends at an empty one).
    private let table: UnsafeMutablePointer<Int32>
    private let mask: Int
    private let seed: UInt64
    /// The number of keys.
    let count: Int
    /// This index's serial number (``KeyTableSerial``): what a ``FlagKey`` resolved against it
    /// remembers.
    let serial: UInt

    /// The seed of every index of this process.
    private static let processSeed = UInt64.random(in: 0 ... .max)

    /// An index of `keys`: `slot(of: keys[i]) == i`. Keys must be distinct byte for byte (a
    /// later duplicate is unreachable).
    init(_ keys: [String]) {
        seed = Self.processSeed
        count = keys.count
        serial = KeyTableSerial.next()
        let utf8 = keys.map { Array($0.utf8) }
        let total = utf8.reduce(0) { $0 + $1.count }
        bytes = .allocate(capacity: max(1, total))
        entries = .allocate(capacity: max(1, keys.count))
        var size = 4
        while size < keys.count * 2 { size <<= 1 }
        table = .allocate(capacity: size)
        table.initialize(repeating: 0, count: size)
        mask = size - 1
        var start = 0
        for (slot, key) in utf8.enumerated() {
            key.withUnsafeBufferPointer { source in
                if let base = source.baseAddress { (bytes + start).initialize(from: base, count: source.count) }
            }
            let hash = Self.hash(UnsafeRawBufferPointer(start: bytes + start, count: key.count), seed: seed)
            (entries + slot).initialize(to: Entry(hash: hash, start: start, count: key.count))
            start += key.count
            var position = Int(truncatingIfNeeded: hash) & mask
            while table[position] != 0 { position = (position + 1) & mask }
            table[position] = Int32(slot + 1)
        }
    }

    deinit {
        bytes.deallocate()
        entries.deallocate()
        table.deallocate()
    }

    /// The slot of `key` (byte-exact), or nil.
    @inline(__always)
    func slot(of key: String) -> Int? {
        if let found = key.utf8.withContiguousStorageIfAvailable({ slot(of: UnsafeRawBufferPointer($0)) }) {
            return found
        }
        // A bridged string without contiguous UTF-8 (not on Linux): copy it once.
        return Array(key.utf8).withUnsafeBytes { slot(of: $0) }
    }

    /// The slot of the key whose UTF-8 is `key`, or nil.
    func slot(of key: UnsafeRawBufferPointer) -> Int? {
        let hash = Self.hash(key, seed: seed)
        var position = Int(truncatingIfNeeded: hash) & mask
        while true {
            let stored = Int(table[position])
            if stored == 0 { return nil }
            let entry = entries[stored - 1]
            if entry.hash == hash, entry.count == key.count,
                entry.count == 0 || memcmp(bytes + entry.start, key.baseAddress!, entry.count) == 0
            {
                return stored - 1
            }
            position = (position + 1) & mask
        }
    }

    /// The 64-bit mix of `bytes` with `seed`: eight bytes at a time; a tail of 8 bytes or
    /// more is read as the last (overlapping) word, a shorter key as at most two 4-byte reads.
    @inline(__always)
    static func hash(_ bytes: UnsafeRawBufferPointer, seed: UInt64) -> UInt64 {
        let count = bytes.count
        var h = seed ^ (UInt64(truncatingIfNeeded: count) &* 0x9E37_79B9_7F4A_7C15)
        guard let base = bytes.baseAddress, count > 0 else { return finish(h) }
        if count >= 8 {
            var offset = 0
            while offset &+ 8 <= count {
                h = mix(h, base.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                offset &+= 8
            }
            if offset < count { h = mix(h, base.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self)) }
        } else if count >= 4 {
            let low = UInt64(base.loadUnaligned(as: UInt32.self))
            let high = UInt64(base.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self))
            h = mix(h, low | high << 32)
        } else {
            var tail = UInt64(base.load(as: UInt8.self))
            if count > 1 { tail |= UInt64(base.load(fromByteOffset: 1, as: UInt8.self)) << 8 }
            if count > 2 { tail |= UInt64(base.load(fromByteOffset: 2, as: UInt8.self)) << 16 }
            h = mix(h, tail)
        }
        return finish(h)
    }

    @inline(__always)
    private static func mix(_ h: UInt64, _ word: UInt64) -> UInt64 {
        let m = (h ^ word) &* 0xBF58_476D_1CE4_E5B9
        return m ^ (m >> 31)
    }

    @inline(__always)
    private static func finish(_ h: UInt64) -> UInt64 {
        let m = (h ^ (h >> 29)) &* 0x94D0_49BB_1331_11EB
        return m ^ (m >> 32)
    }
}
