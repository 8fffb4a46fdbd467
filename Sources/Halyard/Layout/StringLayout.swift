import CHalyardAtomics

/// A `String`'s two words, read as the standard library lays them out on 64-bit little-endian
/// platforms: the one home of that layout, for the flag table's keyed lookups
/// (``FlagTable/index(of:)``), the client's keyed-read table (``KeyedReadCache``) and the
/// service memo's encoder (``ContextEncoder``).
///
/// **What is assumed** (the standard library's `_StringObject`, not API):
/// - **small** (up to 15 UTF-8 bytes, stored inline): the bytes in order in the first 15
///   bytes, zero-padded, and the top byte of the second word holding the count and the flags
///   `0b1x1` (the middle one set for ASCII). The words with the top nibble masked off are a
///   function of the bytes and the count, and different contents differ in them; equal
///   contents in the small form have equal words (the standard library compares them so).
/// - **literal** (immortal, tail-allocated, not natively stored: a string literal longer than
///   15 bytes): the first word is the count and flags, the second the discriminator `0x8` over
///   the bytes' address minus 32. Bits alone do not say where the bytes live: a literal is
///   taken as one only when its bytes lie in a loaded image's read-only segment
///   (``isLiteralInImage(_:_:)``, `hal_image_readonly_contains`), where they never change and
///   are never freed, so one address and one count are one content for the life of the
///   process. Any other immortal string reads as a heap key, by its bytes.
/// - A native heap string's bytes are never read through its words: public API
///   (`utf8.withContiguousStorageIfAvailable`) gives the same pointer.
///
/// **Where it holds**: checked once (``available``) against strings whose bytes and addresses
/// are known: an empty, an ASCII, a non-ASCII and a 15-byte small string, a 16-byte heap string
/// (never small), a literal and a heap copy of it. **Where it does not** (a 32-bit or
/// big-endian build, another toolchain, ``LayoutReads`` switched off): ``available`` is false,
/// ``words(_:)`` may still be called (it is a bit cast, or zeros where `String` is not two
/// 64-bit words) but nothing is added to a table by its words, and every key is read by its
/// bytes: the same answers, more slowly (docs/benchmarks.md shows both).
enum StringLayout {
    /// The bit of the second word set in the small form.
    static let smallBit: UInt64 = 1 << 61
    /// Masks a small string's second word down to its bytes and count (drops the flags).
    static let smallMask: UInt64 = 0x0FFF_FFFF_FFFF_FFFF
    /// A large string's count, in its first word.
    static let countMask: UInt64 = 0x0000_FFFF_FFFF_FFFF
    /// The bias between a tail-allocated string's address word and its first byte.
    private static let bias: UInt64 = 32

    /// The two words `s` is kept in, whatever its form (zeros where `String` is not two 64-bit
    /// little-endian words).
    @inline(__always)
    static func words(_ s: String) -> (UInt64, UInt64) {
        #if (arch(x86_64) || arch(arm64)) && _endian(little)
            return unsafeBitCast(s, to: (UInt64, UInt64).self)
        #else
            return (0, 0)
        #endif
    }

    /// The two words of `s` when it is in the small form, else `nil`.
    @inline(__always)
    static func smallWords(_ s: String) -> (UInt64, UInt64)? {
        let w = words(s)
        return isSmall(w.1) ? w : nil
    }

    /// Whether the second word is a small string's.
    @inline(__always)
    static func isSmall(_ w1: UInt64) -> Bool { w1 & smallBit != 0 }

    /// Whether the words may have an answer in a keyed table: any form but a native heap
    /// string's (discriminator 0 in the second word's top nibble), which never enters one.
    @inline(__always)
    static func mayBeKeyed(_ w1: UInt64) -> Bool { w1 >> 60 != 0 }

    /// Whether the words are an immortal, tail-allocated, not natively stored large string's:
    /// a literal's form. Where its bytes are is not checked here (``isLiteralInImage(_:_:)``).
    @inline(__always)
    static func isLiteral(_ w0: UInt64, _ w1: UInt64) -> Bool {
        w1 >> 60 == 0x8 && (w0 >> 60) & 0x3 == 0x1
    }

    /// Whether a tail-allocated string's words are an immortal one's (the literal form: a
    /// native string is never immortal).
    @inline(__always)
    static func isImmortal(_ w1: UInt64) -> Bool { w1 >> 63 != 0 }

    /// Whether the words are a tail-allocated large string's (native or literal): not small,
    /// not bridged, not foreign, and the tail-allocated flag set.
    @inline(__always)
    static func isTailAllocated(_ w0: UInt64, _ w1: UInt64) -> Bool {
        w1 & (0x7 << 60) == 0 && w0 & (1 << 60) != 0
    }

    /// Whether the words are a literal's (``isLiteral(_:_:)``) whose bytes lie in a loaded
    /// image's read-only segment: then, and only then, its address and count name one content
    /// for the life of the process. Takes a lock and may walk the loaded images: call it when a
    /// key first enters a table, never per read.
    @inline(never)
    static func isLiteralInImage(_ w0: UInt64, _ w1: UInt64) -> Bool {
        guard isLiteral(w0, w1), let base = literalBytes(w1) else { return false }
        return hal_image_readonly_contains(base, Int(truncatingIfNeeded: w0 & countMask))
    }

    /// A literal's first byte: its address word plus the bias. Read only to check where the
    /// bytes lie and, in ``available``'s check, against the public view.
    @inline(__always)
    private static func literalBytes(_ w1: UInt64) -> UnsafeRawPointer? {
        UnsafeRawPointer(bitPattern: UInt(truncatingIfNeeded: (w1 & smallMask) &+ bias))
    }

    /// Whether the layout reads of strings are on: ``LayoutReads/enabled`` and this toolchain
    /// lays strings out as described, checked on an empty, an ASCII, a non-ASCII and a 15-byte
    /// small string, a 16-byte heap string (never small), and a literal (in the image's constant
    /// data, its address the one its UTF-8 view gives) and a heap copy of it (neither small nor
    /// literal).
    static let available: Bool = {
        guard LayoutReads.enabled else { return false }
        guard smallWords(String(repeating: "x", count: 16)) == nil, let empty = smallWords(""),
            let ab = smallWords("ab"), let e = smallWords("\u{E9}"), let fifteen = smallWords("abcdefghijklmno"),
            empty == (0, 0xE0 << 56), ab == (0x6261, 0xE2 << 56), e == (0xA9C3, 0xA2 << 56),
            fifteen == (0x6867_6665_6463_6261, 0xEF6F_6E6D_6C6B_6A69)
        else { return false }
        let literal = "halyard.string-layout.check"
        let native = String(decoding: Array(literal.utf8), as: UTF8.self)
        return withExtendedLifetime(native) { () -> Bool in
            let l = words(literal)
            let n = words(native)
            let view = literal.utf8.withContiguousStorageIfAvailable { UnsafeRawPointer($0.baseAddress) }
            return isLiteral(l.0, l.1) && isTailAllocated(l.0, l.1) && isImmortal(l.1) && !isSmall(l.1)
                && Int(truncatingIfNeeded: l.0 & countMask) == literal.utf8.count && view == literalBytes(l.1)
                && isLiteralInImage(l.0, l.1) && !isLiteral(n.0, n.1) && !isSmall(n.1) && !isImmortal(n.1)
                && isTailAllocated(n.0, n.1) && !mayBeKeyed(n.1)
        }
    }()
}
