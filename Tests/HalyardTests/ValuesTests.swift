import Testing

@testable import Halyard

@Suite struct ValuesTests {
    @Test func unknownErrorCodesMapToGeneral() {
        #expect(FlagErrorCode(wireValue: "SOMETHING_NEW") == .general)
        #expect(FlagErrorCode(wireValue: "FLAG_NOT_FOUND") == .flagNotFound)
    }

    @Test func unknownReasonsAreKept() {
        #expect(EvaluationReason(rawValue: "EXPERIMENT").rawValue == "EXPERIMENT")
    }

    @Test func literalsKeepIntegerFloatDistinction() {
        let i: JSONValue = 1
        let d: JSONValue = 1.0
        #expect(i == .int(1))
        #expect(d == .double(1.0))
        #expect(i != d)
    }
}
