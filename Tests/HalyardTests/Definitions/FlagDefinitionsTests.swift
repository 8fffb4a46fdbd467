import Foundation
import Testing

@testable import Halyard

/// Definitions: validation (typed errors, never a crash), and evaluation with flagd's reasons.
@Suite struct FlagDefinitionsTests {
    static let document = #"""
        {
          "$schema": "https://flagd.dev/schema/v0/flags.json",
          "metadata": {"team": "web", "version": 3},
          "flags": {
            "static": {"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "on"},
            "off": {"state": "DISABLED", "variants": {"on": true}, "defaultVariant": "on"},
            "rule": {
              "state": "ENABLED", "variants": {"a": "A", "b": "B"}, "defaultVariant": "b",
              "metadata": {"version": 4},
              "targeting": {"if": [{"$ref": "pro"}, "a", null]}
            },
            "bad-ref": {"state": "ENABLED", "variants": {"a": 1}, "defaultVariant": "a", "targeting": {"$ref": "none"}},
            "unknown-variant": {"state": "ENABLED", "variants": {"a": 1}, "defaultVariant": "a", "targeting": {"cat": ["z"]}},
            "missing-default": {"state": "ENABLED", "variants": {"a": 1}, "defaultVariant": "zz"},
            "null-default": {"state": "ENABLED", "variants": {"a": 1}, "defaultVariant": null, "targeting": {}},
            "bool-result": {"state": "ENABLED", "variants": {"true": "yes", "false": "no"}, "targeting": {"==": [1, 1]}},
            "number-result": {"state": "ENABLED", "variants": {"1": "one"}, "targeting": {"+": [0, 1]}},
            "divide": {"state": "ENABLED", "variants": {"a": 1}, "defaultVariant": "a", "targeting": {"/": [1, 0]}},
            "stamp": {"state": "ENABLED", "variants": {"old": 1, "new": 2}, "defaultVariant": "old",
                      "targeting": {"if": [{">": [{"var": "$flagd.timestamp"}, 1000]}, "new", "old"]}},
            "numbers": {"state": "ENABLED", "variants": {"i": 1, "d": 1.5}, "defaultVariant": "i"},
            "objects": {"state": "ENABLED", "variants": {"o": {"x": [1]}}, "defaultVariant": "o"}
          },
          "$evaluators": {"pro": {"==": [{"var": "plan"}, "pro"]}}
        }
        """#

    static func definitions() throws -> FlagDefinitions { try FlagDefinitions(parsing: document) }

    @Test func reasonsAndVariants() throws {
        let defs = try Self.definitions()
        let pro = EvaluationContext(targetingKey: "u", attributes: ["plan": "pro"])
        let free = EvaluationContext(targetingKey: "u", attributes: ["plan": "free"])

        let s = defs.evaluate("static", context: free)
        #expect(s.value == true && s.variant == "on" && s.reason == .staticValue && s.errorCode == nil)
        #expect(s.metadata == ["team": .string("web"), "version": .int(3)])

        let d = defs.evaluate("off", context: free)
        #expect(d.value == nil && d.variant == nil && d.reason == .disabled && d.errorCode == nil)

        let hit = defs.evaluate("rule", context: pro)
        #expect(hit.value == "A" && hit.variant == "a" && hit.reason == .targetingMatch)
        #expect(hit.metadata["version"] == .int(4), "a flag's metadata wins over the document's")
        let miss = defs.evaluate("rule", context: free)
        #expect(miss.value == "B" && miss.variant == "b" && miss.reason == .defaultValue)

        let notFound = defs.evaluate("nope", context: free)
        #expect(notFound.errorCode == .flagNotFound && notFound.reason == .error && notFound.value == nil)
        #expect(defs.evaluate("bad-ref", context: free).errorCode == .parseError)
        #expect(defs.evaluate("unknown-variant", context: free).errorCode == .general)
        #expect(defs.evaluate("missing-default", context: free).errorCode == .general)
        #expect(defs.evaluate("divide", context: free).errorCode == .general)

        let nullDefault = defs.evaluate("null-default", context: free)
        #expect(
            nullDefault.value == nil && nullDefault.reason == .defaultValue && nullDefault.errorCode == nil,
            "empty targeting is no targeting; a null default variant serves the code default")

        #expect(defs.evaluate("bool-result", context: free).value == "yes")
        #expect(defs.evaluate("number-result", context: free).value == "one")
        #expect(defs.evaluate("stamp", context: free, timestamp: 999).variant == "old")
        #expect(defs.evaluate("stamp", context: free, timestamp: 1001).variant == "new")
        #expect(defs.evaluate("stamp", context: free).variant == "new", "the current time by default")
    }

    @Test func namesMatchByCodePointsNotCanonicalEquivalence() throws {
        // Found by the differential test (seed 1010): a rule giving "e" + U+0301 named the
        // variant "é" (U+00E9) through Swift's canonical-equivalence String equality; the
        // reference finds no such variant (GENERAL).
        let defs = try FlagDefinitions(
            parsing: #"""
                {"flags": {"f": {"state": "ENABLED", "variants": {"é": 1, "x": 2}, "defaultVariant": "x",
                  "targeting": {"cat": [{"var": "name"}]}}}}
                """#)
        let decomposed = EvaluationContext(targetingKey: "", attributes: ["name": "e\u{301}"])
        let precomposed = EvaluationContext(targetingKey: "", attributes: ["name": "\u{e9}"])
        #expect(defs.evaluate("f", context: decomposed).errorCode == .general)
        #expect(defs.evaluate("f", context: precomposed).variant == "\u{e9}")
        #expect(defs.evaluate("f", context: precomposed).value == 1)
        // Flag keys and attribute names likewise.
        #expect(defs.evaluate("f", context: precomposed).errorCode == nil)
        let named = try FlagDefinitions(
            parsing: #"""
                {"flags": {"é": {"state": "ENABLED", "variants": {"a": "A", "b": "B"}, "defaultVariant": "b",
                  "targeting": {"if": [{"var": "é"}, "a", null]}}}}
                """#)
        #expect(named.evaluate("e\u{301}", context: .anonymous).errorCode == .flagNotFound)
        #expect(
            named.evaluate("\u{e9}", context: EvaluationContext(targetingKey: "", attributes: ["\u{e9}": true])).variant
                == "b")
        #expect(
            named.evaluate("\u{e9}", context: EvaluationContext(targetingKey: "", attributes: ["e\u{301}": true]))
                .variant == "a")
    }

    @Test func typedEvaluation() throws {
        let defs = try Self.definitions()
        let ctx = EvaluationContext.anonymous
        #expect(defs.evaluate("static", context: ctx, as: .boolean).value == true)
        let mismatch = defs.evaluate("static", context: ctx, as: .string)
        #expect(mismatch.errorCode == .typeMismatch && mismatch.value == nil && mismatch.variant == nil)
        #expect(defs.evaluate("numbers", context: ctx, as: .integer).value == 1)
        #expect(defs.evaluate("numbers", context: ctx, as: .float).value == .double(1), "an integer read as a float")
        #expect(defs.evaluate("objects", context: ctx, as: .object).value == ["x": [1]])
        #expect(defs.evaluate("objects", context: ctx, as: .integer).errorCode == .typeMismatch)
        // No type check when the caller's default is served.
        #expect(defs.evaluate("off", context: ctx, as: .string).reason == .disabled)
        #expect(defs.evaluate("null-default", context: ctx, as: .string).reason == .defaultValue)
    }

    @Test func typedReadsServeValuesByTheRulesOfAView() throws {
        let defs = try Self.definitions()
        let pro = EvaluationContext(targetingKey: "u", attributes: ["plan": "pro"])
        let free = EvaluationContext(targetingKey: "u", attributes: ["plan": "free"])
        #expect(defs.bool("static", context: free, default: false) == true, "a static flag")
        #expect(defs.bool("off", context: free, default: true) == true, "disabled: the default")
        #expect(defs.bool("off", context: free, default: false) == false)
        #expect(defs.string("rule", context: pro, default: "-") == "A", "a targeted flag's matched variant")
        #expect(defs.string("rule", context: free, default: "-") == "B", "a null rule result: the default variant")
        #expect(defs.int("null-default", context: free, default: 7) == 7, "no default variant: the code default")
        #expect(defs.int("missing-default", context: free, default: 7) == 7, "an error: the default")
        #expect(defs.int("bad-ref", context: free, default: 7) == 7)
        #expect(defs.int("divide", context: free, default: 7) == 7)
        #expect(defs.string("unknown-variant", context: free, default: "-") == "-")
        #expect(defs.bool("nope", context: free, default: true) == true, "a missing flag")
        #expect(defs.string("nope", context: free, default: "-") == "-")
        // Type mismatches give the default.
        #expect(defs.string("static", context: free, default: "-") == "-")
        #expect(defs.int("static", context: free, default: 7) == 7)
        #expect(defs.bool("rule", context: pro, default: false) == false)
        #expect(defs.double("objects", context: free, default: 0.25) == 0.25)
        #expect(defs.int("numbers", context: free, default: 7) == 1)
        #expect(defs.double("numbers", context: free, default: 0) == 1, "an integer read as a double")
        #expect(defs.string("bool-result", context: free, default: "-") == "yes")
        #expect(defs.string("number-result", context: free, default: "-") == "one")
        #expect(defs.int("stamp", context: free, default: 0, timestamp: 999) == 1)
        #expect(defs.int("stamp", context: free, default: 0, timestamp: 1001) == 2)
    }

    @Test func typedReadsAgreeWithEvaluateOnGeneratedDefinitions() throws {
        // Seeded: what `evaluate` serves, read by the rules of a view, for every flag and
        // context; the typed reads answer from the results built at load by slot instead.
        var generator = DefinitionsGenerator(seed: 5_151)
        var flags: [String: JSONValue] = [:]
        for index in 0..<300 { flags["flag-\(index)"] = generator.flag().json }
        let document: JSONValue = ["flags": .object(flags), "$evaluators": DefinitionsGenerator.evaluators]
        let defs = try FlagDefinitions(parsing: document.pythonJSON)
        let contexts = (0..<40).map { _ in generator.context() }
        var compared = 0
        for key in defs.keys + ["absent"] {
            for context in contexts {
                let served = defs.evaluate(key, context: context, timestamp: 1_800_000_000)
                let value = served.errorCode == nil ? served.value : nil
                func expect<T: Equatable>(_ read: T, _ wanted: T?, _ fallback: T) {
                    #expect(read == (wanted ?? fallback), "\(key) for \(context.targetingKey): \(served)")
                }
                let bool: Bool? = if case .bool(let b) = value { b } else { nil }
                let int: Int? = if case .int(let i) = value { Int(i) } else { nil }
                let double: Double? =
                    switch value {
                    case .int(let i): Double(i)
                    case .double(let d): d
                    default: nil
                    }
                let string: String? = if case .string(let s) = value { s } else { nil }
                for fallback in [false, true] {
                    expect(
                        defs.bool(key, context: context, default: fallback, timestamp: 1_800_000_000), bool, fallback)
                }
                expect(defs.int(key, context: context, default: -12_345, timestamp: 1_800_000_000), int, -12_345)
                expect(defs.double(key, context: context, default: -0.5, timestamp: 1_800_000_000), double, -0.5)
                expect(defs.string(key, context: context, default: "\u{0}", timestamp: 1_800_000_000), string, "\u{0}")
                compared += 1
            }
        }
        #expect(compared == 301 * 40)
    }

    @Test func privateAttributesAreVisibleToRules() throws {
        let defs = try Self.definitions()
        let ctx = EvaluationContext(targetingKey: "u", attributes: ["plan": "pro"], privateAttributes: ["plan"])
        #expect(defs.evaluate("rule", context: ctx).variant == "a")
    }

    @Test(arguments: [
        ("[]", "$"),
        (#"{}"#, "flags"),
        (#"{"flags": []}"#, "flags"),
        (#"{"flags": {"f": 1}}"#, "flags.f"),
        (#"{"flags": {"f": {"variants": {"a": 1}}}}"#, "flags.f.state"),
        (#"{"flags": {"f": {"state": "ON", "variants": {"a": 1}}}}"#, "flags.f.state"),
        (#"{"flags": {"f": {"state": "ENABLED"}}}"#, "flags.f.variants"),
        (#"{"flags": {"f": {"state": "ENABLED", "variants": {}}}}"#, "flags.f.variants"),
        (#"{"flags": {"f": {"state": "ENABLED", "variants": [1]}}}"#, "flags.f.variants"),
        (#"{"flags": {"f": {"state": "ENABLED", "variants": {"a": 1, "b": "x"}}}}"#, "flags.f.variants.b"),
        (#"{"flags": {"f": {"state": "ENABLED", "variants": {"a": null}}}}"#, "flags.f.variants.a"),
        (#"{"flags": {"f": {"state": "ENABLED", "variants": {"a": [1]}}}}"#, "flags.f.variants.a"),
        (
            #"{"flags": {"f": {"state": "ENABLED", "variants": {"a": 1}, "defaultVariant": 1}}}"#,
            "flags.f.defaultVariant"
        ),
        (#"{"flags": {"f": {"state": "ENABLED", "variants": {"a": 1}, "targeting": "a"}}}"#, "flags.f.targeting"),
        (
            #"{"flags": {"f": {"state": "ENABLED", "variants": {"a": 1}, "metadata": {"m": null}}}}"#,
            "flags.f.metadata.m"
        ),
        (#"{"flags": {"f": {"state": "ENABLED", "variants": {"a": 1}, "metadata": []}}}"#, "flags.f.metadata"),
        (#"{"flags": {}, "metadata": {"": 1}}"#, "metadata"),
        (#"{"flags": {}, "$evaluators": []}"#, "$evaluators"),
        (#"{"flags": {}, "$schema": 1}"#, "$schema"),
    ])
    func schemaViolationsAreTypedErrors(document: String, path: String) {
        #expect {
            _ = try FlagDefinitions(parsing: document)
        } throws: { error in
            guard case FlagDefinitionsError.invalid(let at, _) = error else { return false }
            return at == path
        }
    }

    @Test(arguments: ["", "{", "{\"flags\": {}} x", "\u{FEFF}{}", "nul", "{\"flags\": {\"a\": 1, \"a\": 2}}"])
    func malformedJSONIsATypedError(document: String) {
        #expect {
            _ = try FlagDefinitions(parsing: document)
        } throws: { error in
            if case FlagDefinitionsError.malformedJSON = error { return true }
            return false
        }
    }

    @Test func seededDamageNeverCrashes() throws {
        // Every single-byte damage of a valid document: parsed, refused with a typed error,
        // or accepted and evaluable; never a crash.
        let bytes = Array(Self.document.utf8)
        var generator = SplitMix64(seed: 51)
        for _ in 0..<2_000 {
            var damaged = bytes
            let index = Int(generator.next() % UInt64(damaged.count))
            damaged[index] = UInt8(truncatingIfNeeded: generator.next())
            if let defs = try? FlagDefinitions(parsing: Data(damaged)) {
                for key in defs.keys { _ = defs.evaluate(key, context: .anonymous) }
            }
        }
    }

    @Test func anEvaluatorChainThatDoublesIsRefusedNotExpanded() throws {
        // e0 = [e1, e1], e1 = [e2, e2], ...: 2^40 nodes if expanded.
        var evaluators: [String: JSONValue] = [:]
        for i in 0..<40 {
            evaluators["e\(i)"] = ["and": [["$ref": .string("e\(i + 1)")], ["$ref": .string("e\(i + 1)")]]]
        }
        evaluators["e40"] = true
        let bomb: JSONValue = [
            "flags": ["f": ["state": "ENABLED", "variants": ["a": 1], "targeting": ["$ref": "e0"]]],
            "$evaluators": .object(evaluators),
        ]
        #expect {
            _ = try FlagDefinitions(json: bomb)
        } throws: { error in
            guard case FlagDefinitionsError.invalid(let path, _) = error else { return false }
            return path == "flags.f.targeting"
        }
        // A deep chain of single references (depth over the limit) is refused the same way.
        var chain: [String: JSONValue] = [:]
        for i in 0..<200 { chain["c\(i)"] = ["!": [["$ref": .string("c\(i + 1)")]]] }
        chain["c200"] = true
        let deep: JSONValue = [
            "flags": ["f": ["state": "ENABLED", "variants": ["a": 1], "targeting": ["$ref": "c0"]]],
            "$evaluators": .object(chain),
        ]
        #expect(throws: FlagDefinitionsError.self) { _ = try FlagDefinitions(json: deep) }
        // An evaluator no flag uses costs nothing.
        let unused: JSONValue = ["flags": [:], "$evaluators": .object(evaluators)]
        #expect(try FlagDefinitions(json: unused).count == 0)
    }

    @Test func unknownMembersAreIgnored() throws {
        let defs = try FlagDefinitions(
            parsing:
                #"{"flags": {"f": {"state": "ENABLED", "variants": {"a": 1}, "defaultVariant": "a", "source": "x"}}, "extra": 1}"#
        )
        #expect(defs.keys == ["f"])
        #expect(FlagDefinitions.empty.evaluate("f", context: .anonymous).errorCode == .flagNotFound)
    }
}
