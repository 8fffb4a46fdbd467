import Foundation

/// The switch over Halyard's layout reads: the places where it reads the standard library's
/// private layouts rather than public API (a `String`'s two words, ``StringLayout``; a
/// dictionary's storage walked in place, ``AttributeBuckets``; a `JSONValue`'s tag byte,
/// ``JSONValueLayout``). docs/architecture.md, "Layout reads", says what each assumes, where it
/// holds and what runs where it does not.
///
/// Each read has a fallback through public API that answers the same (only more slowly), and
/// runs where:
/// - the build is not 64-bit little-endian (32-bit watchOS, i386, big-endian): compiled out;
/// - the package is built with `-D HALYARD_NO_LAYOUT_READS` (`swift build -Xswiftc
///   -DHALYARD_NO_LAYOUT_READS`): compiled out;
/// - the process starts with `HALYARD_LAYOUT_READS=off` (or `0`, `false`, `no`): switched off,
///   read once, at the first read of the switch;
/// - a layout's own check, run once against values whose layout is known, fails (another
///   toolchain, another platform).
enum LayoutReads {
    /// Whether this build may read layouts: 64-bit little-endian and not compiled with
    /// `HALYARD_NO_LAYOUT_READS`.
    static let compiledIn: Bool = {
        #if HALYARD_NO_LAYOUT_READS
            return false
        #elseif (arch(x86_64) || arch(arm64)) && _endian(little)
            return true
        #else
            return false
        #endif
    }()

    /// Whether layout reads are on for this process: compiled in and not switched off by the
    /// environment. Each layout's `available` also requires its own check to pass.
    static let enabled: Bool = compiledIn && !switchedOff(ProcessInfo.processInfo.environment["HALYARD_LAYOUT_READS"])

    /// Whether a value of `HALYARD_LAYOUT_READS` turns the reads off: `off`, `0`, `false` or `no`
    /// (any case, surrounding spaces ignored); anything else, or no value, leaves them on.
    static func switchedOff(_ value: String?) -> Bool {
        guard let value else { return false }
        let word = value.trimmingCharacters(in: .whitespaces).lowercased()
        return ["off", "0", "false", "no"].contains(word)
    }
}
