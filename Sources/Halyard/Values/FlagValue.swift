/// A Swift type a flag can be read as: `Bool`, `Int`, `Double`, `String` or ``JSONValue``.
///
/// The requirements are implementation details (leading underscore: not API); conforming
/// other types is not supported.
public protocol FlagValue: Sendable {
    /// Not API: the value kind used by the read path.
    static var _flagValueKind: _FlagValueKind { get }
    /// Not API: converts a served JSON value, applying the Int/Double read rules, or nil
    /// on a type mismatch.
    static func _fromJSON(_ value: JSONValue) -> Self?
    /// Not API: rebuilds a scalar (Bool, Int, Double) from the bits the read path caches.
    static func _fromBits(_ bits: UInt64) -> Self
}

/// Not API: the requested type of a read.
public enum _FlagValueKind: Sendable {
    case bool, int, double, string, json
}

extension Bool: FlagValue {
    @inlinable public static var _flagValueKind: _FlagValueKind { .bool }
    @inlinable public static func _fromJSON(_ value: JSONValue) -> Bool? {
        if case .bool(let b) = value { return b }
        return nil
    }
    @inlinable @inline(__always) public static func _fromBits(_ bits: UInt64) -> Bool { bits != 0 }
}

extension Int: FlagValue {
    @inlinable public static var _flagValueKind: _FlagValueKind { .int }
    /// Only JSON integers (no fraction, no exponent, fitting 64 bits); a fractional number never narrows.
    @inlinable public static func _fromJSON(_ value: JSONValue) -> Int? {
        if case .int(let i) = value { return Int(exactly: i) }
        return nil
    }
    @inlinable @inline(__always) public static func _fromBits(_ bits: UInt64) -> Int {
        Int(truncatingIfNeeded: Int64(bitPattern: bits))
    }
}

extension Double: FlagValue {
    @inlinable public static var _flagValueKind: _FlagValueKind { .double }
    /// Any JSON number; integers widen.
    @inlinable public static func _fromJSON(_ value: JSONValue) -> Double? {
        switch value {
        case .double(let d): return d
        case .int(let i): return Double(i)
        default: return nil
        }
    }
    @inlinable @inline(__always) public static func _fromBits(_ bits: UInt64) -> Double { Double(bitPattern: bits) }
}

extension String: FlagValue {
    @inlinable public static var _flagValueKind: _FlagValueKind { .string }
    @inlinable public static func _fromJSON(_ value: JSONValue) -> String? {
        if case .string(let s) = value { return s }
        return nil
    }
    @inlinable public static func _fromBits(_ bits: UInt64) -> String { "" }
}

extension JSONValue: FlagValue {
    @inlinable public static var _flagValueKind: _FlagValueKind { .json }
    @inlinable public static func _fromJSON(_ value: JSONValue) -> JSONValue? { value }
    @inlinable public static func _fromBits(_ bits: UInt64) -> JSONValue { .null }
}
