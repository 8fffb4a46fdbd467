/// How one read resolved (internal). Raw values are stored in handle caches; 0 must mean
/// "no values yet" because a fresh handle cache is all zeros.
enum ReadOutcome: UInt8 {
    case notReady = 0
    case success = 1
    /// The served flag had no value: the default, with the server's reason.
    case codeDefault = 2
    /// The served flag carried an error code.
    case servedError = 3
    case typeMismatch = 4
    case flagNotFound = 5
}

extension Snapshot.Kind {
    /// Whether a value of this kind can be read as `requested` (the Int/Double rules of docs/architecture.md).
    @inline(__always)
    func isReadable(as requested: _FlagValueKind) -> Bool {
        switch requested {
        case .bool: self == .bool
        case .int: self == .int
        case .double: self == .int || self == .double
        case .string: self == .string
        case .json: rawValue >= Snapshot.Kind.null.rawValue
        }
    }

    /// The outcome of reading a value of this kind as `requested`.
    @inline(__always)
    func outcome(as requested: _FlagValueKind) -> ReadOutcome {
        if isReadable(as: requested) { return .success }
        switch self {
        case .error: return .servedError
        case .codeDefault: return .codeDefault
        default: return .typeMismatch
        }
    }
}

extension Snapshot.Entry {
    /// The scalar bits for a read as `requested` (an Int read as Double is widened).
    @inline(__always)
    func bits(as requested: _FlagValueKind) -> UInt64 {
        if requested == .double && kind == .int {
            return Double(Int64(bitPattern: bits)).bitPattern
        }
        return bits
    }
}
