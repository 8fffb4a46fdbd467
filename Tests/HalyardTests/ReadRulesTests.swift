import Testing

@testable import Halyard

/// The read rules (README, docs/architecture.md), one test per rule.
@Suite struct ReadRulesTests {
    static func client(_ flags: [ServedFlag], source: Snapshot.Source = .network) -> FlagClient {
        let client = FlagClient(mode: .online, exposureSink: nil)
        client.store.publish(Snapshot(flags: flags, source: source))
        return client
    }

    @Test func offlineValuesServeWithStaticReason() throws {
        let flags = try FlagClient(offlineValues: ["checkout.new": .bool(true), "max.items": .int(3)])
        #expect(flags.bool("checkout.new", default: false) == true)
        #expect(flags.int("max.items", default: 0) == 3)
        let detail = flags.boolDetail("checkout.new", default: false)
        #expect(detail.reason == .staticValue)
        #expect(detail.errorCode == nil)
        #expect(detail.key == "checkout.new")
    }

    @Test func beforeValuesExistReadsServeDefaultNotReady() {
        let client = FlagClient(mode: .online, exposureSink: nil)
        #expect(client.bool("a", default: true) == true)
        let detail = client.intDetail("a", default: 7)
        #expect(detail.value == 7)
        #expect(detail.errorCode == .providerNotReady)
        #expect(detail.reason == .error)
        client.readCounters.isFatal = true
        #expect(client.stringDetail("a", default: "d").errorCode == .providerFatal)
        #expect(client.readCounters.value(.notReady) == 3)
    }

    @Test func missingKeyIsFlagNotFoundAndKeysAreCaseSensitive() {
        let client = Self.client([ServedFlag(key: "Feature", value: .bool(true))])
        #expect(client.bool("feature", default: false) == false)
        let detail = client.boolDetail("feature", default: false)
        #expect(detail.errorCode == .flagNotFound)
        #expect(detail.reason == .error)
        #expect(client.bool("Feature", default: false) == true)
        #expect(client.readCounters.value(.flagNotFound) == 2)
    }

    @Test func keysCompareByBytesNotUnicodeEquivalence() {
        // "é" precomposed vs "e" + combining acute: equal as Swift Strings, different keys.
        let client = Self.client([ServedFlag(key: "caf\u{E9}", value: .bool(true))])
        #expect(client.bool("caf\u{E9}", default: false) == true)
        #expect(client.boolDetail("cafe\u{301}", default: false).errorCode == .flagNotFound)
    }

    @Test func typeMismatchServesDefault() {
        let client = Self.client([
            ServedFlag(key: "s", value: .string("x")),
            ServedFlag(key: "b", value: .bool(true)),
        ])
        #expect(client.bool("s", default: false) == false)
        #expect(client.boolDetail("s", default: false).errorCode == .typeMismatch)
        #expect(client.stringDetail("b", default: "d").errorCode == .typeMismatch)
        #expect(client.intDetail("b", default: 1).value == 1)
        #expect(client.readCounters.value(.typeMismatch) == 4)
    }

    @Test func intAndDoubleRules() {
        let client = Self.client([
            ServedFlag(key: "i", value: .int(42)),
            ServedFlag(key: "big", value: .int(Int64.max)),
            ServedFlag(key: "f", value: .double(2.5)),
            ServedFlag(key: "whole", value: .double(3.0)),
        ])
        #expect(client.int("i", default: 0) == 42)
        #expect(client.double("i", default: 0) == 42.0)  // integers widen
        #expect(client.int("big", default: 0) == Int(Int64.max))
        #expect(client.double("f", default: 0) == 2.5)
        #expect(client.intDetail("f", default: 9).errorCode == .typeMismatch)  // never narrows
        #expect(client.intDetail("whole", default: 9).errorCode == .typeMismatch)  // 3.0 is a float literal
        #expect(client.doubleDetail("i", default: 0).value == 42.0)
    }

    @Test func servedErrorCodesServeDefaultWithThatCode() {
        let client = Self.client([
            ServedFlag(
                key: "p", value: .bool(true), reason: .targetingMatch, errorCode: .parseError, errorMessage: "bad"),
            ServedFlag(key: "g", value: nil, reason: .unknown, errorCode: FlagErrorCode(wireValue: "NEW_CODE")),
        ])
        let p = client.boolDetail("p", default: false)
        #expect(p.value == false)  // an item with an error code is a failure whatever else it has
        #expect(p.errorCode == .parseError)
        #expect(p.reason == .error)
        #expect(p.errorMessage == "bad")
        #expect(client.bool("p", default: false) == false)
        #expect(client.detail("g", default: .null).errorCode == .general)
    }

    @Test func codeDefaultIsNotAnError() {
        let client = Self.client([
            ServedFlag(key: "d", value: nil, variant: "off", reason: .disabled),
            ServedFlag(key: "e", value: nil, reason: .defaultValue),
        ])
        let d = client.boolDetail("d", default: true)
        #expect(d.value == true)
        #expect(d.errorCode == nil)
        #expect(d.reason == .disabled)
        #expect(d.variant == "off")
        #expect(client.stringDetail("e", default: "x").reason == .defaultValue)
        #expect(client.readCounters.value(.typeMismatch) == 0)
    }

    @Test func unknownReasonsAreKeptAndMetadataCarried() {
        let client = Self.client([
            ServedFlag(
                key: "x", value: .string("v"), variant: "blue", reason: EvaluationReason(rawValue: "EXPERIMENT"),
                metadata: ["team": .string("growth"), "weight": .number(0.5), "on": .bool(true)])
        ])
        let detail = client.stringDetail("x", default: "")
        #expect(detail.reason.rawValue == "EXPERIMENT")
        #expect(detail.variant == "blue")
        #expect(detail.metadata["team"] == .string("growth"))
        #expect(detail.metadata.count == 3)
    }

    @Test func cachedReasonIsServedAsGiven() {
        let client = Self.client([ServedFlag(key: "c", value: .bool(true), reason: .cached)], source: .cache)
        #expect(client.boolDetail("c", default: false).reason == .cached)
    }

    @Test func jsonReadsAcceptAnyType() {
        let theme: JSONValue = ["color": "teal", "sizes": [1, 2.5]]
        let client = Self.client([
            ServedFlag(key: "theme", value: theme),
            ServedFlag(key: "nothing", value: .null),
        ])
        #expect(client.json("theme", default: .object([:])) == theme)
        #expect(client.detail("nothing", default: .string("d")).value == .null)
        #expect(client.detail("nothing", default: .string("d")).errorCode == nil)
    }

    @Test func offlineValuesRejectBadInput() {
        #expect(throws: FlagClientError.emptyFlagKey) { try FlagClient(offlineValues: ["": .bool(true)]) }
        #expect(throws: FlagClientError.invalidOfflineValue(key: "n", reason: "contains a non-finite number")) {
            try FlagClient(offlineValues: ["n": .array([.double(.nan)])])
        }
        #expect(throws: FlagClientError.invalidOfflineValue(key: "i", reason: "contains a non-finite number")) {
            try FlagClient(offlineValues: ["i": .object(["x": .double(.infinity)])])
        }
    }

    @Test func setOfflineValuesPublishesAtomicallyAndRejectsWithoutChange() throws {
        let flags = try FlagClient(offlineValues: ["a": .bool(true)])
        try flags.setOfflineValues(["a": .bool(false), "b": .int(2)])
        #expect(flags.bool("a", default: true) == false)
        #expect(flags.int("b", default: 0) == 2)
        #expect(throws: FlagClientError.self) { try flags.setOfflineValues(["a": .double(.nan)]) }
        #expect(flags.int("b", default: 0) == 2)
        let online = FlagClient(mode: .online, exposureSink: nil)
        #expect(throws: FlagClientError.notOffline) { try online.setOfflineValues([:]) }
    }

    @Test func flagObjectView() {
        let client = Self.client([
            ServedFlag(
                key: "new_checkout",
                value: ["enabled": true, "title": "New", "max": 5, "ratio": 0.5, "opts": ["a": 1], "list": [1, 2]]),
            ServedFlag(key: "off", value: ["enabled": false]),
            ServedFlag(key: "plain", value: .bool(true)),
        ])
        let view = client.flagObject("new_checkout")
        #expect(view.isEnabled)
        #expect(view.string(forProperty: "title", default: "d") == "New")
        #expect(view.string(forProperty: "max", default: "d") == "d")
        #expect(view.number(forProperty: "max", default: 0) == 5)
        #expect(view.number(forProperty: "ratio", default: 0) == 0.5)
        #expect(view.bool(forProperty: "title", default: true) == true)
        #expect(view.object(forProperty: "opts") == ["a": 1])
        #expect(view.array(forProperty: "list") == [1, 2])
        #expect(view.array(forProperty: "opts") == nil)
        #expect(client.flagObject("off").isEnabled == false)
        #expect(client.flagObject("plain").isEnabled == false)
        #expect(client.flagObject("missing").isEnabled == false)
    }
}
