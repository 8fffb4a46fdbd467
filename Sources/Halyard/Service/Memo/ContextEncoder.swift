import Foundation

/// Writes the binary form of a context into a fixed buffer; past its end it only counts (the
/// caller then retries with a buffer of ``count`` bytes).
struct ContextEncoder {
    let base: UnsafeMutableRawPointer
    let capacity: Int
    /// The memo's hash words, and whether small strings are written as their words
    /// (``FittingMemo/HashKeys/smallStrings``).
    let keys: FittingMemo.HashKeys
    var count = 0
    /// The hash of what was written since the last ``startHash()``, mixed in as it is written:
    /// a multiply per word or tag, one per small string (its two words together), and a keyed
    /// hash of a long string's bytes. A function of the bytes written, since the encoding is
    /// unambiguous (equal bytes are written by equal calls); it reads nothing back.
    var hash: UInt64 = 0

    /// The top byte of a length word: `0xFF`, which no UTF-8 byte is, so a length word never
    /// reads as the first word of a small string (whose eighth byte is a UTF-8 byte or zero).
    static let lengthMark: UInt64 = 0xFF << 56

    var overflowed: Bool { count > capacity }

    @inline(__always)
    mutating func startHash() { hash = keys.k0 }

    @inline(__always)
    mutating func mix(_ a: UInt64, _ b: UInt64) { hash = fold(hash ^ a ^ keys.k1, b ^ keys.k2) }

    /// A word; `tag`, when the word is a value's payload, is its tag (written by
    /// ``tag(_:)``), mixed in with the word: one multiply for both.
    @inline(__always)
    mutating func word(_ w: UInt64, tag: UInt8 = 0) {
        if count &+ 8 <= capacity { base.storeBytes(of: w, toByteOffset: count, as: UInt64.self) }
        count &+= 8
        mix(w, UInt64(tag))
    }

    /// A value's tag byte, not mixed in: the payload written next mixes it in with its first
    /// word (``word(_:tag:)``, ``string(_:tag:)``), so a scalar costs one multiply, not two.
    @inline(__always)
    mutating func tag(_ b: UInt8) {
        if count < capacity { base.storeBytes(of: b, toByteOffset: count, as: UInt8.self) }
        count &+= 1
    }

    @inline(__always)
    mutating func byte(_ b: UInt8) {
        if count < capacity { base.storeBytes(of: b, toByteOffset: count, as: UInt8.self) }
        count &+= 1
        mix(UInt64(b), 0)
    }

    @inline(__always)
    mutating func bytes(_ p: UnsafeRawBufferPointer) {
        // Nothing written, nothing mixed: an empty buffer (whose base may or may not be nil)
        // leaves the hash as its length word made it.
        guard p.count > 0, let from = p.baseAddress else { return }
        if count &+ p.count <= capacity { (base + count).copyMemory(from: from, byteCount: p.count) }
        count &+= p.count
        mix(keys.hash(from, p.count), 0)
    }

    /// A string: in the small form its two words (``StringLayout``), otherwise its UTF-8
    /// length (marked with ``lengthMark``), then its bytes. `tag`, when the string is a value,
    /// is its tag (written by ``tag(_:)``), mixed in with the string.
    @inline(__always)
    mutating func string(_ s: String, tag: UInt8 = 0) {
        let (w0, w1) = StringLayout.words(s)
        if smallString(w0, w1, tag: tag) { return }
        if tag != 0 { mix(UInt64(tag), 0) }
        longString(s)
    }

    /// ``string(_:tag:)`` of the `String` at `p`, read in place: its two words, and the
    /// `String` itself only when it is not in the small form (no retain of a small string).
    @inline(__always)
    mutating func string(at p: UnsafeRawPointer, tag: UInt8 = 0) {
        if smallString(p.load(as: UInt64.self), p.load(fromByteOffset: 8, as: UInt64.self), tag: tag) { return }
        if tag != 0 { mix(UInt64(tag), 0) }
        longString(p.assumingMemoryBound(to: String.self).pointee)
    }

    /// The two words `w0`, `w1` of a string when they are its small form (written, and mixed
    /// in with `tag`); false, with nothing written, for a string in any other form.
    @inline(__always)
    private mutating func smallString(_ w0: UInt64, _ w1: UInt64, tag: UInt8) -> Bool {
        guard w1 & keys.smallMask != 0 else { return false }
        if count &+ 16 <= capacity {
            base.storeBytes(of: w0, toByteOffset: count, as: UInt64.self)
            base.storeBytes(of: w1, toByteOffset: count &+ 8, as: UInt64.self)
        }
        count &+= 16
        mix(w0, w1 ^ UInt64(tag))
        return true
    }

    /// A record's value read in place when it is a Boolean, an integer, a double or a string in
    /// the small form: its code (1, 3, 4 or 5, the codes ``FittingMemo/record`` writes for
    /// them), then its payload word (a Boolean's as 0 or 1), and a string's second word,
    /// written and mixed in with no branch on the kind: a context's values come in its
    /// dictionary's order, so a `switch` over them (an indirect jump) was mispredicted value
    /// after value. False, having written nothing, for any other value. Reads the enum's tag
    /// byte and payload where ``JSONValueLayout/available`` checked them.
    @inline(__always)
    mutating func scalar(at p: UnsafeRawPointer) -> Bool {
        let t = p.load(fromByteOffset: JSONValueLayout.tagOffset, as: UInt8.self)
        let w0 = p.load(as: UInt64.self)
        let w1 = p.load(fromByteOffset: 8, as: UInt64.self)
        let isString = t == JSONValueLayout.stringTag
        // Bool, Int64 and Double are tags 0, 1 and 2; a string must be small.
        // One branch, taken only for the rare kinds: a branch on `t < stringTag` first was
        // taken or not by each value's kind, in the dictionary's order.
        let other: UInt64 = t > JSONValueLayout.stringTag ? 1 : 0
        let long: UInt64 = (isString ? 1 : 0) & (w1 & keys.smallMask == 0 ? 1 : 0)
        if other | long != 0 { return false }
        let code: UInt8 = t == JSONValueLayout.boolTag ? 1 : t &+ 2
        let a = t == JSONValueLayout.boolTag ? w0 & 1 : w0
        let b = isString ? w1 : 0
        if count &+ 17 <= capacity {
            base.storeBytes(of: code, toByteOffset: count, as: UInt8.self)
            base.storeBytes(of: a, toByteOffset: count &+ 1, as: UInt64.self)
            base.storeBytes(of: b, toByteOffset: count &+ 9, as: UInt64.self)
        } else if count &+ 9 <= capacity {
            // Near the buffer's end: a 9-byte value still fits (a string does not, and the
            // encoder overflows).
            base.storeBytes(of: code, toByteOffset: count, as: UInt8.self)
            base.storeBytes(of: a, toByteOffset: count &+ 1, as: UInt64.self)
        }
        count &+= isString ? 17 : 9
        mix(a, b ^ UInt64(code))
        return true
    }

    /// A string's UTF-8 length (marked with ``lengthMark``), then its bytes. Kept out of line:
    /// inlined, it made the optimizer outline ``string(_:)`` itself, a call and a retain for
    /// every small string (measured).
    @inline(never)
    mutating func longString(_ s: String) {
        let n = s.utf8.count
        word(UInt64(truncatingIfNeeded: n) | Self.lengthMark)
        if let done = s.utf8.withContiguousStorageIfAvailable({ bytes(UnsafeRawBufferPointer($0)) }) { return done }
        var copy = s
        copy.withUTF8 { bytes(UnsafeRawBufferPointer($0)) }
    }

    /// A value: a tag, then its payload (an object's members in the UTF-8 order of their names,
    /// so equal objects write the same bytes).
    mutating func value(_ v: JSONValue) {
        switch v {
        case .null: byte(0)
        case .bool(let b): byte(b ? 2 : 1)
        case .int(let i):
            byte(3)
            word(UInt64(bitPattern: i))
        case .double(let d):
            byte(4)
            word(d.bitPattern)
        case .string(let s):
            byte(5)
            string(s)
        case .array(let items):
            byte(6)
            word(UInt64(items.count))
            for item in items { value(item) }
        case .object(let members):
            byte(7)
            word(UInt64(members.count))
            for (name, member) in members.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
                string(name)
                value(member)
            }
        }
    }
}
