import Foundation
import Testing

@_spi(Fuzzing) @testable import Halyard

/// Found by FuzzJSON (artifact crash-6f7ede63…): `{"fb3":3,"\u{FEFF}1":49,"1":4}`. The names
/// `"\u{FEFF}1"` and `"1"` are different (Foundation merges them after stripping U+FEFF, which
/// broke the differential's member count). The strict parser must keep three members.
@Suite struct JSONByteOrderMarkNameCollisionTests {
    @Test func namesDifferingByFEFFAreDistinct() throws {
        let bytes: [UInt8] = Array(#"{"fb3":3,""#.utf8) + [0xEF, 0xBB, 0xBF] + Array(#"1":49,"1":4}"#.utf8)
        let value = try JSONValue(parsing: Data(bytes))
        #expect(value == .object(["fb3": 3, "\u{FEFF}1": 49, "1": 4]))
        #expect(value.canonicalJSON == "{\"1\":4,\"fb3\":3,\"\u{FEFF}1\":49}")
        FuzzRegressionTests.checkContextInvariants(bytes)
    }
}
