import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// Reads by handle (`FlagKey`, docs/in-process.md, "Reading by handle"): the slot resolved once
/// per key table and re-resolved when the table changes (new definitions, another value), so a
/// handle read always answers what the keyed read answers.
@Suite struct FlagKeyTests {
    static func document(_ flags: [String: String]) -> String {
        let members = flags.sorted { $0.key < $1.key }.map { key, value in
            #""\#(key)": {"state": "ENABLED", "variants": {"v": \#(value)}, "defaultVariant": "v"}"#
        }
        return #"{"flags": {\#(members.joined(separator: ", "))}}"#
    }

    @Test func aHandleFollowsTheDefinitionsItReads() throws {
        let first = try FlagDefinitions(parsing: Self.document(["a": "true", "b": "1", "c": "\"x\""]))
        // The same keys shifted to other slots by a key sorted before them, and "b" removed.
        let second = try FlagDefinitions(parsing: Self.document(["0": "false", "a": "false", "c": "\"y\"", "d": "2"]))
        let ctx = EvaluationContext(targetingKey: "u")
        let a = FlagKey("a")
        let b = FlagKey("b")
        let c = FlagKey("c")
        #expect(first.bool(a, context: ctx, default: false) == true)
        #expect(first.int(b, context: ctx, default: 0) == 1)
        #expect(first.string(c, context: ctx, default: "") == "x")
        // A new value: every handle re-resolves (not the slot of the first definitions).
        #expect(second.bool(a, context: ctx, default: true) == false)
        #expect(second.string(c, context: ctx, default: "") == "y")
        let removed = second.evaluate(b, context: ctx, as: .integer)
        #expect(second.int(b, context: ctx, default: -1) == -1)
        #expect(removed.errorCode == .flagNotFound && removed.reason == .error && removed.key == "b")
        // And back: alternating values never serves the other one's slot.
        for _ in 0..<3 {
            #expect(first.bool(a, context: ctx, default: false) == true)
            #expect(second.bool(a, context: ctx, default: true) == false)
            #expect(first.int(b, context: ctx, default: 0) == 1)
            #expect(second.int(b, context: ctx, default: 7) == 7)
        }
        #expect(FlagKey("a") == a && FlagKey("a").key == "a" && FlagKey("b") != a)
        // Keys are told apart byte for byte, as the key tables do.
        #expect(FlagKey("\u{E9}") != FlagKey("e\u{301}"))
    }

    @Test func handleReadsAgreeWithKeyedReadsOnGeneratedDefinitions() throws {
        // Seeded: two generated documents sharing some keys; each handle read against either,
        // in a seeded order, answers what the keyed read answers.
        var generator = DefinitionsGenerator(seed: 5_152)
        var documents: [FlagDefinitions] = []
        for offset in [0, 60] {
            var flags: [String: JSONValue] = [:]
            for index in offset..<(offset + 120) { flags["flag-\(index)"] = generator.flag().json }
            let document: JSONValue = ["flags": .object(flags), "$evaluators": DefinitionsGenerator.evaluators]
            documents.append(try FlagDefinitions(parsing: document.pythonJSON))
        }
        let contexts = (0..<20).map { _ in generator.context() }
        let keys = (0..<190).map { "flag-\($0)" } + ["absent"]
        let handles = keys.map(FlagKey.init)
        var rng = SplitMix64(seed: 5_153)
        var compared = 0
        for _ in 0..<4_000 {
            let pick = Int.random(in: 0..<keys.count, using: &rng)
            let defs = documents[Int.random(in: 0..<2, using: &rng)]
            let context = contexts[Int.random(in: 0..<contexts.count, using: &rng)]
            let key = keys[pick]
            let handle = handles[pick]
            let t: Int64 = 1_800_000_000
            #expect(
                defs.bool(handle, context: context, default: true, timestamp: t)
                    == defs.bool(key, context: context, default: true, timestamp: t), "\(key)")
            #expect(
                defs.int(handle, context: context, default: -9, timestamp: t)
                    == defs.int(key, context: context, default: -9, timestamp: t), "\(key)")
            #expect(
                defs.double(handle, context: context, default: -0.5, timestamp: t)
                    == defs.double(key, context: context, default: -0.5, timestamp: t), "\(key)")
            #expect(
                defs.string(handle, context: context, default: "\u{0}", timestamp: t)
                    == defs.string(key, context: context, default: "\u{0}", timestamp: t), "\(key)")
            #expect(
                defs.evaluate(handle, context: context, timestamp: t)
                    == defs.evaluate(key, context: context, timestamp: t), "\(key)")
            compared += 1
        }
        #expect(compared == 4_000)
    }

    @Test func aServiceViewReadByHandleFollowsANewGeneration() async throws {
        let file = try InProcessServiceTests.DefinitionsFile(Self.document(["a": "true", "b": "1", "c": "\"x\""]))
        let plane = InMemoryControlPlane()
        let service = try await InProcessServiceTests.loadedService(InProcessServiceTests.options(file, plane))
        defer { service.close() }
        let user = InProcessServiceTests.user(1)
        let a = FlagKey("a")
        let b = FlagKey("b")
        let c = FlagKey("c")
        let before = await service.flags(for: user)
        #expect(before.bool(a, default: false) == true)
        #expect(before.int(b, default: 0) == 1)
        #expect(before.double(b, default: 0) == 1)
        #expect(before.string(c, default: "") == "x")

        try file.write(Self.document(["0": "false", "a": "false", "c": "\"y\"", "d": "2"]))
        await service.checkDefinitions()
        let after = await service.flags(for: user)
        #expect(after.bool(a, default: true) == false)
        #expect(after.string(c, default: "") == "y")
        #expect(after.int(b, default: -1) == -1)
        let removed = after.evaluation(b, default: -1)
        #expect(removed.value == -1 && removed.errorCode == .flagNotFound && removed.key == "b")
        #expect(after.evaluation(b, default: -1).errorCode == after.intDetail("b", default: -1).errorCode)
        // The old view still answers from its own generation, by handle as by key.
        #expect(before.bool(a, default: false) == true && before.int(b, default: 0) == 1)
        #expect(after.int(FlagKey("d"), default: 0) == 2)
        // Handle reads are reads: counted like keyed ones.
        #expect(after.bool(FlagKey("absent"), default: true) == true)
        #expect(service.stats.reads.flagNotFound >= 2)
    }
}
