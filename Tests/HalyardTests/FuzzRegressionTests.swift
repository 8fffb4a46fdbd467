import Foundation
import Testing

@_spi(Fuzzing) @testable import Halyard

/// Inputs found by the libFuzzer harnesses in `Fuzz/` (and hand-made neighbours of them).
/// Each one must give its own answer (a typed error or a context) and keep the harness invariants.
@Suite struct FuzzRegressionTests {
    /// The FuzzContext invariants, as the harness checks them.
    static func checkContextInvariants(_ bytes: [UInt8]) {
        guard let context = try? EvaluationContext(json: Data(bytes)) else { return }
        guard let fitted = try? context.fitted() else { return }
        #expect(fitted.utf16Length <= 4096)
        let again = try? EvaluationContext(json: Data(fitted.canonicalJSON.utf8)).fitted()
        #expect(again?.canonicalJSON == fitted.canonicalJSON)
        #expect(again?.fingerprint == fitted.fingerprint)
    }

    /// What a hand-written input must give: a refusal with this exact error, or a context whose
    /// fitted canonical form is this text.
    enum Answer: Sendable, Equatable {
        case refused(ContextError)
        case fitted(String)

        /// A truncated document: the end of input, reported at the input's length.
        static func truncated(at offset: Int) -> Answer {
            .refused(.invalidJSON(JSONParseError(.unexpectedEndOfInput, offset: offset)))
        }
    }

    struct EdgeCase: Sendable, CustomTestStringConvertible {
        var text: String
        var answer: Answer
        var testDescription: String { text }
    }

    /// Each input with the answer it must give (a changed answer fails here, not only a crash),
    /// then the harness invariants. A context without a key has `targetingKey` "" (docs/context.md);
    /// numbers are written as ECMAScript writes them (`-0` → `0`, 2^63 as a double, `1e+308`); an
    /// underflow reads as zero.
    @Test(arguments: [
        // Truncated input inside escapes and surrogate pairs: the end of input, at the end.
        EdgeCase(text: #"{"a":"\ud83d\"#, answer: .truncated(at: 13)),
        EdgeCase(text: #"{"a":"\ud83d\u"#, answer: .truncated(at: 14)),
        EdgeCase(text: #"{"a":"\ud83d\ude0"#, answer: .truncated(at: 17)),
        EdgeCase(text: #"{"a":"\"#, answer: .truncated(at: 7)),
        // Numbers at every edge.
        EdgeCase(text: #"{"a":-0.0e-0}"#, answer: .fitted(#"{"a":0,"kind":"user","targetingKey":""}"#)),
        EdgeCase(text: #"{"a":1E-400}"#, answer: .fitted(#"{"a":0,"kind":"user","targetingKey":""}"#)),
        EdgeCase(
            text: #"{"a":9223372036854775808}"#,
            answer: .fitted(#"{"a":9223372036854776000,"kind":"user","targetingKey":""}"#)),
        EdgeCase(
            text: #"{"a":-9223372036854775809}"#,
            answer: .fitted(#"{"a":-9223372036854776000,"kind":"user","targetingKey":""}"#)),
        EdgeCase(text: #"{"a":1e308}"#, answer: .fitted(#"{"a":1e+308,"kind":"user","targetingKey":""}"#)),
        EdgeCase(
            text: #"{"a":0.0000000000000000000000000000000000000001}"#,
            answer: .fitted(#"{"a":1e-40,"kind":"user","targetingKey":""}"#)),
        // Whitespace and empty containers.
        EdgeCase(text: " {\r\n\t} ", answer: .fitted(#"{"kind":"user","targetingKey":""}"#)),
        EdgeCase(text: #"{"":{"":[[],{}]}}"#, answer: .fitted(#"{"":{"":[[],{}]},"kind":"user","targetingKey":""}"#)),
    ])
    func handWrittenEdgeCases(_ edge: EdgeCase) {
        let got: Answer
        do {
            got = .fitted(try EvaluationContext(json: Data(edge.text.utf8)).fitted().canonicalJSON)
        } catch {
            got = .refused(error)
        }
        #expect(got == edge.answer, "\(edge.text)")
        Self.checkContextInvariants(Array(edge.text.utf8))
    }
}
