import Foundation
import Testing

@testable import Halyard

@Suite struct EvaluationContextTests {
    func contextError(_ json: String, limits: JSONParsingLimits = .context) -> ContextError? {
        do throws(ContextError) {
            _ = try EvaluationContext(json: Data(json.utf8), limits: limits)
            return nil
        } catch {
            return error
        }
    }

    @Test func initDefaults() {
        let c = EvaluationContext(targetingKey: "u1")
        #expect(c.kind == "user")
        #expect(c.attributes.isEmpty)
        #expect(c.privateAttributes.isEmpty)
        #expect(!c.isAnonymous)
        #expect(EvaluationContext.anonymous.isAnonymous)
    }

    @Test func parsesWireForm() throws {
        let json = #"{"targetingKey":"u1","kind":"tenant","plan":"pro","n":3,"org":{"kind":"inner","id":1.5}}"#
        let c = try EvaluationContext(json: Data(json.utf8))
        #expect(c.targetingKey == "u1")
        #expect(c.kind == "tenant")
        #expect(c.attributes == ["plan": "pro", "n": .int(3), "org": ["kind": "inner", "id": .double(1.5)]])
        #expect(c.privateAttributes.isEmpty)
        #expect(try EvaluationContext(json: json) == c)
    }

    @Test func missingMembersMeanAnonymousUser() throws {
        let c = try EvaluationContext(json: #"{"plan":"free"}"#)
        #expect(c.targetingKey == "")
        #expect(c.isAnonymous)
        #expect(c.kind == "user")
        #expect(c.attributes == ["plan": "free"])
        #expect(try EvaluationContext(json: "{}") == EvaluationContext.anonymous)
    }

    @Test func privateAttributesArePassedByTheCaller() throws {
        let c = try EvaluationContext(json: #"{"targetingKey":"u","email":"a@b.c"}"#, privateAttributes: ["email"])
        #expect(c.privateAttributes == ["email"])
        #expect(c.attributes["email"] == "a@b.c")
        // A member named privateAttributes is an ordinary attribute.
        let d = try EvaluationContext(json: #"{"privateAttributes":["email"]}"#)
        #expect(d.privateAttributes.isEmpty)
        #expect(d.attributes["privateAttributes"] == ["email"])
    }

    @Test func typedErrors() {
        #expect(contextError("[1]") == .notAnObject(found: "array"))
        #expect(contextError(#""u1""#) == .notAnObject(found: "string"))
        #expect(contextError(#"{"targetingKey":42}"#) == .nonStringTargetingKey(found: "integer"))
        #expect(contextError(#"{"targetingKey":null}"#) == .nonStringTargetingKey(found: "null"))
        #expect(contextError(#"{"kind":true}"#) == .nonStringKind(found: "boolean"))
        #expect(contextError(#"{"kind":"User"}"#) == .invalidKind("User"))
        #expect(contextError(#"{"kind":""}"#) == .invalidKind(""))
        #expect(contextError(#"{"a":1,"a":2}"#) == .invalidJSON(JSONParseError(.duplicateMemberName("a"), offset: 7)))
        #expect(contextError(#"{"a":1,"a":2}"#)?.offset == 7)
        #expect(contextError("{\"a\":\"\\ud800\"}")?.offset == 6)
        #expect(contextError(#"{"targetingKey":"u"} x"#) == .invalidJSON(JSONParseError(.trailingData, offset: 21)))
    }

    @Test func defaultLimits() {
        let big = "{\"a\":\"" + String(repeating: "x", count: 70_000) + "\"}"
        #expect(contextError(big) == .invalidJSON(JSONParseError(.inputTooLarge(limit: 65_536), offset: 65_536)))
        let ok32 = "{\"a\":" + String(repeating: "[", count: 31) + String(repeating: "]", count: 31) + "}"
        #expect(contextError(ok32) == nil)
        let deep33 = "{\"a\":" + String(repeating: "[", count: 32) + String(repeating: "]", count: 32) + "}"
        #expect(contextError(deep33) == .invalidJSON(JSONParseError(.nestingTooDeep(limit: 32), offset: 36)))
        let many = "{" + (0..<1_001).map { "\"a\($0)\":0" }.joined(separator: ",") + "}"
        #expect(contextError(many)?.offset != nil)
        if case .invalidJSON(let e)? = contextError(many) {
            #expect(e.kind == .tooManyMembers(limit: 1_000))
        } else {
            Issue.record("expected tooManyMembers")
        }
        // Bigger limits per call.
        let limits = JSONParsingLimits(maxInputBytes: 1 << 20, maxDepth: 32, maxObjectMembers: 2_000)
        #expect(contextError(big, limits: limits) == nil)
        #expect(contextError(many, limits: limits) == nil)
    }

    @Test func kindValidation() {
        #expect(EvaluationContext.isValidKind("user"))
        #expect(EvaluationContext.isValidKind("a-b_c-09"))
        #expect(EvaluationContext.isValidKind(String(repeating: "k", count: 64)))
        #expect(!EvaluationContext.isValidKind(String(repeating: "k", count: 65)))
        #expect(!EvaluationContext.isValidKind(""))
        #expect(!EvaluationContext.isValidKind("Kind"))
        #expect(!EvaluationContext.isValidKind("a b"))
        #expect(!EvaluationContext.isValidKind("é"))
        #expect(!EvaluationContext.isValidKind("a.b"))
    }

    @Test func validateReportsProblems() {
        func validationError(_ c: EvaluationContext) -> ContextError? {
            do throws(ContextError) { try c.validate(); return nil } catch { return error }
        }
        #expect(validationError(EvaluationContext(targetingKey: "u", kind: "org")) == nil)
        #expect(validationError(EvaluationContext(targetingKey: "u", kind: "Bad")) == .invalidKind("Bad"))
        #expect(
            validationError(EvaluationContext(targetingKey: "u", attributes: ["kind": "x"]))
                == .reservedAttributeName("kind"))
        #expect(
            validationError(EvaluationContext(targetingKey: "u", attributes: ["targetingKey": "x"]))
                == .reservedAttributeName("targetingKey"))
        #expect(
            validationError(EvaluationContext(targetingKey: "u", attributes: ["x": [.double(.nan)]]))
                == .nonFiniteNumber(attribute: "x"))
        // fitted() validates first.
        #expect(throws: ContextError.invalidKind("Bad")) {
            try EvaluationContext(targetingKey: "u", kind: "Bad").fitted()
        }
    }

    @Test func hashableAndWireValue() throws {
        let a = EvaluationContext(targetingKey: "u", attributes: ["x": 1, "y": 2], privateAttributes: ["y"])
        let b = EvaluationContext(targetingKey: "u", attributes: ["y": 2, "x": 1], privateAttributes: ["y"])
        #expect(a == b)
        #expect(Set([a, b]).count == 1)
        #expect(a.publicWireValue == ["targetingKey": "u", "kind": "user", "x": 1])
        // The wire form parses back into the public part of the context.
        let back = try EvaluationContext(wireValue: a.publicWireValue)
        #expect(back == EvaluationContext(targetingKey: "u", attributes: ["x": 1]))
    }

    @Test func errorDescriptions() throws {
        #expect(ContextError.invalidKind("A").description.contains("a-z 0-9 - _"))
        #expect(
            try #require(contextError(#"{"a":1,"a":2}"#)).description
                == #"invalid context: invalid JSON at byte 7: duplicate member name "a""#)
    }
}
