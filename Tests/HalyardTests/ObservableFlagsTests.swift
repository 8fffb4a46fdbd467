#if canImport(Observation)
    import Foundation
    import HalyardTesting
    import Observation
    import Testing

    @testable import Halyard

    /// `ObservableFlags`: a read registers its key with observation tracking, and a change is
    /// reported for the keys it changed only (one observation per read key, not per snapshot).
    @Suite struct ObservableFlagsTests {
        /// Counts `withObservationTracking`'s onChange calls (they come on the client's change queue).
        final class Fired: Sendable {
            let count = Locked(0)
            func fire() { count.withLock { $0 += 1 } }
            var value: Int { count.withLock { $0 } }
        }

        static func client(_ plane: InMemoryControlPlane) async throws -> FlagClient {
            var options = plane.makeOptions()
            options.exposures.enabled = false
            let client = try FlagClient(options: options)
            #expect(try await Wait.result("ready") { await client.ready(timeout: .seconds(30)) })
            return client
        }

        @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
        @Test func aReadIsTrackedForItsKeyOnly() async throws {
            let plane = InMemoryControlPlane(values: ["a": .bool(false), "b": .int(1), "c": .string("x")])
            let client = try await Self.client(plane)
            defer { client.close() }
            let flags = ObservableFlags(client)
            let firedA = Fired()
            let firedB = Fired()
            let read = withObservationTracking {
                flags.bool("a", default: true)
            } onChange: {
                firedA.fire()
            }
            #expect(read == false)
            _ = withObservationTracking {
                flags.int("b", default: 0)
            } onChange: {
                firedB.fire()
            }

            // A change of "b" is reported to b's observer, and in the same call (one call per
            // snapshot's changed keys) it would have reached a's observer, had it been one of a.
            plane.setValue(.int(2), for: "b")
            await client.refresh()
            try await Wait.until("the change of b is reported") { firedB.value == 1 }
            #expect(firedA.value == 0, "a change of b must not be reported to an observer of a")

            plane.setValue(.bool(true), for: "a")
            await client.refresh()
            try await Wait.until("the change of a is reported") { firedA.value == 1 }
            #expect(flags.bool("a", default: false))
        }

        @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
        @Test func everyReadFormIsTrackedAndTheValuesAreTheClients() async throws {
            let plane = InMemoryControlPlane(values: [
                "i": .int(7), "d": .double(1.5), "s": .string("x"), "j": .object(["k": .int(1)]),
            ])
            let client = try await Self.client(plane)
            defer { client.close() }
            let flags = ObservableFlags(client)
            for (key, change) in [
                ("i", JSONValue.int(8)), ("d", .double(2.5)), ("s", .string("y")), ("j", .object(["k": .int(2)])),
            ] {
                let fired = Fired()
                let before: String = withObservationTracking {
                    switch key {
                    case "i": return "\(flags.int("i", default: 0))"
                    case "d": return "\(flags.doubleDetail("d", default: 0).value)"
                    case "s": return flags.string("s", default: "")
                    default: return "\(flags.json("j", default: .null))"
                    }
                } onChange: {
                    fired.fire()
                }
                let expected = ["i": "7", "d": "1.5", "s": "x", "j": "\(JSONValue.object(["k": .int(1)]))"]
                #expect(before == expected[key])
                plane.setValue(change, for: key)
                await client.refresh()
                try await Wait.until("the change of \(key) is reported") { fired.value == 1 }
            }
            #expect(flags.int("i", default: 0) == client.int("i", default: 0))
            #expect(flags.intDetail("missing", default: 3) == client.intDetail("missing", default: 3))
        }

        @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
        @Test func releasingTheViewEndsItsSubscription() async throws {
            let plane = InMemoryControlPlane(values: ["a": .int(1)])
            let client = try await Self.client(plane)
            defer { client.close() }
            weak var released: ObservableFlags?
            do {
                let flags = ObservableFlags(client)
                released = flags
                #expect(flags.int("a", default: 0) == 1)
            }
            #expect(released == nil, "the change subscription must not keep the view alive")
            // And a change after the release reaches nobody (no crash, the client goes on).
            plane.setValue(.int(2), for: "a")
            await client.refresh()
            try await Wait.until("a changed") { client.int("a", default: 0) == 2 }
        }
    }
#endif
