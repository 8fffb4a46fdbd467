import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// Key rotation on a service (SPEC §12, "Key rotation"): `setKey` cancels the requests still on
/// the wire with the old key, and the fetches they served answer with the new key.
extension ServiceBrownoutTests {
    @Test("setKey cancels an old-key request on the wire; its cold waiter gets the new key's value")
    func setKeyCancelsTheOldKeysRequests() async throws {
        let transport = HeldOldKeyTransport()
        var options = FlagServiceOptions(baseURL: try #require(URL(string: "http://127.0.0.1:9")), key: "old-key")
        options.transport = transport
        options.exposures.enabled = false
        // Only the cancellation may end the old request: neither deadline is near.
        options.coldFetchTimeout = .seconds(120)
        options.requestTimeout = .seconds(120)
        let service = try FlagService(options: options)
        defer {
            service.close()
            transport.releaseAll()
        }
        let pending = Task { await service.flags(for: serviceContext(1)).string("env", default: "none") }
        try await Wait.until("an old-key request on the wire") { transport.held == 1 }
        try await service.setKey("new-key")
        // Before: nothing cancelled it; the request (and its waiter) waited out requestTimeout.
        try await Wait.until("the old key's request to observe its cancellation", seconds: 10) {
            transport.cancelled == 1
        }
        let value = try await Wait.result("the cold waiter of the cancelled request", seconds: 10) {
            await pending.value
        }
        #expect(value == "new", "the waiter was not served by a fetch with the new key")
        #expect(transport.newKeyRequests == 1)
        #expect(service.stats.fetching.staleKeyCancels == 1)
        #expect(service.status == .ready)
        // Held now: served without another request.
        #expect(await service.flags(for: serviceContext(1)).string("env", default: "none") == "new")
        #expect(transport.newKeyRequests == 1)
    }

    @Test("setKey cancels an old-key refresh of a held context; the entry is refreshed with the new key")
    func setKeyCancelsAnOldKeyRefresh() async throws {
        let transport = HeldOldKeyTransport(holdFrom: 2)
        let clock = ManualClock()
        var options = FlagServiceOptions(baseURL: try #require(URL(string: "http://127.0.0.1:9")), key: "old-key")
        options.transport = transport
        options.clock = clock
        options.exposures.enabled = false
        options.coldFetchTimeout = .seconds(120)
        options.requestTimeout = .seconds(120)
        let service = try FlagService(options: options)
        defer {
            service.close()
            transport.releaseAll()
        }
        // The first old-key request is answered ("old"); the refresh after refreshAfter is held.
        #expect(await service.flags(for: serviceContext(1)).string("env", default: "none") == "old")
        clock.advance(by: options.refreshAfter + .seconds(1))
        #expect(await service.flags(for: serviceContext(1)).string("env", default: "none") == "old")
        try await Wait.until("the old-key refresh on the wire") { transport.held == 1 }
        try await service.setKey("new-key")
        try await Wait.until("the old key's refresh to observe its cancellation", seconds: 10) {
            transport.cancelled == 1
        }
        try await Wait.until("the refresh re-sent with the new key", seconds: 10) {
            service.stats.fetching.inFlight == 0 && transport.newKeyRequests == 1
        }
        #expect(await service.flags(for: serviceContext(1)).string("env", default: "none") == "new")
    }

    /// A plane that ignores cancellation answers an old-key refresh after `setKey` returned
    /// (SPEC §12: `setKey` "ignores their answers, whatever their status"): once the new key's
    /// value is served, no read returns the old environment's value again, and a late 304
    /// (which would confirm the old values) or 503 (which would pause the service) changes
    /// nothing. Documents the guard's cancellation and the fetcher's key-generation check; a
    /// late 200 was served before them (issue 47 item 3).
    @Test(arguments: [200, 304, 503])
    func aLateOldKeyAnswerAfterSetKeyChangesNothing(status: Int) async throws {
        let transport = LateOldKeyTransport(holdFrom: 2, lateStatus: status)
        let clock = ManualClock()
        var options = FlagServiceOptions(baseURL: try #require(URL(string: "http://127.0.0.1:9")), key: "old-key")
        options.transport = transport
        options.clock = clock
        options.exposures.enabled = false
        options.coldFetchTimeout = .seconds(120)
        options.requestTimeout = .seconds(120)
        // One failure would pause every context's fetches, were the late 503 counted.
        options.backoffAfterFailures = 1
        let service = try FlagService(options: options)
        defer {
            service.close()
            transport.releaseAll()
        }
        let context = serviceContext(1)
        // Held with the old key's value and ETag; its refresh (If-None-Match) is held on the wire.
        #expect(await service.flags(for: context).string("env", default: "none") == "old")
        clock.advance(by: options.refreshAfter + .seconds(1))
        _ = service.flagsIfCached(for: context)
        try await Wait.until("the old-key refresh on the wire") { transport.held == 1 }
        try await service.setKey("new-key")
        // The refresh goes again with the new key; the old request is still unanswered.
        try await Wait.until("the new key's value served") {
            service.flagsIfCached(for: context).string("env", default: "none") == "new"
        }
        #expect(transport.held == 1 && transport.landed == 0)
        transport.releaseAll()
        try await Wait.until("the old key's late \(status) answered") { transport.landed == 1 }
        // Bounded polling: the late answer never replaces the new key's value.
        for _ in 0..<50 {
            let env = service.flagsIfCached(for: context).string("env", default: "none")
            #expect(env == "new", "a read after setKey returned the old environment's value (late \(status))")
            if env != "new" { break }
            try await Task.sleep(for: .milliseconds(2))
        }
        #expect(service.status == .ready, "the old key's late \(status) changed the status")
        #expect(service.stats.fetching.paused == 0, "the old key's late \(status) paused the service")
        // Not paused: a new context is fetched with the new key at once.
        #expect(await service.flags(for: serviceContext(2)).string("env", default: "none") == "new")
        #expect(transport.newKeyRequests == 2)
        #expect(service.stats.fetching.staleKeyCancels == 1)
    }
}

/// Holds a request carrying `Bearer <oldKey>` (from the `holdFrom`-th old-key request on) until
/// its task is cancelled (counted in ``cancelled``) or ``releaseAll()``, then answers
/// `env = "old"`; answers earlier old-key requests with `env = "old"` at once, and any other
/// key with `env = "new"` at once.
final class HeldOldKeyTransport: FlagTransport, Sendable {
    private struct State {
        var held: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var gone: Set<UInt64> = []
        var oldKeyRequests: UInt64 = 0
        var newKeyRequests = 0
        var cancelled = 0
    }

    private let state = Locked(State())
    private let holdFrom: UInt64
    private let oldKey: String

    init(oldKey: String = "old-key", holdFrom: UInt64 = 1) {
        self.oldKey = oldKey
        self.holdFrom = holdFrom
    }

    /// Old-key requests held now.
    var held: Int { state.withLock { $0.held.count } }
    /// Old-key requests whose task was cancelled before ``releaseAll()``.
    var cancelled: Int { state.withLock { $0.cancelled } }
    /// Requests carrying another key.
    var newKeyRequests: Int { state.withLock { $0.newKeyRequests } }

    /// Lets every held request go (the end of a test).
    func releaseAll() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            defer { s.held.removeAll() }
            s.gone.formUnion(s.held.keys)
            return Array(s.held.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        guard request.headers["Authorization"] == "Bearer \(oldKey)" else {
            state.withLock { $0.newKeyRequests += 1 }
            return OldKeyTransport.answer("new")
        }
        let id = state.withLock { s -> UInt64 in
            s.oldKeyRequests += 1
            return s.oldKeyRequests
        }
        guard id >= holdFrom else { return OldKeyTransport.answer("old") }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let gone = state.withLock { s -> Bool in
                    if s.gone.contains(id) { return true }
                    s.held[id] = c
                    return false
                }
                if gone { c.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
                if s.gone.insert(id).inserted { s.cancelled += 1 }
                return s.held.removeValue(forKey: id)
            }
            waiter?.resume()
        }
        // What a plane that did not notice the cancellation would answer.
        return OldKeyTransport.answer("old")
    }
}
