import HalyardTesting
import Testing

@testable import Halyard

/// One read surface (``FlagReading``) for every reader, and ``Evaluation`` as one reference to
/// the served flag's detail (docs/architecture.md, "One read surface", "Why an Evaluation is
/// one reference").
@Suite struct FlagReadingTests {
    static let served: [ServedFlag] = [
        ServedFlag(
            key: "checkout.new", value: .bool(true), variant: "on", reason: .targetingMatch,
            metadata: ["team": .string("payments"), "rollout": .number(0.5)]),
        ServedFlag(key: "banner.text", value: .string("Hello"), variant: "greeting", reason: .split),
        ServedFlag(key: "max.items", value: .int(7)),
        ServedFlag(key: "discount", value: .double(0.25)),
        ServedFlag(key: "theme", value: .object(["color": .string("blue")])),
        ServedFlag(
            key: "broken", value: nil, variant: "v1", reason: .error, errorCode: .parseError,
            errorMessage: "bad targeting", metadata: ["owner": .string("ops")]),
        ServedFlag(key: "code.default", value: nil, variant: "control", reason: .defaultValue),
    ]
    static let keys = served.map(\.key) + ["nope", "Checkout.new"]

    static func client(_ flags: [ServedFlag] = served, liveCounter: LiveCounter? = nil) -> FlagClient {
        let client = FlagClient(mode: .online, exposureSink: nil)
        client.store.publish(Snapshot(flags: flags, source: .network, liveCounter: liveCounter))
        return client
    }

    static func view(_ flags: [ServedFlag] = served) -> ContextFlags {
        ContextFlags(
            snapshot: Snapshot(flags: flags, source: .network),
            environment: ServiceReadEnvironment(sink: nil, counters: ReadCounters()))
    }

    /// Every read of the surface, written once against the protocol (specialised per caller).
    static func everyRead(_ flags: some FlagReading, _ key: String) -> [String] {
        [
            "\(flags.bool(key, default: false))", "\(flags.int(key, default: -1))",
            "\(flags.double(key, default: -1))", "\(flags.string(key, default: "d"))",
            "\(flags.json(key, default: .null))", describe(flags.boolDetail(key, default: false)),
            describe(flags.intDetail(key, default: -1)), describe(flags.doubleDetail(key, default: -1)),
            describe(flags.stringDetail(key, default: "d")), describe(flags.detail(key, default: .null)),
            describe(flags.evaluation(key, default: JSONValue.bool(false))),
            describe(flags.jsonDetail(key, default: .null)),
        ]
    }

    /// The same through an existential (the unspecialised path: witness-table calls).
    static func everyReadThroughAnExistential(_ flags: any FlagReading, _ key: String) -> [String] {
        everyRead(flags, key)
    }

    static func describe<Value>(_ e: Evaluation<Value>) -> String {
        "\(e.key)|\(e.value)|\(e.variant ?? "-")|\(e.reason)|\(e.errorCode.map(\.rawValue) ?? "-")|"
            + "\(e.errorMessage ?? "-")|\(e.metadata.sorted { $0.key < $1.key })"
    }

    /// `detail` is `jsonDetail` under its shorter name (docs/public-api.md): the same result for
    /// every key, served or not, on every reader.
    @Test func detailIsJSONDetail() {
        let readers: [any FlagReading] = [Self.client(), Self.view(), StaticFlags(flags: Self.served)]
        for reader in readers {
            for key in Self.keys {
                #expect(
                    Self.describe(reader.detail(key, default: .string("d")))
                        == Self.describe(reader.jsonDetail(key, default: .string("d"))), "\(key)")
            }
        }
    }

    @Test func flagClientContextFlagsAndTheTestDoubleAnswerEveryReadAlike() {
        let client = Self.client()
        let view = Self.view()
        let double = StaticFlags(flags: Self.served)
        for key in Self.keys {
            let expected = Self.everyRead(client, key)
            #expect(Self.everyRead(view, key) == expected, "\(key)")
            #expect(Self.everyRead(double, key) == expected, "\(key)")
            #expect(Self.everyReadThroughAnExistential(client, key) == expected, "\(key)")
            #expect(Self.everyReadThroughAnExistential(view, key) == expected, "\(key)")
        }
        // The rules themselves, through the shared surface.
        #expect(client.bool("checkout.new", default: false) && !client.bool("Checkout.new", default: false))
        #expect(client.double("max.items", default: 0) == 7 && client.int("discount", default: 3) == 3)
        let broken = client.stringDetail("broken", default: "d")
        #expect(broken.errorCode == .parseError && broken.errorMessage == "bad targeting" && broken.reason == .error)
        #expect(broken.variant == "v1" && broken.metadata == ["owner": .string("ops")])
        let codeDefault = client.boolDetail("code.default", default: true)
        #expect(codeDefault.value && codeDefault.errorCode == nil && codeDefault.reason == .defaultValue)
        #expect(codeDefault.variant == "control" && codeDefault.errorMessage == nil)
        // Failures are counted per reader, the same way.
        let (freshClient, freshView, freshDouble) = (Self.client(), Self.view(), StaticFlags(flags: Self.served))
        for key in Self.keys {
            _ = (Self.everyRead(freshClient, key), Self.everyRead(freshView, key), Self.everyRead(freshDouble, key))
        }
        #expect(freshClient.stats.reads == freshDouble.readStats && freshClient.stats.reads.typeMismatch > 0)
        #expect(freshClient.readCounters.stats == freshView.environment.counters.stats)
    }

    /// `FlagClient.pinnedFlags()` answers every read from the values served when it was taken,
    /// after the client has published others, with the client's read rules and counters; before
    /// any values it serves defaults with `PROVIDER_NOT_READY`.
    @Test func aPinnedViewAnswersFromTheValuesOfItsMomentWithTheClientsRules() {
        let client = Self.client()
        let pinned = client.pinnedFlags()
        for key in Self.keys { #expect(Self.everyRead(pinned, key) == Self.everyRead(client, key), "\(key)") }
        client.store.publish(Snapshot(flags: [ServedFlag(key: "max.items", value: .int(8))], source: .network))
        #expect(client.int("max.items", default: 0) == 8 && client.string("banner.text", default: "d") == "d")
        #expect(pinned.int("max.items", default: 0) == 7 && pinned.string("banner.text", default: "d") == "Hello")
        #expect(pinned.hasValues && pinned.flagCount == Self.served.count)
        let before = client.stats.reads.flagNotFound
        _ = pinned.bool("nope", default: false)
        #expect(client.stats.reads.flagNotFound == before + 1)
        let empty = FlagClient(mode: .online, exposureSink: nil).pinnedFlags()
        #expect(!empty.hasValues && empty.unavailableReason == .providerNotReady)
        #expect(empty.boolDetail("checkout.new", default: true).errorCode == .providerNotReady)
    }

    @Test func staticFlagsServeDictionaryValuesWithStaticReason() {
        let flags = StaticFlags(["checkout.new": .bool(true), "max.items": .int(3), "title": .string("Pay")])
        #expect(flags.bool("checkout.new", default: false) && flags.int("max.items", default: 0) == 3)
        #expect(flags.string("title", default: "") == "Pay")
        #expect(
            flags.boolDetail("checkout.new", default: false)
                == Evaluation(key: "checkout.new", value: true, reason: .staticValue))
        let mismatch = flags.intDetail("title", default: 9)
        #expect(mismatch.value == 9 && mismatch.errorCode == .typeMismatch)
        #expect(flags.boolDetail("nope", default: true).errorCode == .flagNotFound)
        #expect(flags.readStats == ReadStats(flagNotFound: 1, typeMismatch: 1))
        // The last of two flags with one key is served.
        let twice = StaticFlags(flags: [ServedFlag(key: "a", value: .int(1)), ServedFlag(key: "a", value: .int(2))])
        #expect(twice.int("a", default: 0) == 2)
    }

    @Test func errorMessagesSayWhatWentWrong() {
        let client = Self.client()
        #expect(
            client.intDetail("banner.text", default: 0).errorMessage == "flag 'banner.text' is string, not int")
        #expect(client.boolDetail("max.items", default: false).errorMessage == "flag 'max.items' is integer, not bool")
        #expect(client.intDetail("code.default", default: 0).errorMessage == nil)
        #expect(client.boolDetail("nope", default: false).errorMessage == "flag 'nope' is not in the served flags")
        let empty = FlagClient(mode: .online, exposureSink: nil)
        let notReady = empty.boolDetail("a", default: false)
        #expect(
            notReady.errorCode == .providerNotReady && notReady.errorMessage == "no flag values have been loaded yet")
        #expect(notReady.variant == nil && notReady.metadata.isEmpty && notReady.reason == .error)
        empty.readCounters.isFatal = true
        #expect(empty.boolDetail("a", default: false).errorMessage == "the client cannot serve values")
        let invalid = ContextFlags(
            unavailable: .invalidContext, fingerprint: nil,
            environment: ServiceReadEnvironment(sink: nil, counters: ReadCounters()))
        let detail = invalid.doubleDetail("a", default: 1)
        #expect(detail.errorCode == .invalidContext && detail.value == 1)
        #expect(detail.errorMessage == "the evaluation context is invalid; nothing was fetched for it")
    }

    /// A detail refers to the served flag's detail object, not to the snapshot: it says the same
    /// after the snapshot is replaced (and freed) many times.
    @Test func aDetailSaysTheSameAfterItsSnapshotIsReplacedManyTimes() async throws {
        let live = LiveCounter()
        let client = Self.client(liveCounter: live)
        let bool = client.boolDetail("checkout.new", default: false)
        let json = client.detail("theme", default: .null)
        let string = client.stringDetail("banner.text", default: "d")
        let broken = client.intDetail("broken", default: 5)
        let mismatch = client.intDetail("banner.text", default: 6)
        let before = [
            Self.describe(bool), Self.describe(json), Self.describe(string), Self.describe(broken),
            Self.describe(mismatch),
        ]
        for round in 0..<2_000 {
            client.store.publish(
                Snapshot(
                    flags: [
                        ServedFlag(
                            key: "checkout.new", value: .bool(round % 2 == 0), variant: "v\(round)", reason: .split,
                            metadata: ["round": .number(Double(round))]),
                        ServedFlag(key: "theme", value: .string("r\(round)"), variant: "t\(round)"),
                        ServedFlag(key: "banner.text", value: .int(Int64(round))),
                        ServedFlag(key: "broken", value: .int(Int64(round)), reason: .staticValue),
                    ], source: .network, liveCounter: live))
        }
        #expect(
            [
                Self.describe(bool), Self.describe(json), Self.describe(string), Self.describe(broken),
                Self.describe(mismatch),
            ]
                == before)
        #expect(
            bool
                == Evaluation(
                    key: "checkout.new", value: true, variant: "on", reason: .targetingMatch,
                    metadata: ["team": .string("payments"), "rollout": .number(0.5)]))
        #expect(json.value == .object(["color": .string("blue")]) && json.variant == nil)
        #expect(string == Evaluation(key: "banner.text", value: "Hello", variant: "greeting", reason: .split))
        #expect(broken.errorMessage == "bad targeting" && broken.errorCode == .parseError && broken.value == 5)
        #expect(mismatch.errorMessage == "flag 'banner.text' is string, not int")
        // The replaced snapshots are gone (the details do not pin them): only the current one
        // is alive, though the details read from the first are.
        try await Wait.until("replaced snapshots freed") { live.value == 1 }
        #expect(client.int("banner.text", default: 0) == 1_999)
    }

    /// A read of a served flag keeps its key in the flag's detail (one retain, not the caller's
    /// key as well): it is the key read, byte for byte, however the key was built, and stays the
    /// evaluation's own through every setter.
    @Test func anEvaluationsKeyIsTheKeyReadWhereverItIsKept() {
        let long = "checkout.new-flow.rollout-2026"
        let client = Self.client(Self.served + [ServedFlag(key: long, value: .int(3), variant: "three")])
        // Built at run time: a heap string, not the literal the snapshot was built from.
        let runtime = String(decoding: Array(long.utf8), as: UTF8.self)
        for key in Self.keys + [runtime] {
            #expect(client.boolDetail(key, default: false).key == key)
            #expect(client.intDetail(key, default: 0).key == key)
            #expect(client.stringDetail(key, default: "").key == key)
            #expect(client.detail(key, default: .null).key == key)
        }
        let heap = client.intDetail(runtime, default: 0)
        #expect(heap.key == long && heap.value == 3 && heap.variant == "three")
        var changed = client.boolDetail("checkout.new", default: false)
        changed.reason = .split
        #expect(changed.key == "checkout.new" && changed.reason == .split && changed.variant == "on")
        var renamed = client.stringDetail("banner.text", default: "")
        renamed.key = "other"
        #expect(renamed.key == "other" && renamed.value == "Hello" && renamed.variant == "greeting")
        renamed.variant = "x"
        #expect(renamed.key == "other" && renamed.variant == "x" && renamed.reason == .split)
        #expect(client.stringDetail("banner.text", default: "").key == "banner.text")
        var missing = client.boolDetail("nope", default: true)
        missing.metadata = ["a": .bool(true)]
        #expect(missing.key == "nope" && missing.errorCode == .flagNotFound)
        #expect(Evaluation(key: "k", value: 1, reason: .staticValue).key == "k")
    }

    @Test func anEvaluationIsAValue() {
        let client = Self.client()
        let read = client.boolDetail("checkout.new", default: false)
        var copy = read
        copy.variant = "changed"
        copy.metadata["team"] = .string("growth")
        #expect(read.variant == "on" && read.metadata["team"] == .string("payments"))
        #expect(
            copy.variant == "changed" && copy.metadata["team"] == .string("growth") && copy.reason == .targetingMatch)
        #expect(client.boolDetail("checkout.new", default: false).variant == "on")
        // Setting the error fields of a success, and clearing them on an error.
        var failed = read
        failed.errorCode = .general
        failed.errorMessage = "x"
        failed.reason = .error
        #expect(
            failed.errorCode == .general && failed.errorMessage == "x" && failed.variant == "on"
                && read.errorCode == nil)
        var cleared = client.boolDetail("nope", default: true)
        cleared.errorCode = nil
        cleared.errorMessage = nil
        #expect(
            cleared.errorCode == nil && cleared.errorMessage == nil && cleared.reason == .error && cleared.key == "nope"
        )
        // Equality and hashing look at the public properties, however each was produced.
        let built = Evaluation(
            key: "checkout.new", value: true, variant: "on", reason: .targetingMatch,
            metadata: ["team": .string("payments"), "rollout": .number(0.5)])
        #expect(read == built && read.hashValue == built.hashValue)
        #expect(read != copy && Set([read, built, copy]).count == 2)
        let notFound = client.boolDetail("nope", default: true)
        let notFoundBuilt = Evaluation(
            key: "nope", value: true, reason: .error, errorCode: .flagNotFound,
            errorMessage: "flag 'nope' is not in the served flags")
        #expect(notFound == notFoundBuilt && notFound.hashValue == notFoundBuilt.hashValue)
        // What `print` shows: the public properties, as before the layout changed.
        let printed = "\(client.boolDetail("nope", default: true))"
        #expect(
            printed.contains("key: \"nope\"")
                && printed.contains("errorCode") && printed.contains("FLAG_NOT_FOUND"))
        #expect(!printed.contains("_detail") && !printed.contains("_form"))
    }
}
