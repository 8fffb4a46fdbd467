import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// Exposures recorded by real reads on an online client (docs/exposures.md), through the
/// in-memory control plane.
@Suite struct ClientExposureTests {
    static func client(
        _ plane: InMemoryControlPlane, clock: ManualClock = ManualClock(),
        _ configure: (inout FlagClientOptions) -> Void = { _ in }
    ) async throws -> FlagClient {
        var options = plane.makeOptions()
        options.clock = clock
        options.initialContext = EvaluationContext(targetingKey: "user-1")
        options.exposures.flushInterval = .zero
        configure(&options)
        let client = try FlagClient(options: options)
        #expect(try await Wait.result("ready(timeout:)") { await client.ready(timeout: .seconds(30)) })
        return client
    }

    static func keys(_ plane: InMemoryControlPlane) -> [String] {
        plane.receivedExposures.compactMap { event -> String? in
            if case .object(let members) = event, case .string(let key)? = members["key"] { return key }
            return nil
        }.sorted()
    }

    @Test func successfulReadsRecordOncePerWindowAndFailedReadsNothing() async throws {
        let plane = InMemoryControlPlane(values: ["a": .bool(true), "n": .int(3), "s": .string("x")])
        let client = try await Self.client(plane)
        for _ in 0..<1000 {
            _ = client.bool("a", default: false)
            _ = client.int("n", default: 0)
        }
        _ = client.bool("missing", default: false)  // FLAG_NOT_FOUND: nothing
        _ = client.bool("s", default: false)  // TYPE_MISMATCH: nothing
        _ = client.intDetail("s", default: 0)
        let result = try await Wait.result("flushExposures()") { await client.flushExposures() }
        #expect(result.sentEvents == 2)
        #expect(Self.keys(plane) == ["a", "n"])
        let stats = client.stats.exposures
        #expect(stats.sent == 2)
        #expect(stats.recorded == stats.sent + stats.deduplicated + stats.sampledOut + stats.dropped + stats.pending)
        // The fingerprint sent is the fitted context's.
        let fingerprint = try EvaluationContext(targetingKey: "user-1").fitted().fingerprint
        if case .object(let event)? = plane.receivedExposures.first {
            #expect(event["contextFingerprint"] == .string(fingerprint))
            #expect(event["kind"] == .string("exposure"))
        } else {
            Issue.record("no exposure event")
        }
        client.close()
    }

    /// One value of each JSON type; each family reads the one of its type.
    static let familyValues: [String: JSONValue] = [
        "b": .bool(true), "s": .string("x"), "n": .int(3), "d": .double(1.5),
        "o": .object(["enabled": .bool(true), "title": .string("t")]),
    ]

    /// Every read family: a missing flag and a flag of another JSON type record no
    /// exposure; the first successful read records one, and a second read in the window none.
    @Test(arguments: ReadFamily.allCases)
    func everyReadFamilyRecordsSuccessfulReadsOnly(_ family: ReadFamily) async throws {
        let plane = InMemoryControlPlane(values: Self.familyValues)
        let client = try await Self.client(plane)
        defer { client.close() }
        family.read(client, "missing")
        #expect(client.stats.exposures.recorded == 0, "\(family) of a missing flag recorded an exposure")
        if let other = family.mismatchedKey {
            family.read(client, other)
            #expect(
                client.stats.exposures.recorded == 0,
                "\(family) of a \(other) flag (type mismatch) recorded an exposure")
        }
        family.read(client, family.matchingKey)
        family.read(client, family.matchingKey)
        #expect(client.stats.exposures.recorded == 1, "\(family) of \(family.matchingKey)")
        let flushed = try await Wait.result("flushExposures()") { await client.flushExposures() }
        #expect(flushed.sentEvents == 1)
        #expect(Self.keys(plane) == [family.matchingKey])
    }

    /// `flagObject` of a flag that is not an object gives the defaults (like a type mismatch)
    /// and records nothing: the program never saw the flag's value (TYPE_MISMATCH reads record
    /// nothing, docs/exposures.md).
    @Test func flagObjectOfANonObjectRecordsNoExposure() async throws {
        let plane = InMemoryControlPlane(values: Self.familyValues)
        let client = try await Self.client(plane)
        defer { client.close() }
        let view = client.flagObject("s")
        #expect(!view.isObject && !view.isEnabled)
        #expect(client.stats.exposures.recorded == 0, "a non-object flagObject recorded an exposure")
        // ...while an object flag's view records exactly one.
        let object = client.flagObject("o")
        #expect(object.isObject)
        #expect(client.stats.exposures.recorded == 1)
    }

    /// Making a handle serves nothing to the program: it records no exposure; its first `value`
    /// does.
    @Test func creatingAHandleRecordsNothing() async throws {
        let plane = InMemoryControlPlane(values: Self.familyValues)
        let client = try await Self.client(plane)
        defer { client.close() }
        let b = client.handle("b", default: false)
        let n = client.handle("n", default: 0)
        let s = client.handle("s", default: "")
        #expect(client.stats.exposures.recorded == 0, "creating handles recorded an exposure")
        #expect(b.value && n.value == 3 && s.value == "x")
        #expect(client.stats.exposures.recorded == 3)
    }

    @Test func handleReadsRecordAndShareDedupWithKeyedReads() async throws {
        let plane = InMemoryControlPlane(values: ["h": .bool(true), "d": .double(1.5)])
        let client = try await Self.client(plane)
        let h = client.handle("h", default: false)
        let d = client.handle("d", default: 0.0)
        for _ in 0..<1000 {
            _ = h.value
            _ = d.value
            _ = client.bool("h", default: false)
        }
        try await Wait.result("flushExposures()") { await client.flushExposures() }
        #expect(Self.keys(plane) == ["d", "h"])
        client.close()
    }

    @Test func newWindowRecordsAgain() async throws {
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        let clock = ManualClock()
        let client = try await Self.client(plane, clock: clock) { $0.exposures.dedupWindow = .seconds(300) }
        let h = client.handle("a", default: false)
        _ = client.bool("a", default: false)
        _ = h.value
        clock.advance(by: .seconds(200))
        client.exposureRecorder?.tick()
        _ = client.bool("a", default: false)
        _ = h.value
        try await Wait.result("flushExposures()") { await client.flushExposures() }
        #expect(Self.keys(plane) == ["a"])
        clock.advance(by: .seconds(200))  // 400 s: a new window
        client.exposureRecorder?.tick()
        _ = client.bool("a", default: false)
        _ = h.value
        try await Wait.result("flushExposures()") { await client.flushExposures() }
        #expect(Self.keys(plane) == ["a", "a"])
        client.close()
    }

    @Test func variantChangeRecordsAgainWithinTheWindow() async throws {
        let plane = InMemoryControlPlane()
        plane.setFlag(ServedFlag(key: "v", value: .string("blue"), variant: "blue", reason: .split))
        let client = try await Self.client(plane)
        let h = client.handle("v", default: JSONValue.null)
        _ = client.string("v", default: "")
        _ = h.value
        plane.setFlag(ServedFlag(key: "v", value: .string("green"), variant: "green", reason: .split))
        try await client.refreshOrFail()
        #expect(client.string("v", default: "") == "green")
        _ = h.value
        try await Wait.result("flushExposures()") { await client.flushExposures() }
        let variants = plane.receivedExposures.compactMap { event -> String? in
            if case .object(let m) = event, case .string(let v)? = m["variant"] { return v }
            return nil
        }
        #expect(variants.sorted() == ["blue", "green"])
        client.close()
    }

    @Test func refreshWithUnchangedVariantKeepsTheFastPathSlot() async throws {
        let plane = InMemoryControlPlane()
        plane.setFlag(ServedFlag(key: "v", value: .bool(true), variant: "on", reason: .split))
        plane.setFlag(ServedFlag(key: "w", value: .int(1), variant: "one", reason: .split))
        let client = try await Self.client(plane)
        _ = client.bool("v", default: false)
        _ = client.int("w", default: 0)
        plane.setFlag(ServedFlag(key: "w", value: .int(2), variant: "two", reason: .split))
        try await client.refreshOrFail()
        #expect(client.int("w", default: 0) == 2)
        _ = client.bool("v", default: false)  // same variant in the new snapshot: slot inherited
        let counters = client.stats.exposures
        #expect(counters.recorded == 3)  // v/on, w/one, w/two
        #expect(counters.deduplicated == 0)  // the v read after the swap never reached the recorder
        client.close()
    }

    @Test func disabledRecordingSkipsReadsButNotExplicitRecords() async throws {
        let plane = InMemoryControlPlane(values: ["a": .bool(true), "b": .bool(false)])
        let client = try await Self.client(plane) { $0.exposures.enabled = false }
        _ = client.bool("a", default: false)
        _ = client.handle("a", default: false).value
        client.recordExposure("b")
        client.recordExposure("missing")
        try await Wait.result("flushExposures()") { await client.flushExposures() }
        #expect(Self.keys(plane) == ["b"])
        client.close()
    }

    @Test func readsAfterCloseRecordNothing() async throws {
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        let client = try await Self.client(plane)
        client.close()
        #expect(client.bool("a", default: false) == true)  // last values keep answering
        client.recordExposure("a")
        _ = try await Wait.result("the final flush") { await client.exposureRecorder?.waitUntilClosed() }
        #expect(plane.receivedExposures.isEmpty)
        #expect(client.stats.exposures.recorded == 0)
    }

    @Test func closeFlushesPendingExposures() async throws {
        let plane = InMemoryControlPlane(values: ["a": .bool(true)])
        let client = try await Self.client(plane)
        _ = client.bool("a", default: false)
        client.close()  // does not block; the final flush runs detached
        _ = try await Wait.result("the final flush") { await client.exposureRecorder?.waitUntilClosed() }
        #expect(Self.keys(plane) == ["a"])
    }

    @Test func offlineClientsRecordNothing() async throws {
        let flags = try FlagClient(offlineValues: ["a": .bool(true)])
        _ = flags.bool("a", default: false)
        flags.recordExposure("a")
        #expect(try await Wait.result("flushExposures()") { await flags.flushExposures() }.sentEvents == 0)
        #expect(flags.stats.exposures.recorded == 0)
    }
}

/// The read families, for tests that must cover every one.
enum ReadFamily: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case bool, string, int, double, json, detail
    case boolDetail, stringDetail, intDetail, doubleDetail
    case boolHandle, stringHandle, intHandle, doubleHandle, jsonHandle, handleDetail
    case flagObject

    var testDescription: String { rawValue }

    /// The key of `ClientExposureTests.familyValues` whose value has this family's type.
    var matchingKey: String {
        switch self {
        case .bool, .boolDetail, .boolHandle, .handleDetail: "b"
        case .string, .stringDetail, .stringHandle: "s"
        case .int, .intDetail, .intHandle: "n"
        case .double, .doubleDetail, .doubleHandle: "d"
        case .json, .detail, .jsonHandle, .flagObject: "o"
        }
    }

    /// A key whose value this family cannot read (`TYPE_MISMATCH`); nil for the families that
    /// accept any JSON type. Int reads get a fractional number: it never narrows.
    var mismatchedKey: String? {
        switch self {
        case .bool, .boolDetail, .boolHandle, .handleDetail: "s"
        case .string, .stringDetail, .stringHandle: "n"
        case .int, .intDetail, .intHandle: "d"
        case .double, .doubleDetail, .doubleHandle: "b"
        case .json, .detail, .jsonHandle, .flagObject: nil
        }
    }

    /// Reads `key` through this family once (a handle is created and its value read).
    func read(_ client: FlagClient, _ key: String) {
        switch self {
        case .bool: _ = client.bool(key, default: false)
        case .string: _ = client.string(key, default: "")
        case .int: _ = client.int(key, default: 0)
        case .double: _ = client.double(key, default: 0)
        case .json: _ = client.json(key, default: .null)
        case .detail: _ = client.detail(key, default: .null)
        case .boolDetail: _ = client.boolDetail(key, default: false)
        case .stringDetail: _ = client.stringDetail(key, default: "")
        case .intDetail: _ = client.intDetail(key, default: 0)
        case .doubleDetail: _ = client.doubleDetail(key, default: 0)
        case .boolHandle: _ = client.handle(key, default: false).value
        case .stringHandle: _ = client.handle(key, default: "").value
        case .intHandle: _ = client.handle(key, default: 0).value
        case .doubleHandle: _ = client.handle(key, default: 0.0).value
        case .jsonHandle: _ = client.handle(key, default: JSONValue.null).value
        case .handleDetail: _ = client.handle(key, default: false).detail
        case .flagObject: _ = client.flagObject(key)
        }
    }
}

/// Issue 24: code-default reads record exposures (SPEC §2, §7).
extension ClientExposureTests {
    // MARK: - Code defaults (issue 24)

    /// A plane serving each key with no value ("use the code default"), reason DEFAULT.
    static func codeDefaultPlane(_ keys: [String]) -> InMemoryControlPlane {
        let plane = InMemoryControlPlane()
        for key in keys { plane.setFlag(ServedFlag(key: key, value: nil, reason: .defaultValue)) }
        return plane
    }

    /// Issue 24: a read whose flag had no value served the code default — a successful read
    /// (SPEC §2) — and recorded no exposure (SPEC §7 says it must), with the §7 exporter too.
    @Test func codeDefaultReadsRecordExposures() async throws {
        let plane = Self.codeDefaultPlane(["cb", "cn", "cd", "cs", "cj", "cx"])
        let client = try await Self.client(plane)
        defer { client.close() }
        let handle = client.handle("cx", default: 3)
        for _ in 0..<100 {
            #expect(handle.value == 3)
            #expect(client.bool("cb", default: true))
            #expect(client.int("cn", default: 7) == 7)
            #expect(client.doubleDetail("cd", default: 0.5).reason == .defaultValue)
            #expect(client.string("cs", default: "x") == "x")
            #expect(client.json("cj", default: .int(1)) == .int(1))
        }
        _ = client.bool("missing", default: false)  // FLAG_NOT_FOUND: still nothing
        let result = try await Wait.result("flushExposures()") { await client.flushExposures() }
        #expect(result.sentEvents == 6)
        #expect(Self.keys(plane) == ["cb", "cd", "cj", "cn", "cs", "cx"])
        for event in plane.receivedExposures {
            if case .object(let members) = event { #expect(members["reason"] == .string("DEFAULT")) }
        }
        #expect(client.stats.reads.flagNotFound == 1)
    }

    /// The same rule for service mode's `ContextFlags` (the shared read rules).
    @Test func codeDefaultReadsRecordExposuresInServiceMode() async throws {
        let plane = Self.codeDefaultPlane(["cb", "cs"])
        var options = plane.makeServiceOptions()
        options.exposures.flushInterval = .zero
        let service = try FlagService(options: options)
        defer { service.close() }
        let flags = await service.flags(for: EvaluationContext(targetingKey: "user-1"))
        #expect(flags.bool("cb", default: true))
        #expect(flags.stringDetail("cs", default: "x").value == "x")
        let result = try await Wait.result("flushExposures()") { await service.flushExposures() }
        #expect(result.sentEvents == 2)
        #expect(Self.keys(plane) == ["cb", "cs"])
    }
}
