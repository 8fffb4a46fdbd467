import Foundation

@testable import Halyard

/// Seeded random flag definitions and contexts for the differential test against the
/// reference evaluator: every operator, nested rules, weights, semver strings, Unicode. It
/// stays inside what both sides define the same way (docs/definitions.md, "What differs from flagd, and why").
struct DefinitionsGenerator {
    var random: SplitMix64

    init(seed: UInt64) { random = SplitMix64(seed: seed) }

    mutating func below(_ n: Int) -> Int { Int(random.next() % UInt64(n)) }
    mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
    mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }

    static let attributeNames = ["plan", "age", "email", "version", "score", "tags", "user", "beta", "name", "country"]
    static let strings: [JSONValue] = [
        "pro", "free", "a", "b", "", "1", "1.5", "abc", "ABC", "é", "e\u{301}", "😀", "ada@example.com",
        "x.y", "true", "null", "10", " 2 ", "zz",
    ]
    static let versions: [JSONValue] = [
        "1.0.0", "v2.1.0", "V1.2.3", "1.2", "2", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-beta.11", "1.0.0+build",
        "2.0.0-rc.1+x", "bad", "01.0.0", "1.0.0.0", 1, 2, 1.5, 1.0, "", "0.0.1",
    ]
    static let names = ["a", "b", "c", "true", "false", "1", "2.0", "", "é", "on", "off"]

    mutating func literal() -> JSONValue {
        switch below(8) {
        case 0, 1, 2: return pick(Self.strings)
        case 3: return .int(Int64(below(200)) - 50)
        case 4: return pick([0.5, 1.0, -2.25, 0.1, 3.0, 1e21, 100.0])
        case 5: return .bool(chance(50))
        case 6: return .null
        default: return .array([pick(Self.strings), .int(Int64(below(5)))])
        }
    }

    mutating func contextValue(_ name: String) -> JSONValue {
        switch name {
        case "version": return pick(Self.versions)
        case "age", "score":
            return pick([.int(Int64(below(100))), .double(Double(below(1000)) / 8), "42", "x", .null, .bool(true)])
        case "tags": return .array((0..<below(4)).map { _ in pick(Self.strings) })
        case "user": return ["name": pick(Self.strings), "id": .int(Int64(below(10)))]
        case "beta": return .bool(chance(50))
        default: return chance(85) ? pick(Self.strings) : literal()
        }
    }

    mutating func context() -> EvaluationContext {
        var attributes: [String: JSONValue] = [:]
        for name in Self.attributeNames where chance(70) { attributes[name] = contextValue(name) }
        let key = chance(75) ? pick(["user-\(below(1000))", "ada@example.com", "é😀", "k"]) : ""
        return EvaluationContext(targetingKey: key, attributes: attributes)
    }

    mutating func variable() -> JSONValue {
        let path = pick(
            Self.attributeNames + [
                "user.name", "user.id", "tags.0", "tags.length", "targetingKey",
                "$flagd.flagKey", "missing", "user.missing",
            ])
        return chance(20) ? ["var": [.string(path), literal()]] : ["var": .string(path)]
    }

    /// An expression giving any value.
    mutating func value(_ depth: Int) -> JSONValue {
        if depth <= 0 { return chance(50) ? variable() : literal() }
        switch below(14) {
        case 0, 1, 2: return variable()
        case 3: return literal()
        case 4: return ["cat": .array((0..<(1 + below(3))).map { _ in value(depth - 1) })]
        case 5: return ["substr": [value(depth - 1), .int(Int64(below(7)) - 3), .int(Int64(below(5)) - 1)]]
        case 6:
            let op = pick(["+", "-", "*", "%"])
            return [op: [numeric(depth - 1), numeric(depth - 1)]]
        case 7: return ["/": [numeric(depth - 1), .int(Int64(1 + below(4)))]]
        case 8: return [pick(["min", "max"]): [numeric(depth - 1), .int(Int64(below(50))), numeric(depth - 1)]]
        case 9: return ["if": [condition(depth - 1), value(depth - 1), value(depth - 1)]]
        case 10: return ["merge": [["var": "tags"], literal()]]
        case 11: return ["map": [["var": "tags"], ["cat": [["var": ""], "!"]]]]
        case 12: return ["filter": [["var": "tags"], ["starts_with": [["var": ""], pick(["a", "p", ""])]]]]
        default:
            return ["reduce": [["var": "tags"], ["+": [["var": "accumulator"], 1]], 0]]
        }
    }

    mutating func numeric(_ depth: Int) -> JSONValue {
        if depth > 0, chance(30) { return ["+": [numeric(depth - 1), .int(Int64(below(10)))]] }
        return pick([["var": "age"], ["var": "score"], .int(Int64(below(100))), 2.5, "3", ["var": "user.id"]])
    }

    /// An expression used as a condition.
    mutating func condition(_ depth: Int) -> JSONValue {
        switch below(depth > 0 ? 13 : 7) {
        case 0, 1:
            let op = pick(["==", "!=", "===", "!==", "<", "<=", ">", ">="])
            let left = value(depth - 1)
            // Either order: a `var` against a constant is a typed test either way (LogicTest).
            return .object([op: .array(chance(30) ? [literal(), left] : [left, literal()])])
        case 2:
            if chance(50) {
                let items = (0..<below(4)).map { _ in chance(80) ? pick(Self.strings) : literal() }
                return ["in": [variable(), .array(items)]]
            }
            return ["in": [pick(Self.strings), ["var": "tags"]]]
        case 3: return ["in": [pick(["a", "example", "é", ""]), variable()]]
        case 4: return [pick(["starts_with", "ends_with"]): [variable(), pick(Self.strings)]]
        case 5:
            return [
                "sem_ver": [
                    ["var": "version"], .string(pick(["=", "!=", "<", "<=", ">", ">=", "^", "~", "==="])),
                    pick(Self.versions),
                ]
            ]
        case 6: return ["<": [.int(Int64(below(30))), numeric(depth - 1), .int(Int64(30 + below(60)))]]
        case 7: return ["and": .array((0..<(1 + below(3))).map { _ in condition(depth - 1) })]
        case 8: return ["or": .array((0..<(1 + below(3))).map { _ in condition(depth - 1) })]
        case 9: return [pick(["!", "!!"]): [value(depth - 1)]]
        case 10: return [pick(["some", "all", "none"]): [["var": "tags"], ["==": [["var": ""], pick(Self.strings)]]]]
        case 11: return ["missing_some": [.int(Int64(below(3))), ["plan", "age", "email"]]]
        default: return ["fractional": [[true, .int(Int64(below(3)))], [false, .int(Int64(below(3)))]]]
        }
    }

    /// A targeting rule for a flag with `variants` (names).
    mutating func targeting(_ variantNames: [String], depth: Int) -> JSONValue {
        func name() -> JSONValue {
            chance(90) ? .string(pick(variantNames)) : chance(50) ? .null : .string(pick(Self.names))
        }
        switch below(10) {
        case 0, 1, 2:
            var arguments: [JSONValue] = []
            for _ in 0..<(1 + below(3)) { arguments += [condition(depth), name()] }
            if chance(70) { arguments.append(name()) }
            return ["if": .array(arguments)]
        case 3, 4:
            var buckets: [JSONValue] = []
            for _ in 0..<(1 + below(4)) {
                buckets.append(chance(15) ? [name()] : [name(), .int(Int64(below(60)) - (chance(10) ? 20 : 0))])
            }
            let key: [JSONValue] =
                switch below(4) {
                case 0: []
                case 1: [["var": "targetingKey"]]
                case 2: [["cat": [["var": "$flagd.flagKey"], ["var": "email"]]]]
                default: [["var": "user.name"]]
                }
            return ["fractional": .array(key + buckets)]
        case 5: return ["cat": [value(0), value(0)]]
        case 6: return ["sem_ver": [["var": "version"], .string(pick([">=", "<", "^", "~"])), pick(Self.versions)]]
        case 7: return ["if": [["$ref": .string(pick(["is_pro", "is_adult", "nowhere"]))], name(), name()]]
        case 8: return [pick(["+", "min", "max"]): [numeric(depth), numeric(depth)]]
        default: return ["if": [condition(depth), targeting(variantNames, depth: depth - 1), name()]]
        }
    }

    /// A flag of a random type.
    mutating func flag() -> (json: JSONValue, type: FlagDefinitionType) {
        let type = pick(FlagDefinitionType.allCases)
        var variantNames = Array(Set((0..<(1 + below(4))).map { _ in pick(Self.names) })).sorted()
        if variantNames.isEmpty { variantNames = ["a"] }
        var variants: [String: JSONValue] = [:]
        for name in variantNames {
            variants[name] =
                switch type {
                case .boolean: .bool(chance(50))
                case .string: pick(Self.strings)
                case .integer: chance(85) ? .int(Int64(below(100))) : .double(0.5)
                case .float: chance(50) ? .int(Int64(below(100))) : pick([0.5, 1.0, 2.25])
                case .object: chance(80) ? ["k": pick(Self.strings)] : [:]
                }
        }
        var flag: [String: JSONValue] = [
            "state": chance(90) ? "ENABLED" : "DISABLED",
            "variants": .object(variants),
        ]
        switch below(10) {
        case 0: break
        case 1: flag["defaultVariant"] = .null
        case 2: flag["defaultVariant"] = .string(pick(Self.names))
        default: flag["defaultVariant"] = .string(pick(variantNames))
        }
        if chance(85) { flag["targeting"] = chance(5) ? [:] : targeting(variantNames, depth: below(3)) }
        if chance(30) { flag["metadata"] = ["owner": pick(Self.strings), "n": .int(Int64(below(9)))] }
        return (.object(flag), type)
    }

    static let evaluators: JSONValue = [
        "is_pro": ["==": [["var": "plan"], "pro"]],
        "is_adult": [">=": [["var": "age"], 18]],
    ]
}

extension JSONValue {
    /// JSON text that keeps a double a double for a reader that distinguishes them (`1.0`, never
    /// `1`), as the reference's `json.loads` does.
    var pythonJSON: String {
        switch self {
        case .null: "null"
        case .bool(let b): b ? "true" : "false"
        case .int(let i): String(i)
        case .double(let d): d.description
        case .string: jsonString
        case .array(let items): "[" + items.map(\.pythonJSON).joined(separator: ",") + "]"
        case .object(let members):
            "{"
                + members.sorted { $0.key < $1.key }.map {
                    JSONValue.string($0.key).jsonString + ":" + $0.value.pythonJSON
                }
                .joined(separator: ",") + "}"
        }
    }
}
