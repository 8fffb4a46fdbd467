import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// Issue 47: key rotation on a client (SPEC §12, "Key rotation", which holds for
/// `FlagClient.setKey` too).
extension StreamClientTests {
    @Test("setKey reconnects a stream that authenticates with the key, not one elsewhere (issue 47 item 7)")
    func setKeyReconnectsAnAuthenticatedStream() async throws {
        let h = try StreamClientHarness()
        defer { h.client.close() }
        try await h.connected()
        #expect(h.transport.streamOpens.last?.headers["Authorization"] == "Bearer cli-stream-key")
        try await h.client.setKey("cli-rotated-key")
        // Before: the stream stayed authenticated with the replaced key until it dropped.
        try await Wait.until("the stream reopened with the new key") {
            h.transport.streamOpens.count == 2 && h.stream.connected && h.transport.openConnections == 1
        }
        #expect(h.transport.streamOpens.last?.headers["Authorization"] == "Bearer cli-rotated-key")

        let other = try StreamClientHarness(baseURL: "http://127.0.0.1:8")
        defer { other.client.close() }
        try await Wait.until("the foreign stream to connect") { other.stream.connected }
        try await other.client.setKey("cli-rotated-key")
        #expect(other.stream.connects == 1, "a stream with its own credential was reconnected")
        #expect(other.transport.openConnections == 1)
    }

    @Test("an old key's answer landing after the key changed is ignored, even before keyChanged (issue 47)")
    func oldKeysAnswerIsIgnoredAfterTheKeyChanged() async throws {
        let h = try StreamClientHarness { $0.changeDetection = .polling }
        defer { h.client.close() }
        let sync = try #require(h.client.sync)
        try await Wait.until("the first values") { h.version == 1 }
        // A refresh with the old key on its way; the old key's environment changes meanwhile.
        h.transport.hold()
        let refresh = Task { await h.client.refresh() }
        try await Wait.until("the refresh in flight") { h.transport.heldFetches == 1 }
        h.transport.change()
        // `setKey`'s first step (the key every later request carries) before its engine step:
        // the window in which the old request's answer used to be applied.
        sync.identity.setKey("cli-rotated-key")
        h.transport.release()
        try await Wait.until("the old key's answer to be handled") {
            sync.engine.stats.staleKeyAnswers == 1 || h.version == 2
        }
        #expect(h.version == 1, "an answer to a request sent with the old key was applied after the key changed")
        #expect(h.client.status == .ready)
        // setKey's own step: the new key's fetch brings the values (of its environment).
        await sync.engine.keyChanged()
        #expect(h.version == 2)
        #expect(h.transport.fetches.last?.headers["Authorization"] == "Bearer cli-rotated-key")
        refresh.cancel()
        _ = await refresh.value
    }
}
