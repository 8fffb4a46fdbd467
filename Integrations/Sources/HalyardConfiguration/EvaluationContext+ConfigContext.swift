public import Configuration
public import Halyard

@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension EvaluationContext {
    /// The context a configuration key's context stands for (the default mapping of
    /// ``HalyardConfigProvider/init(service:base:context:)``): `base` with
    /// the key's `targetingKey` and `kind` (when they are strings) and every other entry as an
    /// attribute of the same JSON type, over the base's attributes.
    ///
    /// ```swift
    /// let limit = config.int(forKey: ConfigKey("upload.limit", context: ["tier": "gold"]), default: 10)
    /// ```
    public init(configContext: [String: ConfigContextValue], base: EvaluationContext = .anonymous) {
        self = base
        for (name, value) in configContext {
            switch (name, value) {
            case ("targetingKey", .string(let key)): targetingKey = key
            case ("kind", .string(let kind)): self.kind = kind
            case ("targetingKey", _), ("kind", _): continue
            case (_, .string(let text)): attributes[name] = .string(text)
            case (_, .int(let number)): attributes[name] = .int(Int64(number))
            case (_, .double(let number)): attributes[name] = number.isFinite ? .double(number) : .null
            case (_, .bool(let flag)): attributes[name] = .bool(flag)
            }
        }
    }
}
