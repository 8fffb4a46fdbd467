/// One value of flag metadata: OFREP allows booleans, strings and numbers.
///
/// A number keeps the integer/float distinction of the literal the control plane sent, as
/// ``JSONValue`` does: `7` is ``int(_:)`` (all 64 bits exact, so a `version` of
/// `9007199254740993` is not rounded to the nearest double), `0.5` and `1e3` are
/// ``number(_:)``. An integer literal beyond 64 bits is a ``number(_:)``.
public enum FlagMetadataValue: Sendable, Hashable {
    /// A boolean.
    case bool(Bool)
    /// A string.
    case string(String)
    /// A number written with a fraction or an exponent (or an integer beyond 64 bits).
    case number(Double)
    /// An integer literal that fits in 64 bits, exactly.
    case int(Int64)
}

/// Flag metadata: string keys to bool, string or number values; empty when there is none.
public typealias FlagMetadata = [String: FlagMetadataValue]

extension FlagMetadataValue {
    /// The value as JSON, as OFREP writes it (the OFREP encoder and the cache envelope).
    var jsonValue: JSONValue {
        switch self {
        case .bool(let b): .bool(b)
        case .string(let s): .string(s)
        case .number(let d): .double(d)
        case .int(let i): .int(i)
        }
    }
}

extension Dictionary where Key == String, Value == FlagMetadataValue {
    /// The metadata as a JSON object.
    package var jsonObject: JSONValue { .object(mapValues(\.jsonValue)) }
}
