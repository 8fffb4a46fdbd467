import Testing

@testable import Halyard

/// The refresh machine's side of the cache (`RefreshMachine.Input.cachedValues`), driven
/// without threads or clocks (docs/cache.md, "At start").
@Suite struct CacheMachineTests {
    @Test func cachedValuesMakeTheStatusStaleUntilConfirmed() throws {
        var d = MachineDriver()
        d.feed(.cachedValues(fingerprint: "fp1", etag: "\"e1\""))
        #expect(d.machine.status == .stale)
        #expect(d.events == [.stale])
        #expect(!d.machine.isConfirmedForCurrentContext)
        d.feed(.start(fingerprint: "fp1"))
        #expect(d.sent.last?.ifNoneMatch == "\"e1\"")
        try d.respond(.notModified)
        #expect(d.machine.status == .ready)
        #expect(d.machine.isConfirmedForCurrentContext)
        #expect(d.effects.contains(.confirm))
    }

    @Test func theCachedETagIsSentOnlyForItsFingerprint() {
        var d = MachineDriver()
        d.feed(.cachedValues(fingerprint: "fp-old", etag: "\"e1\""))
        d.feed(.start(fingerprint: "fp-new"))
        #expect(d.sent.last?.ifNoneMatch == nil)
        #expect(d.machine.status == .stale)
    }

    @Test func aRefusedKeyWithCachedValuesIsAnErrorNotFatal() throws {
        var d = MachineDriver()
        d.feed(.cachedValues(fingerprint: "fp1", etag: nil))
        d.feed(.start(fingerprint: "fp1"))
        try d.respond(.unauthorized(status: 401))
        #expect(d.machine.status == .error)
        #expect(
            d.events.contains(
                .error(code: .general, message: "the control plane refused the key (401); background refresh stopped")))
    }

    @Test func cachedValuesAreIgnoredAfterNetworkValuesAnIdentifyOrClose() throws {
        var afterNetwork = MachineDriver()
        afterNetwork.feed(.start(fingerprint: "fp1"))
        try afterNetwork.respond(.updated(etag: "\"n1\""))
        afterNetwork.feed(.cachedValues(fingerprint: "fp1", etag: "\"c1\""))
        #expect(afterNetwork.machine.status == .ready)
        #expect(afterNetwork.machine.etag == "\"n1\"")

        var afterIdentify = MachineDriver()
        afterIdentify.feed(.identify(fingerprint: "fp2"))
        afterIdentify.feed(.cachedValues(fingerprint: "fp1", etag: "\"c1\""))
        #expect(!afterIdentify.machine.hasValues)

        var afterClose = MachineDriver()
        afterClose.feed(.close)
        afterClose.feed(.cachedValues(fingerprint: "fp1", etag: nil))
        #expect(!afterClose.machine.hasValues)
    }
}
