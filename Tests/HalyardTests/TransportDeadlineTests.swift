import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// Halyard enforces `requestTimeout` itself around any transport (SPEC §5): a custom transport
/// that never answers, and ignores cancellation, still gives every caller — the client's refresh,
/// the exposure upload, service mode's fetch — a timeout at the deadline.
@Suite struct TransportDeadlineTests {
    /// Never answers and ignores cancellation until `release()` (the end of the test).
    final class StuckTransport: FlagTransport, Sendable {
        private let waiters = Locked<[CheckedContinuation<Void, Never>]>([])
        private let released = Locked(false)
        let calls = Locked(0)

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            calls.withLock { $0 += 1 }
            await withCheckedContinuation { continuation in
                let now = released.withLock { done -> Bool in
                    if !done { waiters.withLock { $0.append(continuation) } }
                    return done
                }
                if now { continuation.resume() }
            }
            throw TransportError.network("released")
        }

        func release() {
            released.withLock { $0 = true }
            for waiter in waiters.withLock({ w -> [CheckedContinuation<Void, Never>] in
                defer { w = [] }
                return w
            }) {
                waiter.resume()
            }
        }
    }

    static let url = URL(fileURLWithPath: "/").deletingLastPathComponent()

    @Test func theGuardTimesOutATransportThatNeverAnswers() async throws {
        let stuck = StuckTransport()
        defer { stuck.release() }
        let guarded = GuardedTransport.wrapping(stuck, logHandler: nil)
        let request = TransportRequest(
            url: try #require(URL(string: "http://127.0.0.1:1/")), timeout: .milliseconds(200))
        let outcome = try await Wait.result("send through the guard", seconds: 30) { () async -> TransportError? in
            do {
                _ = try await guarded.send(request)
                return nil
            } catch {
                return error as? TransportError
            }
        }
        #expect(outcome == .timedOut)
        #expect(GuardedTransport.wrapping(guarded, logHandler: nil) is GuardedTransport)
    }

    @Test func cancellingTheCallerEndsTheRequestAtOnce() async throws {
        let stuck = StuckTransport()
        defer { stuck.release() }
        let guarded = GuardedTransport.wrapping(stuck, logHandler: nil)
        let request = TransportRequest(url: try #require(URL(string: "http://127.0.0.1:1/")), timeout: .seconds(600))
        let task = Task { try await guarded.send(request) }
        try await Wait.until("the transport was called", seconds: 30) { stuck.calls.value == 1 }
        task.cancel()
        let outcome = try await Wait.result("the cancelled send", seconds: 30) { () async -> TransportError? in
            do {
                _ = try await task.value
                return nil
            } catch {
                return error as? TransportError
            }
        }
        #expect(outcome == .cancelled)
    }

    @Test func theClientsRefreshTimesOut() async throws {
        let stuck = StuckTransport()
        defer { stuck.release() }
        var options = FlagClientOptions(baseURL: try #require(URL(string: "http://127.0.0.1:1")), key: "cli-deadline")
        options.transport = stuck
        options.pollInterval = .zero
        options.installIDStorage = .fixed("install-deadline")
        options.maxCachedContexts = 0
        options.exposures.enabled = false
        options.requestTimeout = .milliseconds(300)
        let client = try FlagClient(options: options)
        defer { client.close() }
        try await Wait.until("the start-up fetch timed out", seconds: 30) { client.stats.sync.timeouts >= 1 }
        #expect(client.status != .ready)
    }

    @Test func theExposureUploadTimesOut() async throws {
        let stuck = StuckTransport()
        defer { stuck.release() }
        var options = ExposureOptions()
        options.flushInterval = .zero
        options.requestTimeout = .milliseconds(300)
        let recorder = ExposureRecorder.forControlPlane(
            options: options, clock: ManualClock(), transport: stuck,
            baseURL: try #require(URL(string: "http://127.0.0.1:1")), appID: nil, serviceName: nil,
            identity: ClientIdentity(
                baseURL: try #require(URL(string: "http://127.0.0.1:1")), key: "k", appID: nil, installID: "i"),
            logHandler: nil)
        defer { recorder.close() }
        recorder.recordExposure(
            key: "a", variant: "on", reason: .targetingMatch, contextFingerprint: "f", value: nil, errorCode: nil)
        let result = try await Wait.result("flush()", seconds: 30) { await recorder.flush() }
        #expect(result.sentEvents == 0)
        #expect(stuck.calls.value == 1)
    }

    @Test func serviceModesFetchTimesOut() async throws {
        let stuck = StuckTransport()
        defer { stuck.release() }
        var options = FlagServiceOptions(baseURL: try #require(URL(string: "http://127.0.0.1:1")), key: "srv-deadline")
        options.transport = stuck
        options.requestTimeout = .milliseconds(300)
        options.exposures.enabled = false
        let service = try FlagService(options: options)
        defer { service.close() }
        _ = try await Wait.result("flags(for:)", seconds: 30) {
            await service.flags(for: EvaluationContext(targetingKey: "u1"))
        }
        try await Wait.until("the fetch timed out", seconds: 30) { service.stats.fetching.timeouts >= 1 }
    }
}
