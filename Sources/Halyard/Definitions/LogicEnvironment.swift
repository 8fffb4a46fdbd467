/// What a targeted evaluation's rule reads: the context's attributes, its targeting key, and
/// flagd's `$flagd` properties (`flagKey`, `timestamp`). Built per evaluation without copying
/// the attributes; the whole-data object (`{"var": ""}`) is built only when a rule asks for it.
struct LogicEnvironment: Sendable {
    /// The context's attributes (private ones included: nothing leaves the process).
    let attributes: [String: JSONValue]
    /// The targeting key; empty means none (a rule reads null).
    let targetingKey: String
    /// The key of the flag being evaluated (`$flagd.flagKey`).
    let flagKey: String
    /// Seconds since 1970 at the evaluation (`$flagd.timestamp`).
    let timestamp: Int64

    /// `$flagd` as an object.
    var flagdObject: JSONValue {
        .object(["flagKey": .string(flagKey), "timestamp": .int(timestamp)])
    }

    /// The targeting key as a rule reads it.
    var targetingKeyValue: JSONValue {
        targetingKey.isEmpty ? .null : .string(targetingKey)
    }

    /// The whole data object a rule sees at the top.
    var rootObject: JSONValue {
        var members = attributes
        members["$flagd"] = flagdObject
        members["targetingKey"] = targetingKeyValue
        return .object(members)
    }

    /// A top-level property of the data.
    func topLevel(_ name: String) -> JSONValue? {
        switch name {
        case "$flagd": flagdObject
        case "targetingKey": targetingKey.isEmpty ? nil : .string(targetingKey)
        default: LogicCoercion.exactValue(attributes, name)
        }
    }
}

/// Why evaluating a rule failed.
enum LogicError: Error, Sendable, Equatable {
    /// The rule cannot be evaluated as written (an unknown operator, a dangling `$ref`):
    /// `PARSE_ERROR`.
    case invalidRule(String)
    /// The rule failed on these inputs (a division by zero): `GENERAL`.
    case failed(String)
}
