/// A semantic version as `sem_ver` reads it (docs/definitions.md, "Custom operators"): an optional
/// leading `v`/`V`, missing minor and patch filled with `0` (`"1"` → `1.0.0`, `"1.2"` →
/// `1.2.0`), then strict SemVer 2.0.0 (no leading zeros, ASCII identifiers). Numeric parts of
/// any length compare exactly; build metadata is ignored in comparisons.
struct SemanticVersion: Sendable, Comparable {
    /// Major, minor and patch as decimal digits without leading zeros.
    let core: [Substring]
    /// Pre-release identifiers (empty when none).
    let prerelease: [Substring]

    /// The longest version text accepted.
    static let maxLength = 255

    /// Parses `text`, or nil when it is not a version.
    init?(_ text: String) {
        var version = Substring(text)
        if let first = version.first, first == "v" || first == "V" { version = version.dropFirst() }
        guard version.utf8.count <= Self.maxLength, version.utf8.allSatisfy({ $0 < 0x80 }) else { return nil }
        // Pad a partial core: the part before the first "-" then before the first "+".
        let beforeDash = version.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)[0]
        let numeric = beforeDash.split(separator: "+", maxSplits: 1, omittingEmptySubsequences: false)[0]
        let dots = numeric.filter { $0 == "." }.count
        if dots < 2 {
            version = Substring(
                String(numeric) + String(repeating: ".0", count: 2 - dots) + version[numeric.endIndex...])
        }
        var rest = version
        var build: Substring?
        if let plus = rest.firstIndex(of: "+") {
            build = rest[rest.index(after: plus)...]
            rest = rest[..<plus]
        }
        var pre: Substring?
        if let dash = rest.firstIndex(of: "-") {
            pre = rest[rest.index(after: dash)...]
            rest = rest[..<dash]
        }
        let parts = rest.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy(Self.isNumericIdentifier) else { return nil }
        core = parts
        if let pre {
            let identifiers = pre.split(separator: ".", omittingEmptySubsequences: false)
            guard identifiers.allSatisfy(Self.isPrereleaseIdentifier) else { return nil }
            prerelease = identifiers
        } else {
            prerelease = []
        }
        if let build {
            let identifiers = build.split(separator: ".", omittingEmptySubsequences: false)
            guard identifiers.allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy(Self.isIdentifierByte) }) else {
                return nil
            }
        }
    }

    private static func isDigit(_ b: UInt8) -> Bool { b >= 48 && b <= 57 }

    private static func isIdentifierByte(_ b: UInt8) -> Bool {
        isDigit(b) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122) || b == UInt8(ascii: "-")
    }

    /// `0` or a digit string without a leading zero.
    private static func isNumericIdentifier(_ s: Substring) -> Bool {
        guard let first = s.utf8.first, s.utf8.allSatisfy(isDigit) else { return false }
        return first != UInt8(ascii: "0") || s.utf8.count == 1
    }

    /// A numeric identifier, or alphanumerics and hyphens with at least one non-digit.
    private static func isPrereleaseIdentifier(_ s: Substring) -> Bool {
        guard !s.isEmpty, s.utf8.allSatisfy(isIdentifierByte) else { return false }
        return !s.utf8.allSatisfy(isDigit) || isNumericIdentifier(s)
    }

    /// Orders two digit strings without leading zeros by value.
    private static func compareNumeric(_ a: Substring, _ b: Substring) -> Int {
        if a.utf8.count != b.utf8.count { return a.utf8.count < b.utf8.count ? -1 : 1 }
        if a == b { return 0 }
        return a.utf8.lexicographicallyPrecedes(b.utf8) ? -1 : 1
    }

    /// SemVer precedence: core, then a version without pre-release above one with, then
    /// identifiers (numeric below alphanumeric, numerics by value, others by ASCII), then count.
    static func order(_ a: SemanticVersion, _ b: SemanticVersion) -> Int {
        for (x, y) in zip(a.core, b.core) {
            let c = compareNumeric(x, y)
            if c != 0 { return c }
        }
        if a.prerelease == b.prerelease { return 0 }
        if a.prerelease.isEmpty { return 1 }
        if b.prerelease.isEmpty { return -1 }
        for (x, y) in zip(a.prerelease, b.prerelease) {
            let xNumeric = x.utf8.allSatisfy(isDigit)
            let yNumeric = y.utf8.allSatisfy(isDigit)
            switch (xNumeric, yNumeric) {
            case (true, false): return -1
            case (false, true): return 1
            case (true, true):
                let c = compareNumeric(x, y)
                if c != 0 { return c }
            case (false, false):
                if x != y { return x.utf8.lexicographicallyPrecedes(y.utf8) ? -1 : 1 }
            }
        }
        if a.prerelease.count == b.prerelease.count { return 0 }
        return a.prerelease.count < b.prerelease.count ? -1 : 1
    }

    static func < (a: SemanticVersion, b: SemanticVersion) -> Bool { order(a, b) < 0 }
    static func == (a: SemanticVersion, b: SemanticVersion) -> Bool { order(a, b) == 0 }
}
