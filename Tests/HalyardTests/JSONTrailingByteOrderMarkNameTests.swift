import Foundation
import Testing

@_spi(Fuzzing) @testable import Halyard

/// Found by CI's FuzzJSON run (artifact crash-451e38a0…): `{"fb3":3,"\u{FEFF}1":49,"1\u{FEFF}":4}`.
/// Foundation strips only a leading U+FEFF, so it reads three names; the harness stripped every
/// U+FEFF and counted two. The parser was right; the harness now strips only a leading mark.
@Suite struct JSONTrailingByteOrderMarkNameTests {
    @Test func leadingAndTrailingFEFFNamesAreThreeMembers() throws {
        let bytes: [UInt8] =
            Array(#"{"fb3":3,""#.utf8) + [0xEF, 0xBB, 0xBF] + Array(#"1":49,"1"#.utf8) + [0xEF, 0xBB, 0xBF]
            + Array(#"":4}"#.utf8)
        let value = try JSONValue(parsing: Data(bytes))
        #expect(value == .object(["fb3": 3, "\u{FEFF}1": 49, "1\u{FEFF}": 4]))
        FuzzRegressionTests.checkContextInvariants(bytes)
    }
}
