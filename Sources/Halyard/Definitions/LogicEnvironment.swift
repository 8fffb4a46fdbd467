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

    /// The attributes a context may have for ``attribute(_:)`` to scan them rather than hash
    /// `name` (docs/definitions.md, "Evaluation cost").
    static let scanLimit = 8

    /// The attribute `name` (byte-exact), if the context has it. A context of a few
    /// attributes is scanned comparing lengths first (most names differ there) and then bytes:
    /// cheaper than hashing `name` for a dictionary read.
    @inline(__always)
    func attribute(_ name: String) -> JSONValue? {
        guard attributes.count <= Self.scanLimit else { return LogicCoercion.exactValue(attributes, name) }
        let length = name.utf8.count
        var index = attributes.startIndex
        while index != attributes.endIndex {
            let candidate = attributes.keys[index]
            if candidate.utf8.count == length, LogicCoercion.stringsEqual(candidate, name) {
                return attributes.values[index]
            }
            attributes.formIndex(after: &index)
        }
        return nil
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
