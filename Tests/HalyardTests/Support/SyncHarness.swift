import Foundation
import HalyardTesting
import Testing

@testable import Halyard

/// The shared setup of the sync integration tests: the loopback control plane (server.py), a
/// manual clock, a recording transport over a real transport (`URLSessionTransport` unless the test picks one), and an online client.
struct SyncHarness {
    let server: ControlPlaneServer
    let clock: ManualClock
    let transport: RecordingTransport
    let client: FlagClient
    /// This harness's install id, unique per harness: ``requests()`` keeps only the requests
    /// that carry it, so a request from another test's client (one whose server had the same
    /// loopback port before this one) is never counted as this client's.
    let installID: String

    var engine: RefreshEngine {
        get throws { try #require(client.sync, "an online client has a sync session").engine }
    }

    /// Waits for the start-up fetch to be over (answered and applied, or failed). Tests count
    /// requests exactly, so they must not rely on a `refresh()` joining it.
    func started() async throws {
        try await Wait.until("the start-up fetch to end") {
            transport.exchanges.count >= 1 && transport.inFlight == 0 && client.status != .notReady
                && (client.status != .ready || client.store.generation > 0)
        }
    }

    /// The requests the server logged from this harness's client, in arrival order.
    func requests() async throws -> [ControlPlaneServer.LoggedRequest] {
        try await server.requests().filter { $0.header("X-Halyard-Install-Id") == installID }
    }

    func close() {
        client.close()
        server.stop()
    }

    /// The flag sets most sync tests serve: `a` and `n` for everyone, different values and an
    /// extra flag for targeting key `u1`.
    static var defaultFlags: [String: Any] {
        [
            "default": [
                ["key": "a", "value": true, "reason": "STATIC", "variant": "on"],
                ["key": "n", "value": 3, "reason": "TARGETING_MATCH"],
            ],
            "contexts": [
                "u1": [
                    ["key": "a", "value": false, "reason": "TARGETING_MATCH", "variant": "off"],
                    ["key": "n", "value": 3, "reason": "TARGETING_MATCH"],
                    ["key": "only-u1", "value": "x", "reason": "SPLIT"],
                ]
            ],
        ]
    }

    /// Options for a client of `server` on `clock` through `transport`: a fixed install id, no
    /// polling, a 10 s request timeout (tests of timeouts set their own; a shorter default timed out healthy answers while the whole suite ran in parallel), exposures off (these tests script and count control-plane
    /// requests exactly; uploads would take scripted faults; ClientExposureTests covers them).
    static func options(
        server: ControlPlaneServer, clock: ManualClock, transport: any FlagTransport,
        key: String = "cli-integration-key", installID: String = "install-1"
    ) -> FlagClientOptions {
        var options = FlagClientOptions(baseURL: server.baseURL, key: key)
        options.transport = transport
        options.clock = clock
        options.installIDStorage = .fixed(installID)
        options.pollInterval = .zero
        options.requestTimeout = .seconds(10)
        options.exposures.enabled = false
        options.maxCachedContexts = 0
        return options
    }

    /// Starts a server with `flags` (and `startFaults` queued) and a client for `context`.
    static func make(
        flags: [String: Any] = defaultFlags,
        context: EvaluationContext = .anonymous,
        startFaults: [[String: Any]] = [],
        transport kind: TransportKind = .urlSession,
        configure: (inout FlagClientOptions) -> Void = { _ in }
    ) async throws -> SyncHarness {
        let server = try await ControlPlaneServer.launched(flags: flags)
        if !startFaults.isEmpty { try await server.script(startFaults) }
        let clock = ManualClock()
        let transport = RecordingTransport(kind.make(), clock: clock)
        let installID = "install-\(UUID().uuidString.prefix(8))"
        var options = Self.options(server: server, clock: clock, transport: transport, installID: installID)
        options.appID = "app-1"
        options.initialContext = context
        configure(&options)
        let client = try FlagClient(options: options)
        return SyncHarness(server: server, clock: clock, transport: transport, client: client, installID: installID)
    }
}
