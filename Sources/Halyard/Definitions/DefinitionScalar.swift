/// A result's value as the typed reads of ``FlagDefinitions`` take it: its kind and scalar
/// bits, built at load so that a read tests one byte and loads one word (docs/definitions.md,
/// "Evaluation cost"). The rules are a view's (`ReadOutcome.isReadable(as:)`): a Bool is read
/// only as a Bool, an Int as an Int or (widened) a Double, a Double only as a Double.
struct DefinitionScalar: Sendable {
    /// What the result holds.
    enum Kind: UInt8, Sendable {
        /// No value: the caller's default is served (an error, a disabled flag, a null default
        /// variant).
        case noValue
        case bool, int, double
        /// A string, an object, an array or null: no scalar.
        case other
    }

    let kind: Kind
    /// Bool: 0/1. Int: the Int64 bit pattern. Double: the Double bit pattern.
    let bits: UInt64

    /// No value (a missing flag, a failed rule).
    static let noValue = DefinitionScalar(kind: .noValue, bits: 0)

    init(kind: Kind, bits: UInt64) {
        self.kind = kind
        self.bits = bits
    }

    /// The scalar of `served`: none for an error or no value.
    init(_ served: ServedFlag) {
        guard served.errorCode == nil, let value = served.value else {
            self.init(kind: .noValue, bits: 0)
            return
        }
        switch value {
        case .bool(let b): self.init(kind: .bool, bits: b ? 1 : 0)
        case .int(let i): self.init(kind: .int, bits: UInt64(bitPattern: i))
        case .double(let d): self.init(kind: .double, bits: d.bitPattern)
        default: self.init(kind: .other, bits: 0)
        }
    }

    /// The value as a Bool, if it is one.
    @inline(__always)
    var bool: Bool? { kind == .bool ? bits != 0 : nil }

    /// The value as an Int, if it is a JSON integer.
    @inline(__always)
    var int: Int? { kind == .int ? Int(truncatingIfNeeded: Int64(bitPattern: bits)) : nil }

    /// The value as a Double, if it is a JSON number (an integer widened).
    @inline(__always)
    var double: Double? {
        switch kind {
        case .double: Double(bitPattern: bits)
        case .int: Double(Int64(bitPattern: bits))
        default: nil
        }
    }
}
