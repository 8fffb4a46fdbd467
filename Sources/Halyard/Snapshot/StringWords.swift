/// A `String`'s two words, read as the standard library lays them out on 64-bit little-endian
/// platforms, for the flag table's keyed lookups (``FlagTable/index(of:)``):
///
/// - **small** (up to 15 UTF-8 bytes, stored inline): the bytes in order in the first 15
///   bytes, zero-padded, and the top byte of the second word holding the count and the flags
///   `0b1x1` (the middle one set for ASCII). The words with the top nibble masked off are a
///   function of the bytes and the count, and different contents differ in them.
/// - **literal** (an immortal, tail-allocated string that is not natively stored: a string
///   literal longer than 15 bytes, whose bytes are in the binary's constant data): the first
///   word is the count and flags, the second the discriminator `0x8` over the bytes' address
///   minus 32. The bytes at that address never change and are never freed, so one address and
///   one count are one content for the life of the process.
/// - **tail-allocated** (native or literal): the bytes are at the second word's address plus
///   32, the count in the first word's low 48 bits.
///
/// The layout is the standard library's, not API: ``available`` checks it once against strings
/// whose bytes and addresses are known, and where it does not hold (another platform, another
/// toolchain) the flag table reads every key's bytes instead.
enum StringWords {
    /// Masks a small string's second word down to its bytes and count (drops the flags).
    static let smallMask: UInt64 = 0x0FFF_FFFF_FFFF_FFFF
    /// A large string's count, in its first word.
    static let countMask: UInt64 = 0x0000_FFFF_FFFF_FFFF
    /// The bias between a tail-allocated string's address word and its first byte.
    static let bias: UInt64 = 32

    /// The two words of `s` (zero where the layout is not read).
    @inline(__always)
    static func raw(_ s: String) -> (UInt64, UInt64) {
        #if (arch(x86_64) || arch(arm64)) && _endian(little)
            return unsafeBitCast(s, to: (UInt64, UInt64).self)
        #else
            return (0, 0)
        #endif
    }

    /// Whether the second word is a small string's.
    @inline(__always)
    static func isSmall(_ w1: UInt64) -> Bool { w1 & (1 << 61) != 0 }

    /// Whether the words are an immortal, tail-allocated, not natively stored large string's:
    /// a literal in constant data.
    @inline(__always)
    static func isLiteral(_ w0: UInt64, _ w1: UInt64) -> Bool {
        w1 >> 60 == 0x8 && (w0 >> 60) & 0x3 == 0x1
    }

    /// Whether the words are a tail-allocated large string's (native or literal): not small,
    /// not bridged, not foreign, and the tail-allocated flag set.
    @inline(__always)
    static func isTailAllocated(_ w0: UInt64, _ w1: UInt64) -> Bool {
        w1 & (0x7 << 60) == 0 && w0 & (1 << 60) != 0
    }

    /// Whether a tail-allocated string's words are an immortal one's: a literal (a native
    /// string is never immortal, and a literal is never natively stored).
    @inline(__always)
    static func isImmortal(_ w1: UInt64) -> Bool { w1 >> 63 != 0 }

    /// A tail-allocated string's first byte (valid while the string is).
    @inline(__always)
    static func bytes(_ w1: UInt64) -> UnsafeRawPointer? {
        UnsafeRawPointer(bitPattern: UInt(truncatingIfNeeded: (w1 & smallMask) &+ bias))
    }

    /// A tail-allocated large string's bytes (native or literal), or nil for any other form.
    /// Valid while `s` is.
    @inline(__always)
    static func tailAllocatedBytes(_ s: String) -> (UnsafeRawPointer, Int)? {
        let (w0, w1) = raw(s)
        guard w1 & (0x7 << 60) == 0, w0 & (1 << 60) != 0,
            let base = UnsafeRawPointer(bitPattern: UInt(truncatingIfNeeded: (w1 & smallMask) &+ bias))
        else { return nil }
        return (base, Int(truncatingIfNeeded: w0 & countMask))
    }

    /// Whether this toolchain lays strings out as described: checked on an empty, an ASCII, a
    /// non-ASCII and a 15-byte small string, a 16-byte heap string (never small), and a literal
    /// and a heap copy of it (the address each form yields against its own UTF-8 view).
    static let available: Bool = {
        #if (arch(x86_64) || arch(arm64)) && _endian(little)
            func small(_ s: String) -> (UInt64, UInt64)? {
                let w = raw(s)
                return isSmall(w.1) ? (w.0, w.1) : nil
            }
            guard small(String(repeating: "x", count: 16)) == nil, let empty = small(""), let ab = small("ab"),
                let e = small("\u{E9}"), let fifteen = small("abcdefghijklmno"),
                empty == (0, 0xE0 << 56), ab == (0x6261, 0xE2 << 56), e == (0xA9C3, 0xA2 << 56),
                fifteen == (0x6867_6665_6463_6261, 0xEF6F_6E6D_6C6B_6A69)
            else { return false }
            let literal = "halyard.string-words.layout-check"
            let native = String(decoding: Array(literal.utf8), as: UTF8.self)
            return withExtendedLifetime(native) { () -> Bool in
                func addressMatches(_ s: String) -> Bool {
                    guard let (base, count) = tailAllocatedBytes(s),
                        let view = s.utf8.withContiguousStorageIfAvailable({ UnsafeRawPointer($0.baseAddress) })
                    else { return false }
                    return view == base && count == s.utf8.count
                }
                let l = raw(literal)
                let n = raw(native)
                return isLiteral(l.0, l.1) && !isSmall(l.1) && addressMatches(literal) && !isLiteral(n.0, n.1)
                    && !isSmall(n.1) && addressMatches(native) && isTailAllocated(l.0, l.1) && isImmortal(l.1)
                    && isTailAllocated(n.0, n.1) && !isImmortal(n.1)
            }
        #else
            return false
        #endif
    }()
}
