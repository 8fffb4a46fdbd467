import Foundation
import Halyard
import Testing

/// The flagd testbed's evaluator suite (`../shared/flagd-testbed`, read where it is): every
/// scenario and example row of its gherkin features run against `FlagDefinitions` loaded with
/// `evaluator/flags/testkit-flags.json`. Rows Halyard does not implement (bucketing v1) are
/// listed as skipped with the reason, never counted as passes.
@Suite("flagd testbed: evaluator scenarios")
struct FlagdTestbedTests {
    /// The testbed's folder: `HALYARD_FLAGD_TESTBED`, else `../shared/flagd-testbed` from the
    /// package root.
    static var testbed: URL {
        if let path = ProcessInfo.processInfo.environment["HALYARD_FLAGD_TESTBED"] {
            return URL(fileURLWithPath: path)
        }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("shared/flagd-testbed")
    }

    static var available: Bool {
        FileManager.default.fileExists(
            atPath: testbed.appendingPathComponent("evaluator/flags/testkit-flags.json").path)
    }

    /// Every case of every feature, in file order.
    static func allCases() throws -> [GherkinReader.Case] {
        let folder = testbed.appendingPathComponent("evaluator/gherkin")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { $0.hasSuffix(".feature") }.sorted()
        var cases: [GherkinReader.Case] = []
        for file in files {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            cases += GherkinReader.cases(in: text, file: file)
        }
        return cases
    }

    enum Outcome: Equatable {
        case passed
        case failed(String)
        case skipped(String)
    }

    /// The state one case builds up step by step.
    struct World {
        var definitions: FlagDefinitions?
        var key = ""
        var type: FlagDefinitionType = .string
        var fallback: JSONValue = .null
        var context = EvaluationContext(targetingKey: "")
        var served: ServedFlag?
    }

    static func typed(_ text: String, _ type: String) -> JSONValue? {
        switch type {
        case "Boolean": text == "true" ? .bool(true) : text == "false" ? .bool(false) : nil
        case "String": .string(text)
        case "Integer": Int64(text).map(JSONValue.int)
        case "Float": Double(text).map(JSONValue.double)
        case "Object": try? JSONValue(parsing: text)
        default: nil
        }
    }

    static func flagType(_ name: String) -> FlagDefinitionType? {
        ["Boolean": .boolean, "String": .string, "Integer": .integer, "Float": .float, "Object": .object][name]
    }

    static func sameValue(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.double(let x), .int(let y)), (.int(let y), .double(let x)): x == Double(y)
        default: a == b
        }
    }

    /// Runs one case.
    static func run(_ testCase: GherkinReader.Case, testkit: FlagDefinitions) -> Outcome {
        if testCase.tags.contains("fractional-v1") {
            return .skipped("bucketing v1 (legacy); Halyard implements bucketing v2 (@fractional-v2)")
        }
        var world = World()
        for step in testCase.steps {
            let (template, values) = GherkinReader.parameters(step.text)
            switch template {
            case "an evaluator":
                world.definitions = testkit
            case _ where template.hasPrefix("a ") && template.hasSuffix("-flag with key {} and a fallback value {}"):
                let typeName = String(template.dropFirst(2).prefix { $0 != "-" })
                guard let type = flagType(typeName), values.count == 2 else {
                    return .skipped("unknown flag type in: \(step.text)")
                }
                guard let fallback = typed(values[1], typeName) else {
                    return .failed("fallback \(values[1]) is not a \(typeName)")
                }
                world.key = values[0]
                world.type = type
                world.fallback = fallback
            case "a context containing a targeting key with value {}":
                world.context.targetingKey = values[0]
            case "a context containing a key {}, with type {} and with value {}":
                guard let value = typed(values[2], values[1]) else {
                    return .failed("context value \(values[2]) is not a \(values[1])")
                }
                world.context.attributes[values[0]] = value
            case "a context containing a nested property with outer key {} and inner key {}, with value {}":
                world.context.attributes[values[0]] = .object([values[1]: .string(values[2])])
            case "the flag was evaluated with details":
                guard let definitions = world.definitions else { return .failed("no evaluator before evaluation") }
                world.served = definitions.evaluate(
                    world.key, context: world.context, as: world.type, timestamp: 1_700_000_000)
            case "the resolved details value should be {}":
                guard let served = world.served else { return .failed("no evaluation") }
                guard
                    let expected = typed(
                        values[0],
                        world.type == .boolean
                            ? "Boolean"
                            : world.type == .integer
                                ? "Integer"
                                : world.type == .float ? "Float" : world.type == .object ? "Object" : "String")
                else {
                    return .failed("expected value \(values[0]) does not parse")
                }
                let actual = served.value ?? world.fallback
                if !sameValue(actual, expected) { return .failed("value \(actual), expected \(expected) (\(served))") }
            case "the reason should be {}":
                guard let served = world.served else { return .failed("no evaluation") }
                if served.reason.rawValue != values[0] {
                    return .failed("reason \(served.reason), expected \(values[0]) (\(served))")
                }
            case "the error-code should be {}":
                guard let served = world.served else { return .failed("no evaluation") }
                if served.errorCode?.rawValue != values[0] {
                    return .failed(
                        "error code \(String(describing: served.errorCode)), expected \(values[0]) (\(served))")
                }
            case "the resolved metadata should contain":
                guard let served = world.served else { return .failed("no evaluation") }
                for row in step.table.dropFirst() where row.count == 3 {
                    let expected: FlagMetadataValue? =
                        switch row[1] {
                        case "String": .string(row[2])
                        case "Integer": Int64(row[2]).map(FlagMetadataValue.int)
                        case "Float": Double(row[2]).map(FlagMetadataValue.number)
                        case "Boolean": row[2] == "true" ? .bool(true) : row[2] == "false" ? .bool(false) : nil
                        default: nil
                        }
                    if served.metadata[row[0]] != expected || expected == nil {
                        return .failed(
                            "metadata \(row[0]) is \(String(describing: served.metadata[row[0]])), expected \(row[1]) \(row[2])"
                        )
                    }
                }
            case "the resolved metadata is empty":
                guard let served = world.served else { return .failed("no evaluation") }
                if !served.metadata.isEmpty { return .failed("metadata \(served.metadata), expected none") }
            default:
                return .skipped("a step this runner does not know: \(step.keyword) \(step.text)")
            }
        }
        return .passed
    }

    @Test(
        "every evaluator scenario of the testbed",
        .enabled(
            if: FlagdTestbedTests.available,
            "flagd testbed not found (HALYARD_FLAGD_TESTBED or ../shared/flagd-testbed)"))
    func testbedScenarios() throws {
        let data = try Data(contentsOf: Self.testbed.appendingPathComponent("evaluator/flags/testkit-flags.json"))
        let testkit = try FlagDefinitions(parsing: data)
        let cases = try Self.allCases()
        var passed = 0
        var failures: [String] = []
        var skipped: [String] = []
        for testCase in cases {
            switch Self.run(testCase, testkit: testkit) {
            case .passed: passed += 1
            case .failed(let why): failures.append("\(testCase): \(why)")
            case .skipped(let why): skipped.append("\(testCase): \(why)")
            }
        }
        print(
            "flagd testbed: \(cases.count) cases: \(passed) passed, \(failures.count) failed, \(skipped.count) skipped")
        for line in skipped { print("  skipped \(line)") }
        for line in failures { print("  FAILED \(line)") }
        #expect(failures.isEmpty, "\(failures.count) testbed cases failed:\n\(failures.joined(separator: "\n"))")
        #expect(cases.count == 140, "the reader found \(cases.count) cases, the testbed has 140")
        #expect(passed + skipped.count == cases.count)
        #expect(skipped.allSatisfy { $0.contains("bucketing v1") }, "only bucketing v1 rows may be skipped")
    }
}
