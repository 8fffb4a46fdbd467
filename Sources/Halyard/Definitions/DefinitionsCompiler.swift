/// Validation of a definitions document against flagd's schema 0.2.x and compilation of its
/// rules (docs/definitions.md, "The format and its validation"). Any violation refuses the whole document.
enum DefinitionsCompiler {
    /// Validates and compiles `json`.
    static func compile(_ json: JSONValue) throws(FlagDefinitionsError) -> FlagDefinitions {
        guard case .object(let root) = json else {
            throw .invalid(path: "$", reason: "the document is a \(json.typeName), not an object")
        }
        guard let flagsValue = root["flags"] else {
            throw .invalid(path: "flags", reason: "the document has no flags member")
        }
        guard case .object(let flagMembers) = flagsValue else {
            throw .invalid(path: "flags", reason: "flags is a \(flagsValue.typeName), not an object")
        }
        if let schema = root["$schema"], case .string = schema {
        } else if root["$schema"] != nil {
            throw .invalid(path: "$schema", reason: "$schema is not a string")
        }
        let setMetadata = try metadata(root["metadata"], path: "metadata")
        var evaluators: [String: JSONValue] = [:]
        if let value = root["$evaluators"] {
            guard case .object(let members) = value else {
                throw .invalid(path: "$evaluators", reason: "$evaluators is a \(value.typeName), not an object")
            }
            evaluators = members
        }
        var flags: [String: FlagDefinition] = [:]
        flags.reserveCapacity(flagMembers.count)
        for (key, value) in flagMembers {
            flags[key] = try flag(key, value, setMetadata: setMetadata, evaluators: evaluators)
        }
        return FlagDefinitions(flags: flags, metadata: setMetadata)
    }

    private static func flag(
        _ key: String, _ json: JSONValue, setMetadata: FlagMetadata, evaluators: [String: JSONValue]
    ) throws(FlagDefinitionsError) -> FlagDefinition {
        let path = "flags.\(key)"
        guard case .object(let members) = json else {
            throw .invalid(path: path, reason: "the flag is a \(json.typeName), not an object")
        }
        let enabled: Bool
        switch members["state"] {
        case .string("ENABLED")?: enabled = true
        case .string("DISABLED")?: enabled = false
        case nil: throw .invalid(path: path + ".state", reason: "state is missing")
        case let other?:
            throw .invalid(path: path + ".state", reason: "state must be ENABLED or DISABLED, not \(other)")
        }
        guard let variantsValue = members["variants"] else {
            throw .invalid(path: path + ".variants", reason: "variants are missing")
        }
        guard case .object(let variants) = variantsValue, !variants.isEmpty else {
            throw .invalid(path: path + ".variants", reason: "variants must be a non-empty object")
        }
        var kind: String?
        for name in variants.keys.sorted() {
            let value = variants[name]!
            let valueKind: String
            switch value {
            case .bool: valueKind = "boolean"
            case .string: valueKind = "string"
            case .int, .double: valueKind = "number"
            case .object: valueKind = "object"
            case .null, .array:
                throw .invalid(
                    path: "\(path).variants.\(name)",
                    reason: "a variant is a boolean, string, number or object, not a \(value.typeName)")
            }
            if let kind, kind != valueKind {
                throw .invalid(
                    path: "\(path).variants.\(name)",
                    reason: "variants must all have one type: \(kind) and \(valueKind) are mixed")
            }
            kind = valueKind
        }
        var defaultVariant: String?
        switch members["defaultVariant"] {
        case nil, .null?: defaultVariant = nil
        case .string(let name)?: defaultVariant = name.isEmpty ? nil : name
        case let other?:
            throw .invalid(
                path: path + ".defaultVariant",
                reason: "defaultVariant must be a string or null, not a \(other.typeName)")
        }
        var targeting: LogicNode?
        if let rule = members["targeting"] {
            guard case .object(let ruleMembers) = rule else {
                throw .invalid(path: path + ".targeting", reason: "targeting must be an object, not a \(rule.typeName)")
            }
            if !ruleMembers.isEmpty {
                guard let compiled = LogicNode.compile(rule, evaluators: evaluators) else {
                    throw .invalid(
                        path: path + ".targeting",
                        reason:
                            "the rule exceeds \(LogicNode.maxCompiledNodes) nodes or depth \(LogicNode.maxCompiledDepth) once its $refs are expanded"
                    )
                }
                targeting = compiled
            }
        }
        var merged = setMetadata
        for (name, value) in try metadata(members["metadata"], path: path + ".metadata") { merged[name] = value }
        return FlagDefinition(
            key: key, enabled: enabled, variants: variants, defaultVariant: defaultVariant, targeting: targeting,
            metadata: merged)
    }

    /// A metadata object: non-empty names to booleans, strings or numbers.
    private static func metadata(_ json: JSONValue?, path: String) throws(FlagDefinitionsError) -> FlagMetadata {
        guard let json else { return [:] }
        guard case .object(let members) = json else {
            throw .invalid(path: path, reason: "metadata must be an object, not a \(json.typeName)")
        }
        var result: FlagMetadata = [:]
        for (name, value) in members {
            guard !name.isEmpty else { throw .invalid(path: path, reason: "a metadata name is empty") }
            switch value {
            case .bool(let b): result[name] = .bool(b)
            case .string(let s): result[name] = .string(s)
            case .int(let i): result[name] = .int(i)
            case .double(let d): result[name] = .number(d)
            default:
                throw .invalid(
                    path: "\(path).\(name)",
                    reason: "metadata values are booleans, strings or numbers, not a \(value.typeName)")
            }
        }
        return result
    }
}
