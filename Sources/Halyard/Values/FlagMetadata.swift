/// One value of flag metadata: OFREP allows booleans, strings and numbers.
public enum FlagMetadataValue: Sendable, Hashable {
    case bool(Bool)
    case string(String)
    case number(Double)
}

/// Flag metadata: string keys to bool, string or number values; empty when there is none.
public typealias FlagMetadata = [String: FlagMetadataValue]
