/// One value of flag metadata: OFREP allows booleans, strings and numbers.
public enum FlagMetadataValue: Sendable, Hashable {
    case bool(Bool)
    case string(String)
    case number(Double)
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
        }
    }
}

extension Dictionary where Key == String, Value == FlagMetadataValue {
    /// The metadata as a JSON object.
    var jsonObject: JSONValue { .object(mapValues(\.jsonValue)) }
}
