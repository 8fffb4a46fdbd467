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

    /// The attribute `name`, found by its words in the dictionary's storage when the rule's
    /// compilation could take them (``AttributeName/smallWords``;
    /// ``AttributeBuckets/lookup(_:smallName:_:)``), else as ``attribute(_:)-(String)`` finds it.
    @inline(__always)
    static func attribute(_ name: AttributeName, in attributes: [String: JSONValue]) -> JSONValue? {
        if let words = name.smallWords {
            switch AttributeBuckets.lookup(attributes, smallName: words, name.text) {
            case .found(let value): return value
            case .absent: return nil
            case .unreadable: break
            }
        }
        return attribute(name.text, in: attributes)
    }

    /// The attributes a context may have for ``attribute(_:)`` to scan them rather than hash
    /// `name` (docs/definitions.md, "Evaluation cost").
    static let scanLimit = 8

    /// The attribute `name` (byte-exact), if the context has it. A context of a few
    /// attributes is scanned comparing lengths first (most names differ there) and then bytes:
    /// cheaper than hashing `name` for a dictionary read.
    @inline(__always)
    func attribute(_ name: String) -> JSONValue? {
        Self.attribute(name, in: attributes)
    }

    /// ``attribute(_:)-(String)`` of `attributes`.
    @inline(__always)
    static func attribute(_ name: String, in attributes: [String: JSONValue]) -> JSONValue? {
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

/// An attribute name a compiled rule reads, with what its compilation could prepare for the
/// lookup.
struct AttributeName: Sendable {
    /// The name (byte-exact).
    let text: String
    /// The name's two words in the small form, when it has one and the layout reads of
    /// strings and of dictionary storage are on (``StringLayout/available``,
    /// ``AttributeBuckets/available``): then a context's attribute is found by comparing words
    /// in place. Nil otherwise (a name of 16 bytes or more, another platform, the reads off).
    let smallWords: (UInt64, UInt64)?

    init(_ text: String) {
        self.text = text
        smallWords =
            StringLayout.available && AttributeBuckets.available ? StringLayout.smallWords(text) : nil
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
