public import Configuration

/// The error ``HalyardConfigProvider`` throws when a flag's value cannot be given as the type
/// asked for (a `ConfigReader` then reports it and serves its default, or throws from a
/// `required` read).
@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
public enum HalyardConfigError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The flag `key` is served as JSON `actual` (``Halyard/JSONValue/typeName``), which is not
    /// `requested`, or is a string that is not base64 where bytes were asked for.
    case typeMismatch(key: String, requested: ConfigType, actual: String)

    /// Says which flag and which types.
    public var description: String {
        switch self {
        case .typeMismatch(let key, let requested, let actual):
            "flag '\(key)' is \(actual), not \(requested.rawValue)"
        }
    }
}
