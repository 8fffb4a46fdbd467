/// The type a caller asks a definition's value as, for the type check of a typed evaluation
/// (OpenFeature's five): a value of another type gives `TYPE_MISMATCH`.
public enum FlagDefinitionType: String, Sendable, Hashable, CaseIterable {
    /// A JSON boolean.
    case boolean
    /// A JSON string.
    case string
    /// A JSON number written without fraction or exponent.
    case integer
    /// Any JSON number (an integer is served as a double).
    case float
    /// A JSON object or array.
    case object

    /// Whether `value` has this type.
    func accepts(_ value: JSONValue) -> Bool {
        switch (self, value) {
        case (.boolean, .bool), (.string, .string), (.integer, .int), (.float, .int), (.float, .double),
            (.object, .object), (.object, .array):
            true
        default:
            false
        }
    }
}
