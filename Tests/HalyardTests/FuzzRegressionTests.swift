import Foundation
import Testing

@_spi(Fuzzing) @testable import Halyard

/// Inputs found by the libFuzzer harnesses in `Fuzz/` (and hand-made neighbours of them).
/// Each one must be handled without crashing and keep the harness invariants.
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

    @Test(arguments: [
        // Truncated input inside escapes and surrogate pairs.
        #"{"a":"\ud83d\"#, #"{"a":"\ud83d\u"#, #"{"a":"\ud83d\ude0"#, #"{"a":"\"#,
        // Numbers at every edge.
        #"{"a":-0.0e-0}"#, #"{"a":1E-400}"#, #"{"a":9223372036854775808}"#, #"{"a":-9223372036854775809}"#,
        #"{"a":1e308}"#, #"{"a":0.0000000000000000000000000000000000000001}"#,
        // Whitespace and empty containers.
        " {\r\n\t} ", #"{"":{"":[[],{}]}}"#,
    ])
    func handWrittenEdgeCases(text: String) {
        Self.checkContextInvariants(Array(text.utf8))
    }
}
