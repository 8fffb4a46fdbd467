/// A `sem_ver` comparison (docs/definitions.md, "Custom operators"): `=`, `!=`, `<`, `<=`, `>`,
/// `>=` by SemVer precedence, `^` (same major), `~` (same major and minor).
enum SemanticVersionOperator: String, Sendable {
    case equal = "="
    case notEqual = "!="
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="
    case sameMajor = "^"
    case sameMinor = "~"

    /// Whether `left op right` holds.
    func holds(_ left: SemanticVersion, _ right: SemanticVersion) -> Bool {
        switch self {
        case .equal: SemanticVersion.order(left, right) == 0
        case .notEqual: SemanticVersion.order(left, right) != 0
        case .less: SemanticVersion.order(left, right) < 0
        case .lessOrEqual: SemanticVersion.order(left, right) <= 0
        case .greater: SemanticVersion.order(left, right) > 0
        case .greaterOrEqual: SemanticVersion.order(left, right) >= 0
        case .sameMajor: left.major == right.major
        case .sameMinor: left.major == right.major && left.minor == right.minor
        }
    }
}
