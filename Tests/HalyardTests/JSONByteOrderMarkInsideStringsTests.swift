import Foundation
import Testing

@_spi(Fuzzing) @testable import Halyard

/// Found by FuzzJSON (artifact crash-83cc7cfa…): JSONSerialization drops a U+FEFF at the start of
/// a string, so the differential check failed. The strict parser must keep it (it is an ordinary
/// character inside a string), in values and in names, and the serializers must write it back.
@Suite struct JSONByteOrderMarkInsideStringsTests {
    @Test func leadingFEFFInStringsIsKept() throws {
        let bytes: [UInt8] = [0x7B, 0x22, 0xEF, 0xBB, 0xBF, 0x6B, 0x22, 0x3A, 0x22, 0xEF, 0xBB, 0xBF, 0x30, 0x22, 0x7D]
        let value = try JSONValue(parsing: Data(bytes))
        #expect(value == .object(["\u{FEFF}k": .string("\u{FEFF}0")]))
        #expect(value.canonicalJSON == "{\"\u{FEFF}k\":\"\u{FEFF}0\"}")
        #expect(Array(value.canonicalJSON.utf8) == bytes)
        #expect(try JSONValue(parsing: value.jsonString) == value)
    }

    @Test func fullArtifactRoundTrips() throws {
        let text =
            "{\"tagretingKey\":\"u\",\"name\":\"\u{FEFF}0e9\\u20ac\\ud83d\\ude00\",\"ctl\":\"\\/00b\\f\\n\\r\\tr\\t\\\"\\\\\\/\"}"
        let value = try JSONValue(parsing: text)
        guard case .object(let members) = value else { Issue.record("not an object"); return }
        #expect(members["name"] == .string("\u{FEFF}0e9€😀"))
        #expect(members["ctl"] == .string("/00b\u{C}\n\r\tr\t\"\\/"))
        #expect(try JSONValue(parsing: value.canonicalJSON).canonicalJSON == value.canonicalJSON)
        FuzzRegressionTests.checkContextInvariants(Array(text.utf8))
    }
}
