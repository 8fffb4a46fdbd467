import Foundation
import Testing

@testable import Halyard

/// A flag's rule compiled against the flag (`VariantRule`, its conditions as `LogicTest`s)
/// serves what the general evaluator serves: `FlagDefinitions.outcome(of:)` of the compiled
/// node's result, or of its error. Checked exhaustively on small inputs (every typed shape,
/// each with every kind of operand value, the operand on either side) and on the seeded
/// definitions and contexts of the differential test.
@Suite struct VariantRuleTests {
    /// What the general evaluator serves for `flag` and `context`.
    static func general(_ flag: FlagDefinition, _ context: EvaluationContext, timestamp: Int64)
        -> FlagDefinitions.Outcome?
    {
        guard let rule = flag.rule else { return nil }
        let env = LogicEnvironment(context, flagKey: flag.key, timestamp: timestamp)
        do {
            return FlagDefinitions.outcome(of: try rule.evaluate(.root, env), variants: flag.variantIndex)
        } catch {
            return FlagDefinitions.outcome(of: error)
        }
    }

    /// What the compiled rule serves.
    static func compiled(_ flag: FlagDefinition, _ context: EvaluationContext, timestamp: Int64)
        -> FlagDefinitions.Outcome?
    {
        flag.variantRule?.outcome(context, flag.key, timestamp, flag.variantIndex)
    }

    /// How many of a test's leaves are typed (not `.node`).
    static func typedLeaves(_ test: LogicTest) -> Int {
        switch test {
        case .constant, .node: 0
        case .all(let tests), .any(let tests): tests.map(typedLeaves).reduce(0, +)
        case .not(let test): typedLeaves(test)
        case .stringEquals, .numberCompare, .stringIn, .stringMatch, .semVer: 1
        }
    }

    static func typedLeaves(_ rule: VariantRule) -> Int {
        switch rule {
        case .fixed, .node: 0
        case .fractional: 1
        case .conditional(let branches, let otherwise):
            branches.map { typedLeaves($0.test) + typedLeaves($0.rule) }.reduce(0, +) + typedLeaves(otherwise)
        }
    }

    /// Every value kind an operand can hold (nil: absent).
    static let operandValues: [JSONValue?] = [
        nil, .null, "pro", "free", "", "10", "18", "\u{E9}", "e\u{301}", "v2.3.0", "2.10.1", "1.0.0-rc.1",
        "a string longer than fifteen bytes", .int(0), .int(18), .int(25), .int(-1), .double(2.5), .double(18.0),
        .bool(true), .bool(false), .array(["pro"]), .array([]), .object(["k": .int(1)]),
    ]

    /// Constants the typed shapes are compiled with, and some they are not.
    static let constants: [JSONValue] = [
        "pro", "", "10", "\u{E9}", "e\u{301}", .int(0), .int(18), .int(-1), .double(2.5), .bool(true), .null,
        .array(["pro", "free"]), .array(["pro", .null, .int(18)]), .array([]), "2.0.0",
    ]

    /// The conditions: each operator with the operand (`var` of an attribute, or of the
    /// targeting key) on the left and on the right of each constant.
    static func conditions(_ operand: JSONValue) -> [JSONValue] {
        var out: [JSONValue] = []
        for op in ["==", "!=", "===", "!==", "<", "<=", ">", ">=", "in", "starts_with", "ends_with"] {
            for constant in constants {
                out.append([op: [operand, constant]])
                out.append([op: [constant, operand]])
            }
        }
        for op in ["=", "!=", "<", ">=", "^", "~"] {
            out.append(["sem_ver": [operand, .string(op), "2.3.0"]])
        }
        out.append(["sem_ver": [operand, ">=", "1.0.0-rc.2"]])
        return out
    }

    @Test func everyTypedShapeServesWhatTheGeneralEvaluatorServes() throws {
        var flags: [String: JSONValue] = [:]
        var index = 0
        for operand: JSONValue in [["var": "plan"], ["var": "targetingKey"], ["var": ["plan"]]] {
            for condition in Self.conditions(operand) {
                for rule: JSONValue in [
                    ["if": [condition, "on", "off"]],
                    [
                        "if": [
                            ["!": condition], "on", ["and": [condition, ["==": [["var": "age"], 18]]]], "off",
                            "unknown",
                        ]
                    ],
                    ["if": [["or": [["!!": [condition]], condition]], "on"]],
                    ["if": [["and": []], "on", ["or": []], "off", condition]],
                ] {
                    flags["f\(index)"] = [
                        "state": "ENABLED", "variants": ["on": true, "off": false, "true": true],
                        "defaultVariant": "off",
                        "targeting": rule,
                    ]
                    index += 1
                }
            }
        }
        let definitions = try FlagDefinitions(json: ["flags": .object(flags)])
        var typed = 0
        var compared = 0
        for flag in definitions.ordered {
            let rule = try #require(flag.variantRule)
            typed += Self.typedLeaves(rule)
            for value in Self.operandValues {
                var attributes: [String: JSONValue] = ["age": .int(18)]
                attributes["plan"] = value
                var key = ""
                if case .string(let text)? = value { key = text }
                let context = EvaluationContext(targetingKey: key, attributes: attributes)
                let expected = Self.general(flag, context, timestamp: 0)
                let got = Self.compiled(flag, context, timestamp: 0)
                #expect(
                    got == expected,
                    "\(flag.key) \(String(describing: flag.rule)) for plan \(String(describing: value))")
                compared += 1
            }
        }
        // The states reached: most conditions typed, and every one compared on every value.
        #expect(typed > 1500, "typed leaves: \(typed)")
        #expect(compared == definitions.count * Self.operandValues.count)
    }

    /// Contexts with many attributes (past the scan), and attribute names stored out of line (a
    /// short name with spare capacity: not in the small form).
    @Test func attributesAreFoundWhateverTheirNamesForm() throws {
        let definitions = try FlagDefinitions(
            json: [
                "flags": [
                    "f": [
                        "state": "ENABLED", "variants": ["on": true, "off": false], "defaultVariant": "off",
                        "targeting": [
                            "if": [
                                [
                                    "and": [
                                        ["==": [["var": "plan"], "pro"]], [">=": [["var": "age"], 18]],
                                        ["in": [["var": "country"], ["FR", "DE"]]],
                                    ]
                                ], "on", "off",
                            ]
                        ],
                    ]
                ]
            ])
        let flag = try #require(definitions.ordered.first)
        func outOfLine(_ name: String) -> String {
            var s = String()
            s.reserveCapacity(64)
            s.append(name)
            return s
        }
        for extra in [0, 3, 20] {
            for spare in [false, true] {
                var attributes: [String: JSONValue] = [:]
                for i in 0..<extra { attributes["x\(i)"] = .int(Int64(i)) }
                let name = { (text: String) in spare ? outOfLine(text) : text }
                attributes[name("plan")] = "pro"
                attributes[name("age")] = .int(30)
                attributes[name("country")] = "DE"
                if spare, StringLayout.available {
                    #expect(attributes.keys.contains { StringLayout.smallWords($0) == nil })
                }
                let context = EvaluationContext(targetingKey: "k", attributes: attributes)
                #expect(
                    Self.compiled(flag, context, timestamp: 0)
                        == .variant(try #require(flag.variantIndex.slot(of: "on"))))
                #expect(Self.compiled(flag, context, timestamp: 0) == Self.general(flag, context, timestamp: 0))
            }
        }
    }

    /// The differential test's seeded definitions and contexts (every operator, nested rules,
    /// `$ref`s, fractional with and without a key): the compiled rule and the general evaluator
    /// agree on every pair.
    @Test(arguments: [UInt64(1), 2, 3])
    func generatedDefinitionsAgree(seed: UInt64) throws {
        var g = DefinitionsGenerator(seed: seed)
        var flags: [String: JSONValue] = [:]
        for index in 0..<300 { flags["flag-\(index)"] = g.flag().json }
        let definitions = try FlagDefinitions(
            json: ["flags": .object(flags), "$evaluators": DefinitionsGenerator.evaluators])
        let contexts = (0..<60).map { _ in g.context() }
        var typed = 0
        var compared = 0
        for flag in definitions.ordered {
            if let rule = flag.variantRule { typed += Self.typedLeaves(rule) }
            for context in contexts {
                let expected = Self.general(flag, context, timestamp: 1_700_000_000)
                let got = Self.compiled(flag, context, timestamp: 1_700_000_000)
                if got != expected {
                    Issue.record(
                        "seed \(seed), \(flag.key): \(String(describing: got)) ≠ \(String(describing: expected))")
                    return
                }
                compared += 1
            }
        }
        #expect(typed > 20 && compared == 300 * 60, "typed leaves \(typed), pairs \(compared)")
    }
}
