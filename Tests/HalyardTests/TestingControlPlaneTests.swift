import Foundation
import Halyard
import HalyardTesting
import Testing

/// Application code under test: it only knows the client.
private func checkoutButtonTitle(_ flags: FlagClient) -> String {
    flags.bool("checkout.new", default: false) ? flags.string("checkout.title", default: "Buy") : "Checkout"
}

/// How an application tests code that reads flags, with the in-memory control plane.
@Suite struct TestingControlPlaneTests {
    @Test func applicationCodeSeesServedValues() async throws {
        let plane = InMemoryControlPlane(values: ["checkout.new": true, "checkout.title": "Pay now"])
        let client = try plane.makeClient()
        defer { client.close() }
        #expect(await client.ready(timeout: .seconds(30)))
        #expect(checkoutButtonTitle(client) == "Pay now")

        plane.setValue(false, for: "checkout.new")
        await client.refresh()
        #expect(checkoutButtonTitle(client) == "Checkout")
    }

    @Test func removedValuesServeTheDefaultWithFlagNotFound() async throws {
        let plane = InMemoryControlPlane(values: ["a": 1, "b": 2])
        let client = try plane.makeClient()
        defer { client.close() }
        #expect(await client.ready(timeout: .seconds(30)))
        plane.removeValue(for: "a")
        await client.refresh()
        let detail = client.intDetail("a", default: 7)
        #expect(detail.value == 7)
        #expect(detail.errorCode == .flagNotFound)
        plane.replaceValues(["c": "x"])
        await client.refresh()
        #expect(client.string("c", default: "") == "x")
        #expect(client.int("b", default: 0) == 0)
    }

    @Test func heldInitializationShowsNotReadyThenReady() async throws {
        let plane = InMemoryControlPlane(values: ["a": true])
        plane.holdInitialization()
        let client = try plane.makeClient()
        defer { client.close() }
        #expect(client.status == .notReady)
        #expect(client.boolDetail("a", default: false).errorCode == .providerNotReady)
        #expect(await client.ready(timeout: .milliseconds(50)) == false)
        plane.completeInitialization()
        #expect(await client.ready(timeout: .seconds(30)))
        #expect(client.status == .ready)
        #expect(client.bool("a", default: false))
    }

    @Test func failedInitializationWith401IsFatal() async throws {
        let plane = InMemoryControlPlane(values: ["a": true])
        plane.holdInitialization()
        let client = try plane.makeClient()
        defer { client.close() }
        plane.failInitialization(status: 401)
        #expect(await client.ready(timeout: .seconds(5)) == false)
        #expect(client.status == .fatal)
        #expect(client.boolDetail("a", default: false).errorCode == .providerFatal)
    }

    @Test func failedInitializationWith500IsAnErrorThenRecovers() async throws {
        let plane = InMemoryControlPlane(values: ["a": true])
        plane.failInitialization(status: 500)
        var options = plane.makeOptions()
        options.initialBackoff = .milliseconds(10)
        let client = try FlagClient(options: options)
        defer { client.close() }
        // The retry after backoff succeeds.
        #expect(await client.ready(timeout: .seconds(30)))
        #expect(client.status == .ready)
        #expect(plane.requests.count == 2)
    }

    @Test func contextUpdatesShowWhatTheClientSent() async throws {
        let plane = InMemoryControlPlane(values: ["a": true])
        let client = try plane.makeClient(
            context: EvaluationContext(targetingKey: "user-1", attributes: ["plan": "pro"]))
        defer { client.close() }
        #expect(await client.ready(timeout: .seconds(30)))
        #expect(await client.identify(EvaluationContext(targetingKey: "user-2", kind: "tenant")))
        let sent = plane.contextUpdates
        #expect(sent.count == 2)
        #expect(sent.first == ["targetingKey": "user-1", "kind": "user", "plan": "pro"])
        #expect(sent.last == ["targetingKey": "user-2", "kind": "tenant"])
    }

    @Test func unchangedValuesAreConfirmedWith304() async throws {
        let plane = InMemoryControlPlane(values: ["a": true])
        let client = try plane.makeClient()
        defer { client.close() }
        #expect(await client.ready(timeout: .seconds(30)))
        await client.refresh()
        await client.refresh()
        #expect(client.stats.sync.notModified == 2)
        #expect(plane.requests.last?.headers["If-None-Match"] != nil)
    }

    @Test func exposureUploadsAreReceived() async throws {
        let plane = InMemoryControlPlane()
        let document = #"{"meta":{"sdk":"Halyard"},"events":[{"kind":"exposure","key":"a","count":1}]}"#
        let response = try await plane.send(
            TransportRequest(
                url: InMemoryControlPlane.baseURL.appendingPathComponent("v1/exposures"),
                headers: ["Content-Encoding": "gzip", "Authorization": "Bearer k"],
                body: gzipForTest(Data(document.utf8))))
        #expect(response.status == 202)
        #expect(plane.receivedExposures == [["kind": "exposure", "key": "a", "count": 1]])
        let bad = try await plane.send(
            TransportRequest(
                url: InMemoryControlPlane.baseURL.appendingPathComponent("v1/exposures"),
                headers: ["Authorization": "Bearer k"], body: Data("x".utf8)))
        #expect(bad.status == 400)
    }

    /// Like a real collector, the plane refuses uploads without credentials (issue 14, bug 2).
    @Test func exposureUploadsWithoutCredentialsAreRefused() async throws {
        let plane = InMemoryControlPlane()
        let document = #"{"meta":{"sdk":"Halyard"},"events":[{"kind":"exposure","key":"a","count":1}]}"#
        for headers in [[:], ["Authorization": "Bearer "], ["Authorization": "Basic abc"]] {
            let response = try await plane.send(
                TransportRequest(
                    url: InMemoryControlPlane.baseURL.appendingPathComponent("v1/exposures"), headers: headers,
                    body: Data(document.utf8)))
            #expect(response.status == 401)
        }
        #expect(plane.receivedExposures.isEmpty)
        #expect(plane.unauthorizedUploads == 3)
    }
}
