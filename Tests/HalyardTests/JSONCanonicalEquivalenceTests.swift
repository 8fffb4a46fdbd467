import Foundation
import Testing

@_spi(Fuzzing) @testable import Halyard

/// Hand-made neighbours of the fuzz findings: Swift's canonical-equivalence string equality
/// decides what is a duplicate and which member is `targetingKey` (see docs/context.md).
@Suite struct JSONCanonicalEquivalenceTests {
    @Test func equivalentNamesAreDuplicates() {
        #expect(throws: JSONParseError(.duplicateMemberName("e\u{301}"), offset: 8)) {
            try JSONValue(parsing: "{\"\u{E9}\":1,\"e\u{301}\":2}")
        }
    }

    @Test func kelvinSignTargetingKeyIsStable() throws {
        let c = try EvaluationContext(json: "{\"targeting\u{212A}ey\":\"u1\",\"a\":1}")
        #expect(c.targetingKey == "u1")
        let f = try c.fitted()
        #expect(f.canonicalJSON == #"{"a":1,"kind":"user","targetingKey":"u1"}"#)
        #expect(try EvaluationContext(json: f.canonicalJSON).fitted().fingerprint == f.fingerprint)
    }
}
