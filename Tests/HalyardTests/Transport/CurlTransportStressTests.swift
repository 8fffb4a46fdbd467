#if os(Linux)
    import Foundation
    import Testing

    @testable import Halyard

    /// Many concurrent requests through the shared driver, with cancellations, deadlines and
    /// transports created per task (CI runs every `StressTests` suite under ThreadSanitizer and
    /// AddressSanitizer).
    @Suite(.serialized) struct CurlTransportStressTests {
        @Test func concurrentRequestsCancellationsAndDeadlines() async throws {
            let server = try await ControlPlaneServer.launched(flags: ["default": [["key": "a", "value": 1]]])
            defer { server.stop() }
            let ok = RefreshTransportTests.request(server, timeout: .seconds(10))
            let outcomes = Locked<[String: Int]>([:])
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<32 {
                    group.addTask {
                        let transport = CurlTransport()
                        for round in 0..<40 {
                            let label: String
                            if (worker + round) % 7 == 0 {
                                // Cancelled at once or mid-flight.
                                let task = Task { try await transport.send(ok) }
                                if round % 2 == 0 { try? await Task.sleep(for: .microseconds(200)) }
                                task.cancel()
                                do {
                                    label = "status \(try await task.value.status)"
                                } catch let error as TransportError {
                                    label = error == .cancelled ? "cancelled" : "\(error)"
                                }
                            } else {
                                label = "status \(try await transport.send(ok).status)"
                            }
                            outcomes.withLock { $0[label, default: 0] += 1 }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let counts = outcomes.value
            #expect(counts.values.reduce(0, +) == 32 * 40)
            #expect(Set(counts.keys).isSubset(of: ["status 200", "cancelled"]), "\(counts)")
            #expect(counts["status 200", default: 0] >= 32 * 40 * 6 / 7)
            // The shared driver still serves after all that.
            #expect(try await CurlTransport().send(ok).status == 200)
        }
    }
#endif
