import Foundation
import Testing

@testable import Halyard

#if os(Linux) && canImport(CHalyardCurl)
    import CHalyardTestMalloc

    /// The stream soak (SPEC §14, "Through a process's life"): one client and one service, both on
    /// the default curl transport, streaming from a loopback server.py in "cycle" mode — each
    /// caller's streams in turn end cleanly after 20 s, answer 503, and answer a same-origin 302 to
    /// a stream that ends after 20 s — while the server's flag changes every second.
    ///
    /// It asserts, for the changes sent while a stream was connected and read on that same
    /// connection, that every change is read within 1 s at p99 (the client's and the service's
    /// readers each poll every millisecond); that every change is eventually read (a reconnect
    /// re-fetches what a closed stream missed); that resident memory's last-half slope stays under
    /// the churn test's bound for the run length (0.5 KB/s from 10 minutes on); and that the curl
    /// transport's live stream transfers are back to zero after `close()`.
    ///
    /// `HALYARD_STREAM_SOAK_SECONDS` sets the run length (*default* 45 s, CI's; clamped to
    /// 30...3,600; the proof run is 600 s). Results: docs/benchmarks-transport.md, "Stream soak".
    extension TransportProcessTests {
        static let streamSoakSeconds: Double = {
            let raw = ProcessInfo.processInfo.environment["HALYARD_STREAM_SOAK_SECONDS"].flatMap(Double.init) ?? 45
            return min(max(raw, 30), 3_600)
        }()

        static func soakFlags(version: Int) -> [String: Any] {
            ["default": [["key": "version", "value": version, "reason": "STATIC"]]]
        }

        /// What the sampling thread saw: for each reader, the first instant each version was read
        /// and the stream connection count at that instant.
        struct SoakSightings: Sendable {
            var clientSeen: [Int: (at: ContinuousClock.Instant, connections: Int)] = [:]
            var serviceSeen: [Int: (at: ContinuousClock.Instant, connections: Int)] = [:]
        }

        /// One change as the test sent it: the instant before the admin request, and whether each
        /// reader's stream was connected then (with its connection count).
        struct SoakChange {
            var version: Int
            var sentAt: ContinuousClock.Instant
            var client: (connected: Bool, connections: Int)
            var service: (connected: Bool, connections: Int)
        }

        @Test func streamingClientAndServiceThroughRestartsKeepChangesFastAndMemoryFlat() async throws {
            if case .failure(let why) = CurlMulti.shared {
                Issue.record("libcurl did not load: \(why.reason)")
                return
            }
            let seconds = Self.streamSoakSeconds
            let server = try await ControlPlaneServer.launched(flags: Self.soakFlags(version: 1))
            defer { server.stop() }
            try await server.configureStream([
                "advertise": "endpoint", "mode": "cycle", "dropEvery": 20.0, "keepAlive": 5.0,
            ])
            let curl = CurlTransport()
            let admin = CurlTransport()

            var clientOptions = FlagClientOptions(baseURL: server.baseURL, key: "soak-client")
            clientOptions.transport = curl
            clientOptions.installIDStorage = .fixed("install-stream-soak")
            clientOptions.pollInterval = .seconds(3600)  // changes arrive by the stream alone
            clientOptions.requestTimeout = .seconds(5)
            clientOptions.maxCachedContexts = 0
            clientOptions.exposures.enabled = false
            let client = try FlagClient(options: clientOptions)

            var serviceOptions = FlagServiceOptions(baseURL: server.baseURL, key: "soak-service")
            serviceOptions.transport = curl
            serviceOptions.exposures.enabled = false
            serviceOptions.coldFetchTimeout = .seconds(10)
            serviceOptions.refreshAfter = .seconds(3600)
            serviceOptions.maxStaleness = .seconds(7200)
            let service = try FlagService(options: serviceOptions)
            let context = try EvaluationContext(targetingKey: "soak-user").fitted()

            #expect(await client.ready(timeout: .seconds(20)))
            #expect(await service.flags(for: context).int("version", default: 0) == 1)
            try await Wait.until("both streams to connect", seconds: 30) {
                client.stats.stream.connected && service.stats.stream.connected
            }

            // The sampling thread: reads both every millisecond and notes each version's first sight.
            let stop = Locked(false)
            // Room for every sighting and sample up front: the test's own growth is not measured.
            let room = Int(seconds) + 64
            var initial = SoakSightings()
            initial.clientSeen.reserveCapacity(room)
            initial.serviceSeen.reserveCapacity(room)
            let sightings = Locked(initial)
            let samplerDone = Locked(false)
            Thread.detachNewThread {
                while !stop.value {
                    let now = ContinuousClock.now
                    let clientVersion = client.int("version", default: 0)
                    let serviceVersion = service.flagsIfCached(for: context).int("version", default: 0)
                    let clientConnections = client.stats.stream.connections
                    let serviceConnections = service.stats.stream.connections
                    sightings.withLock { s in
                        if s.clientSeen[clientVersion] == nil {
                            s.clientSeen[clientVersion] = (now, clientConnections)
                        }
                        if s.serviceSeen[serviceVersion] == nil {
                            s.serviceSeen[serviceVersion] = (now, serviceConnections)
                        }
                    }
                    usleep(1_000)
                }
                samplerDone.withLock { $0 = true }
            }

            let start = ContinuousClock.now
            var changes: [SoakChange] = []
            var samples: [(seconds: Double, bytes: Double)] = []
            var inUse: [(seconds: Double, bytes: Double)] = []
            inUse.reserveCapacity(room)
            changes.reserveCapacity(room)
            samples.reserveCapacity(room)
            var version = 1
            var failedChanges = 0
            while Self.seconds(ContinuousClock.now - start) < seconds {
                version += 1
                let clientStream = client.stats.stream
                let serviceStream = service.stats.stream
                let sentAt = ContinuousClock.now
                // Through a curl transport, not the test's URLSession: FoundationNetworking keeps
                // memory per request on Linux, which would be the growth measured.
                let request = TransportRequest(
                    url: server.baseURL.appendingPathComponent("_admin/stream/change"),
                    headers: ["Content-Type": "application/json"],
                    body: try JSONSerialization.data(withJSONObject: ["flags": Self.soakFlags(version: version)]),
                    timeout: .seconds(5))
                if (try? await admin.send(request))?.status != 200 { failedChanges += 1 }
                changes.append(
                    SoakChange(
                        version: version, sentAt: sentAt,
                        client: (clientStream.connected, clientStream.connections),
                        service: (serviceStream.connected, serviceStream.connections)))
                if let resident = ProcessProbe.residentBytes {
                    let at = Self.seconds(ContinuousClock.now - start)
                    samples.append((at, Double(resident)))
                    let malloc = halyard_test_malloc_stats_now()
                    inUse.append((at, Double(malloc.inUseBytes + malloc.mmappedBytes)))
                }
                try await Task.sleep(for: .seconds(1))
            }
            // Every change is eventually read, the last ones after a reconnect at worst.
            let last = version
            try await Wait.until("both readers to read version \(last)", seconds: 60) {
                client.int("version", default: 0) == last
                    && service.flagsIfCached(for: context).int("version", default: 0) == last
            }
            stop.withLock { $0 = true }
            try await Wait.until("the sampling thread to stop", seconds: 10) { samplerDone.value }
            let clientStats = client.stats.stream
            let serviceStats = service.stats.stream
            client.close()
            service.close()
            try await Wait.until("every stream transfer freed (\(curl.liveStreamTransfers.value) alive)", seconds: 30) {
                curl.liveStreamTransfers.value == 0
            }

            let seen = sightings.value
            /// The latency of each change a connected stream carried, in seconds: the first read of
            /// that version or a later one, on the connection that was open when it was sent.
            func latencies(
                _ side: KeyPath<SoakChange, (connected: Bool, connections: Int)>,
                _ sights: [Int: (at: ContinuousClock.Instant, connections: Int)]
            ) -> (carried: [Double], across: [Double]) {
                var carried: [Double] = []
                var across: [Double] = []
                for change in changes {
                    let firstRead = sights.filter { $0.key >= change.version }.min { $0.value.at < $1.value.at }
                    guard let firstRead else { continue }
                    let latency = max(0, Self.seconds(firstRead.value.at - change.sentAt))
                    let state = change[keyPath: side]
                    if state.connected && firstRead.value.connections == state.connections {
                        carried.append(latency)
                    } else {
                        across.append(latency)
                    }
                }
                return (carried, across)
            }
            func p99(_ values: [Double]) -> Double {
                guard !values.isEmpty else { return .nan }
                let sorted = values.sorted()
                return sorted[min(sorted.count - 1, Int((Double(sorted.count) * 0.99).rounded(.up)) - 1)]
            }
            let clientLatency = latencies(\.client, seen.clientSeen)
            let serviceLatency = latencies(\.service, seen.serviceSeen)
            let slope = MemorySlope.lastHalf(samples, runSeconds: seconds) ?? 0
            // malloc's bytes in use tell a leak (rising) from allocator growth (flat).
            let inUseSlope = MemorySlope.lastHalf(inUse, runSeconds: seconds) ?? 0
            func ms(_ s: Double) -> String { String(format: "%.0f ms", s * 1_000) }
            print(
                "stream soak \(Int(seconds)) s, \(changes.count) changes: client p99 \(ms(p99(clientLatency.carried))) over \(clientLatency.carried.count) carried (\(clientLatency.across.count) across a reconnect, max \(ms(clientLatency.across.max() ?? 0))), connects \(clientStats.connects), failures \(clientStats.failures); service p99 \(ms(p99(serviceLatency.carried))) over \(serviceLatency.carried.count) carried (\(serviceLatency.across.count) across, max \(ms(serviceLatency.across.max() ?? 0))), connects \(serviceStats.connects), failures \(serviceStats.failures); resident last-half slope \(String(format: "%.0f", slope)) B/s (malloc in use \(String(format: "%.0f", inUseSlope)) B/s); resident \((samples.first?.bytes ?? 0) / 1_048_576) -> \((samples.last?.bytes ?? 0) / 1_048_576) MiB"
            )
            #expect(failedChanges == 0, "\(failedChanges) admin changes failed")
            // The cycle was really lived: each reader connected more than once and met failures
            // (the 503s) — otherwise this soak measured a friendly server.
            #expect(
                clientStats.connects >= 2 && serviceStats.connects >= 2,
                "connects: \(clientStats.connects), \(serviceStats.connects)")
            #expect(
                clientStats.failures >= 1 && serviceStats.failures >= 1,
                "failures: \(clientStats.failures), \(serviceStats.failures)")
            #expect(
                clientLatency.carried.count >= changes.count / 3,
                "client: \(clientLatency.carried.count) of \(changes.count) carried")
            #expect(
                serviceLatency.carried.count >= changes.count / 3,
                "service: \(serviceLatency.carried.count) of \(changes.count) carried")
            #expect(p99(clientLatency.carried) <= 1.0, "client change p99 \(ms(p99(clientLatency.carried)))")
            #expect(p99(serviceLatency.carried) <= 1.0, "service change p99 \(ms(p99(serviceLatency.carried)))")
            let bound = Self.residentSlopeBound(seconds: seconds)
            #expect(
                slope < bound, "resident memory rose \(Int(slope)) B/s over the last half (bound \(Int(bound)) B/s)")
        }
    }
#endif
