/// A semantic version as `sem_ver` reads it (docs/definitions.md, "Custom operators"): an optional
/// leading `v`/`V`, missing minor and patch filled with `0` (`"1"` → `1.0.0`, `"1.2"` →
/// `1.2.0`), then strict SemVer 2.0.0 (no leading zeros, ASCII identifiers). Numeric parts of
/// any length compare exactly; build metadata is ignored in comparisons.
struct SemanticVersion: Sendable, Comparable {
    /// Major, minor and patch as decimal digits without leading zeros.
    let major: Substring, minor: Substring, patch: Substring
    /// Pre-release identifiers (empty when none).
    let prerelease: [Substring]

    /// Major, minor and patch in order.
    var core: [Substring] { [major, minor, patch] }

    /// The longest version text accepted.
    static let maxLength = 255

    /// Parses `text`, or nil when it is not a version. One pass over the bytes: a rule's
    /// `sem_ver` parses the context's version at every evaluation, so nothing is allocated
    /// unless the version has pre-release identifiers.
    init?(_ text: String) {
        var version = Substring(text)
        if let first = version.utf8.first, first == UInt8(ascii: "v") || first == UInt8(ascii: "V") {
            version = version.dropFirst()
        }
        let bytes = version.utf8
        guard bytes.count <= Self.maxLength, bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
        // The core ends at the first "-" or "+"; the pre-release runs from a "-" before any
        // "+" to the "+"; the build metadata from the first "+" to the end.
        let plus = bytes.firstIndex(of: UInt8(ascii: "+"))
        let head = version[..<(plus ?? version.endIndex)]
        let dash = head.utf8.firstIndex(of: UInt8(ascii: "-"))
        let numeric = head[..<(dash ?? head.endIndex)]
        // Up to three dot-separated parts; a missing minor or patch is "0" ("1" is 1.0.0).
        var parts: (Substring, Substring, Substring) = ("0", "0", "0")
        var count = 0
        var partStart = numeric.startIndex
        var index = numeric.startIndex
        while true {
            let atEnd = index == numeric.endIndex
            if atEnd || numeric.utf8[index] == UInt8(ascii: ".") {
                let part = numeric[partStart..<index]
                switch count {
                case 0: parts.0 = part
                case 1: parts.1 = part
                case 2: parts.2 = part
                default: return nil
                }
                count += 1
                if atEnd { break }
                partStart = numeric.utf8.index(after: index)
            }
            index = numeric.utf8.index(after: index)
        }
        guard Self.isNumericIdentifier(parts.0), Self.isNumericIdentifier(parts.1), Self.isNumericIdentifier(parts.2)
        else { return nil }
        (major, minor, patch) = parts
        if let dash {
            let identifiers = head[head.utf8.index(after: dash)...].split(
                separator: ".", omittingEmptySubsequences: false)
            guard identifiers.allSatisfy(Self.isPrereleaseIdentifier) else { return nil }
            prerelease = identifiers
        } else {
            prerelease = []
        }
        if let plus {
            let build = version[version.utf8.index(after: plus)...]
            var identifierLength = 0
            for byte in build.utf8 {
                if byte == UInt8(ascii: ".") {
                    guard identifierLength > 0 else { return nil }
                    identifierLength = 0
                } else {
                    guard Self.isIdentifierByte(byte) else { return nil }
                    identifierLength += 1
                }
            }
            guard identifierLength > 0 else { return nil }
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
        var c = compareNumeric(a.major, b.major)
        if c != 0 { return c }
        c = compareNumeric(a.minor, b.minor)
        if c != 0 { return c }
        c = compareNumeric(a.patch, b.patch)
        if c != 0 { return c }
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
                let order = compareNumeric(x, y)
                if order != 0 { return order }
            case (false, false):
                if x != y { return x.utf8.lexicographicallyPrecedes(y.utf8) ? -1 : 1 }
            }
        }
        if a.prerelease.count == b.prerelease.count { return 0 }
        return a.prerelease.count < b.prerelease.count ? -1 : 1
    }

    static func < (a: SemanticVersion, b: SemanticVersion) -> Bool { order(a, b) < 0 }
    static func == (a: SemanticVersion, b: SemanticVersion) -> Bool { order(a, b) == 0 }

    /// Major, minor and patch as integers.
    typealias Core = (major: UInt64, minor: UInt64, patch: UInt64)

    /// The core as integers when each part has at most 18 digits (nil otherwise).
    var integerCore: Core? {
        func integer(_ part: Substring) -> UInt64? {
            part.utf8.count <= 18 ? part.utf8.reduce(0) { $0 &* 10 &+ UInt64($1 &- 48) } : nil
        }
        guard let major = integer(major), let minor = integer(minor), let patch = integer(patch) else { return nil }
        return (major, minor, patch)
    }

    /// `text` when it is a plain version — an optional leading `v`/`V`, then one to three
    /// dot-separated parts of digits, each a numeric identifier (no leading zero) of at most 18
    /// digits, nothing else — as its core (missing parts 0); else nil, which says nothing:
    /// ``init(_:)`` then reads it in full (a pre-release, build metadata, long parts, or not a
    /// version). One pass over the bytes, nothing allocated: the path of a context's version
    /// in ``LogicNode/semVer(_:_:_:)``.
    static func plainCore(_ text: String) -> Core? {
        var parts: Core = (0, 0, 0)
        var part = 0
        var value: UInt64 = 0
        var digits = 0
        var first = true
        for byte in text.utf8 {
            if first {
                first = false
                if byte == UInt8(ascii: "v") || byte == UInt8(ascii: "V") { continue }
            }
            if byte >= 48 && byte <= 57 {
                // A leading zero, or more than 18 digits: the full reading decides.
                if digits == 18 || (digits == 1 && value == 0) { return nil }
                value = value &* 10 &+ UInt64(byte &- 48)
                digits += 1
            } else if byte == UInt8(ascii: ".") {
                guard digits > 0, part < 2 else { return nil }
                if part == 0 { parts.major = value } else { parts.minor = value }
                part += 1
                value = 0
                digits = 0
            } else {
                return nil
            }
        }
        guard digits > 0 else { return nil }
        switch part {
        case 0: parts.major = value
        case 1: parts.minor = value
        default: parts.patch = value
        }
        return parts
    }
}

/// The constant second version of a compiled `sem_ver` (``LogicNode/semVer(_:_:_:)``): parsed
/// once, with its core as integers when it fits, so that a plain context version
/// (``SemanticVersion/plainCore(_:)``) is compared as three integers.
struct SemanticVersionOperand: Sendable {
    let version: SemanticVersion
    /// ``SemanticVersion/integerCore`` of ``version``.
    let core: SemanticVersion.Core?
    /// ``version`` has pre-release identifiers.
    let hasPrerelease: Bool

    init(_ version: SemanticVersion) {
        self.version = version
        core = version.integerCore
        hasPrerelease = !version.prerelease.isEmpty
    }

    /// Whether `left op version` holds for a version read as ``SemanticVersion/plainCore(_:)``
    /// (no pre-release, no build metadata), or nil when ``core`` is nil. The same answer as
    /// ``SemanticVersionOperator/holds(_:_:)``: parts without leading zeros order as their
    /// values, and a version without pre-release is above one with the same core.
    @inline(__always)
    func holds(_ left: SemanticVersion.Core, _ op: SemanticVersionOperator) -> Bool? {
        guard let right = core else { return nil }
        var order: Int
        if left.major != right.major {
            order = left.major < right.major ? -1 : 1
        } else if left.minor != right.minor {
            order = left.minor < right.minor ? -1 : 1
        } else if left.patch != right.patch {
            order = left.patch < right.patch ? -1 : 1
        } else {
            order = hasPrerelease ? 1 : 0
        }
        switch op {
        case .equal: return order == 0
        case .notEqual: return order != 0
        case .less: return order < 0
        case .lessOrEqual: return order <= 0
        case .greater: return order > 0
        case .greaterOrEqual: return order >= 0
        case .sameMajor: return left.major == right.major
        case .sameMinor: return left.major == right.major && left.minor == right.minor
        }
    }
}
