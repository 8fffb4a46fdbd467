import Foundation
import Testing

@_spi(Fuzzing) @testable import Halyard

@Suite struct FittingTests {
    @Test func canonicalWireForm() throws {
        let c = EvaluationContext(
            targetingKey: "u-42", kind: "user",
            attributes: ["plan": "pro", "age": 30, "score": 1.50, "tags": ["b", "a"]])
        let f = try c.fitted()
        #expect(
            f.canonicalJSON
                == #"{"age":30,"kind":"user","plan":"pro","score":1.5,"tags":["b","a"],"targetingKey":"u-42"}"#)
        #expect(f.droppedAttributes.isEmpty)
        #expect(!f.wasTrimmed)
        #expect(f.limit == 4096)
        #expect(f.fingerprint == SHA1.hexDigest(f.canonicalJSON))
        #expect(f.targetingKey == "u-42" && f.kind == "user")
        #expect(f.attributes == c.attributes)
        #expect(f.context == c)
        #expect(f.wireValue.canonicalJSON == f.canonicalJSON)
        #expect(f.canonicalJSONData == Data(f.canonicalJSON.utf8))
    }

    @Test func anonymousContextAlwaysHasBothMembers() throws {
        let f = try EvaluationContext.anonymous.fitted()
        #expect(f.canonicalJSON == #"{"kind":"user","targetingKey":""}"#)
        // SHA-1 of that exact text (independently computed with Python's hashlib).
        #expect(f.fingerprint == "ab6733ab5cf4b6b8b8f4c48431019e7aa034dd4f")
    }

    @Test func privateAttributesNeverLeave() throws {
        let secret = "very-secret-value"
        let c = EvaluationContext(
            targetingKey: "u1", attributes: ["email": .string(secret), "plan": "pro"],
            privateAttributes: ["email", "notAnAttribute"])
        let f = try c.fitted()
        #expect(!f.canonicalJSON.contains(secret))
        #expect(!f.canonicalJSON.contains("email"))
        #expect(f.attributes["email"] == nil)
        #expect(f.droppedAttributes.isEmpty)
        // The fingerprint is that of the context without the private attribute.
        let withoutPrivate = try EvaluationContext(targetingKey: "u1", attributes: ["plan": "pro"]).fitted()
        #expect(f.fingerprint == withoutPrivate.fingerprint)
        // And a different private value does not change it.
        let other = EvaluationContext(
            targetingKey: "u1", attributes: ["email": "x", "plan": "pro"], privateAttributes: ["email"])
        #expect(try other.fitted().fingerprint == f.fingerprint)
    }

    @Test func fingerprintIndependentOfInsertionOrder() throws {
        var g = SeededGenerator(seed: 3)
        var pairs: [(String, JSONValue)] = (0..<30).map { ("attr\($0)", RandomJSON.value(&g)) }
        var first: String?
        for _ in 0..<10 {
            pairs.shuffle(using: &g)
            var attributes: [String: JSONValue] = [:]
            for (k, v) in pairs { attributes[k] = v }
            let f = try EvaluationContext(targetingKey: "u", attributes: attributes).fitted(limit: 100_000)
            if let first { #expect(f.fingerprint == first) } else { first = f.fingerprint }
        }
        // Parsing JSON with members in different orders gives the same fingerprint too.
        let a = try EvaluationContext(json: #"{"targetingKey":"u","b":2,"a":1}"#).fitted()
        let b = try EvaluationContext(json: #"{"a":1,"b":2,"targetingKey":"u","kind":"user"}"#).fitted()
        #expect(a.fingerprint == b.fingerprint)
        #expect(a.canonicalJSON == b.canonicalJSON)
    }

    @Test func fingerprintChangesWithContent() throws {
        let a = try EvaluationContext(targetingKey: "u1").fitted()
        let b = try EvaluationContext(targetingKey: "u2").fitted()
        let c = try EvaluationContext(targetingKey: "u1", kind: "org").fitted()
        #expect(Set([a.fingerprint, b.fingerprint, c.fingerprint]).count == 3)
    }

    /// Sizes: `"name":value` in canonical form, UTF-16 code units.
    @Test func dropsLargestFirstUntilItFits() throws {
        let c = EvaluationContext(
            targetingKey: "u",
            attributes: [
                "big": .string(String(repeating: "x", count: 100)),  // "big":"xxx..." = 108
                "mid": .string(String(repeating: "y", count: 50)),  // 58
                "small": .string("z"),  // 11
            ])
        let full = try c.fitted(limit: 10_000)
        #expect(full.utf16Length == 2 + 18 + 13 + 108 + 58 + 11 + 4)  // braces, members, 4 commas
        // Limit just below full: dropping "big" suffices.
        let f1 = try c.fitted(limit: full.utf16Length - 1)
        #expect(f1.droppedAttributes == ["big"])
        #expect(
            f1.canonicalJSON
                == #"{"kind":"user","mid":"\#(String(repeating: "y", count: 50))","small":"z","targetingKey":"u"}"#)
        #expect(f1.utf16Length == full.utf16Length - 109)
        // Tighter: big, then mid.
        let f2 = try c.fitted(limit: full.utf16Length - 110)
        #expect(f2.droppedAttributes == ["big", "mid"])
        #expect(f2.attributes == ["small": "z"])
        // Exactly at the limit: nothing dropped.
        #expect(try c.fitted(limit: full.utf16Length).droppedAttributes.isEmpty)
    }

    @Test func tiesDropInNameOrder() throws {
        let c = EvaluationContext(targetingKey: "u", attributes: ["b": "xx", "a": "yy", "c": "zz", "dd": "w"])
        // Each of a, b, c is 8 code units; dd is 8 too ("dd":"w").
        let full = try c.fitted(limit: 10_000)
        let f = try c.fitted(limit: full.utf16Length - 1)
        #expect(f.droppedAttributes == ["a"])
        let g = try c.fitted(limit: full.utf16Length - 10)
        #expect(g.droppedAttributes == ["a", "b"])
    }

    @Test func neverDropsTargetingKeyKindOrKey() throws {
        let long = String(repeating: "k", count: 200)
        let c = EvaluationContext(
            targetingKey: long, kind: "user",
            attributes: ["key": .string(long), "other": .string(long), "x": 1])
        let base = 2 + (15 + 202) + 13 + (6 + 202) + 2  // targetingKey, kind, key, commas
        let f = try c.fitted(limit: base)
        #expect(f.droppedAttributes == ["other", "x"])
        #expect(f.attributes == ["key": .string(long)])
        #expect(f.utf16Length == base)
        #expect(f.targetingKey == long)
        #expect(throws: ContextError.requiredMembersExceedLimit(length: base, limit: base - 1)) {
            try c.fitted(limit: base - 1)
        }
        // An anonymous context with nothing else still needs its two members.
        #expect(throws: ContextError.requiredMembersExceedLimit(length: 33, limit: 10)) {
            try EvaluationContext.anonymous.fitted(limit: 10)
        }
    }

    @Test func capCountsUTF16CodeUnits() throws {
        // "😀" is 4 UTF-8 bytes but 2 UTF-16 code units; "é" is 2 bytes but 1 code unit.
        let c = EvaluationContext(
            targetingKey: "u",
            attributes: [
                "e": .string(String(repeating: "😀", count: 10)),
                "f": .string(String(repeating: "é", count: 10)),
            ])
        let f = try c.fitted(limit: 10_000)
        #expect(f.utf16Length == f.canonicalJSON.utf16.count)
        #expect(f.utf16Length == 2 + 18 + 13 + (4 + 20 + 2) + (4 + 10 + 2) + 3)
        // Dropping by UTF-16 size: e (26) is larger than f (16).
        let g = try c.fitted(limit: f.utf16Length - 1)
        #expect(g.droppedAttributes == ["e"])
    }

    /// Seeded random contexts: the fitted form never exceeds the cap, equals a from-scratch
    /// serialization of the kept members, re-parses to itself, and drops in the documented order.
    @Test func randomFittingInvariants() throws {
        var g = SeededGenerator(seed: 0xF17)
        for i in 0..<300 {
            var attributes: [String: JSONValue] = [:]
            for _ in 0..<Int.random(in: 0...25, using: &g) {
                attributes["a" + RandomJSON.string(&g)] = RandomJSON.value(&g)
            }
            if Bool.random(using: &g) { attributes["key"] = .string("k") }
            let privateNames = Set(attributes.keys.filter { _ in Int.random(in: 0..<5, using: &g) == 0 })
            let c = EvaluationContext(
                targetingKey: RandomJSON.string(&g), attributes: attributes,
                privateAttributes: privateNames)
            let limit = Int.random(in: 20...600, using: &g)
            do throws(ContextError) {
                let f = try c.fitted(limit: limit)
                #expect(f.utf16Length <= limit, "case \(i)")
                #expect(f.canonicalJSON == f.wireValue.canonicalJSON, "case \(i)")
                if privateNames.contains("key") {
                    #expect(f.attributes["key"] == nil)
                } else {
                    #expect(f.attributes["key"] == c.attributes["key"])
                }
                for name in privateNames { #expect(f.attributes[name] == nil) }
                let reparsed = try EvaluationContext(json: f.canonicalJSON).fitted(limit: limit)
                #expect(reparsed.canonicalJSON == f.canonicalJSON, "case \(i)")
                #expect(reparsed.fingerprint == f.fingerprint)
                #expect(reparsed.droppedAttributes.isEmpty)
                // Drop order is by size descending, then name.
                let sizes = f.droppedAttributes.compactMap { name in
                    attributes[name].map { (JSONValue.string(name).canonicalJSON + ":" + $0.canonicalJSON).utf16.count }
                }
                #expect(sizes.count == f.droppedAttributes.count, "case \(i): dropped an unknown attribute")
                #expect(sizes == sizes.sorted(by: >), "case \(i)")
            } catch {
                guard case .requiredMembersExceedLimit(let length, _) = error else {
                    Issue.record("unexpected \(error)")
                    continue
                }
                #expect(length > limit)
            }
        }
    }

    /// Fitting 5,000 attributes with a small cap finishes (sizes computed once; a quadratic
    /// fitting takes minutes here). The bound is a hang guard, not a timing claim: speed is
    /// measured by the context benchmark (docs/benchmarks-context.md).
    @Test func fittingManyAttributesFinishes() async throws {
        var attributes: [String: JSONValue] = [:]
        for i in 0..<5_000 { attributes["attribute\(i)"] = .string(String(repeating: "v", count: i % 50)) }
        let c = EvaluationContext(targetingKey: "u", attributes: attributes)
        let f = try await Wait.result("fitting 5,000 attributes", seconds: 60) { try c.fitted() }
        #expect(f.utf16Length <= 4096)
        #expect(f.droppedAttributes.count > 4_000)
    }
}
