import Foundation
import Testing

@testable import Halyard

/// Generated definitions and contexts evaluated by Halyard and by the reference evaluator
/// (`openfeature-flagd-core` 1.0.0, bucketing v2; `HALYARD_FLAGD_PYTHON` names a Python that
/// has it, `.ci/run` sets it): zero disagreements in value, variant, reason and error code.
/// CI runs a fixed-seed sample; `HALYARD_FLAGD_DIFF_PAIRS` sets the number of (flag, context)
/// pairs (the long run: 100,000 or more) and `HALYARD_FLAGD_DIFF_SEED` the seed.
@Suite("flagd differential: Halyard against the reference evaluator")
struct FlagdDifferentialTests {
    static var python: String? {
        guard let path = ProcessInfo.processInfo.environment["HALYARD_FLAGD_PYTHON"], !path.isEmpty else { return nil }
        return path
    }

    static var script: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("FlagdReference/evaluate.py").path
    }

    static var environment: [String: String] { ProcessInfo.processInfo.environment }

    struct Case {
        var flag: String
        var type: FlagDefinitionType
        var fallback: JSONValue
        var context: EvaluationContext
    }

    static func fallback(_ type: FlagDefinitionType) -> JSONValue {
        switch type {
        case .boolean: false
        case .string: "fallback"
        case .integer: -1
        case .float: -1.5
        case .object: ["fallback": true]
        }
    }

    /// One batch: `flags` generated flags, `contexts` contexts, every pair evaluated.
    static func batch(seed: UInt64, flags flagCount: Int, contexts contextCount: Int, python: String) throws -> (
        pairs: Int, disagreements: [String]
    ) {
        var generator = DefinitionsGenerator(seed: seed)
        var flags: [String: JSONValue] = [:]
        var types: [String: FlagDefinitionType] = [:]
        for index in 0..<flagCount {
            let (json, type) = generator.flag()
            flags["flag-\(index)"] = json
            types["flag-\(index)"] = type
        }
        let document: JSONValue = ["flags": .object(flags), "$evaluators": DefinitionsGenerator.evaluators]
        let definitions = try FlagDefinitions(parsing: document.pythonJSON)
        var cases: [Case] = []
        for _ in 0..<contextCount {
            let context = generator.context()
            for index in 0..<flagCount {
                let key = "flag-\(index)"
                var type = generator.chance(90) ? types[key]! : generator.pick(FlagDefinitionType.allCases)
                // The reference serves a boolean to a float read (its booleans are integers):
                // a quirk of its language, not flagd's semantics (docs/definitions.md).
                if type == .float, types[key] == .boolean { type = .boolean }
                cases.append(Case(flag: key, type: type, fallback: fallback(type), context: context))
            }
        }
        cases.append(Case(flag: "no-such-flag", type: .string, fallback: "fallback", context: .anonymous))

        var request = "{\"definitions\":" + document.pythonJSON + ",\"cases\":["
        for (i, c) in cases.enumerated() {
            if i > 0 { request += "," }
            var item: [String: JSONValue] = [
                "flag": .string(c.flag), "type": .string(c.type.rawValue), "default": c.fallback,
                "attributes": .object(c.context.attributes),
            ]
            if !c.context.targetingKey.isEmpty { item["targetingKey"] = .string(c.context.targetingKey) }
            request += JSONValue.object(item).pythonJSON
        }
        request += "]}"
        if let folder = environment["HALYARD_FLAGD_DIFF_DUMP"] {
            // The request as sent, to replay a disagreement with the script alone.
            try Data(request.utf8).write(
                to: URL(fileURLWithPath: folder).appendingPathComponent("flagd-diff-\(seed).json"))
        }
        let (status, output) = try ExternalTool.filter(python, [script], input: Data(request.utf8))
        guard status == 0, case .array(let results) = try JSONValue(parsing: output, limits: .ofrepResponse),
            results.count == cases.count
        else {
            return (
                cases.count,
                ["the reference failed (status \(status)): \(String(decoding: output.prefix(500), as: UTF8.self))"]
            )
        }
        var disagreements: [String] = []
        for (c, reference) in zip(cases, results) {
            let served = definitions.evaluate(
                c.flag, context: c.context, as: c.type, timestamp: Int64(Date().timeIntervalSince1970))
            let mine: JSONValue = [
                "value": served.value ?? c.fallback,
                "variant": served.variant.map(JSONValue.string) ?? .null,
                "reason": .string(served.reason.rawValue),
                "errorCode": served.errorCode.map { .string($0.rawValue) } ?? .null,
            ]
            if mine != reference {
                disagreements.append(
                    "seed \(seed) \(c.flag) as \(c.type.rawValue) \(flags[c.flag]?.pythonJSON ?? "-") context \(JSONValue.object(c.context.attributes).pythonJSON) key \(c.context.targetingKey): Halyard \(mine.pythonJSON), reference \(reference.pythonJSON)"
                )
            }
        }
        return (cases.count, disagreements)
    }

    @Test(
        "generated definitions agree with the reference",
        .enabled(
            if: FlagdDifferentialTests.python != nil,
            "set HALYARD_FLAGD_PYTHON to a Python with openfeature-flagd-core==1.0.0"))
    func generatedDefinitionsAgree() throws {
        let python = try #require(Self.python)
        let wanted = Int(Self.environment["HALYARD_FLAGD_DIFF_PAIRS"] ?? "") ?? 10_000
        let firstSeed = UInt64(Self.environment["HALYARD_FLAGD_DIFF_SEED"] ?? "") ?? 51
        var pairs = 0
        var disagreements: [String] = []
        var seed = firstSeed
        while pairs < wanted {
            let result = try Self.batch(seed: seed, flags: 100, contexts: 50, python: python)
            pairs += result.pairs
            disagreements += result.disagreements
            seed += 1
            if disagreements.count > 20 { break }
        }
        print(
            "flagd differential: \(pairs) (flag, context) pairs from seed \(firstSeed), \(disagreements.count) disagreements"
        )
        #expect(
            disagreements.isEmpty,
            "\(disagreements.count) disagreements:\n\(disagreements.prefix(20).joined(separator: "\n"))")
    }
}
