#if os(Linux)
    import Foundation
    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif
    import Glibc
    import BenchmarkSupport
    import CMallocCounter
    import Halyard

    // The polling scenario: "reads while the client polls a loopback server every 10 ms". A real
    // online client (the default transport, OFREP, ETags) polls the Python loopback control plane of
    // the integration tests every 10 ms; a driver changes the served values every 100 ms (so polls
    // publish new snapshots, not only 304s) and switches the context with `identify` every 500 ms.
    // Its reads are paired, round by round, with the same reads on an offline client that never
    // publishes (halyard.bool without the publisher).

    /// The loopback control plane (Tests/ControlPlaneServer/server.py), started for the scenario.
    final class LoopbackControlPlane: @unchecked Sendable {
        let server: LoopbackServerProcess
        let baseURL: URL
        let session: URLSession

        init(document: [String: Any]) throws {
            server = try LoopbackServerProcess(document: document, label: "halyard-bench")
            baseURL = server.baseURL
            let configuration = URLSessionConfiguration.ephemeral
            configuration.urlCache = nil
            session = URLSession(configuration: configuration)
        }

        /// Replaces the served flag sets with a JSON document (blocking; from the driver thread).
        func replaceFlags(_ document: Data) {
            var request = URLRequest(url: baseURL.appendingPathComponent("_admin/flags"))
            request.httpMethod = "POST"
            request.httpBody = document
            let done = DispatchSemaphore(value: 0)
            session.dataTask(with: request) { _, _, _ in done.signal() }.resume()
            _ = done.wait(timeout: .now() + 5)
        }

        func stop() { server.stop() }
    }

    /// `flags.bool(key, default:)` on the polling client. Its publisher hook does nothing: the
    /// client's own polling and the driver's `identify` calls are what publish.
    final class HalyardPollingBool: ReadDesign, @unchecked Sendable {
        let keys: [String]
        let flags: FlagClient
        init(keys: [String], flags: FlagClient) {
            self.keys = keys
            self.flags = flags
        }
        @inline(__always) func read(_ i: Int) -> Bool { flags.bool(keys[i], default: false) }
        func publish(_ generation: Int) {}
    }

    extension Bench {
        /// Runs the scenario; nil (with a note on stderr) when the loopback server cannot start.
        func measurePolling() -> BenchReport.Polling? {
            func items(_ set: Int) -> [[String: Any]] {
                zip(workload.keys, workload.values[set]).map { key, value in
                    ["key": key, "value": value, "variant": value ? "on" : "off", "reason": "TARGETING_MATCH"]
                }
            }
            func document(_ set: Int) -> [String: Any] {
                ["default": items(set), "contexts": ["user-b": items(1 - set)]]
            }
            let documents = [0, 1].map { (try? JSONSerialization.data(withJSONObject: document($0))) ?? Data() }
            let server: LoopbackControlPlane
            do { server = try LoopbackControlPlane(document: document(0)) } catch {
                progress("polling scenario skipped: \(error)")
                return nil
            }
            defer { server.stop() }
            var options = FlagClientOptions(baseURL: server.baseURL, key: "bench-polling-key")
            options.pollInterval = .milliseconds(10)
            options.initialContext = EvaluationContext(targetingKey: "user-a")
            options.installIDStorage = .memory
            options.maxCachedContexts = 0
            options.exposures.enabled = false
            guard let client = try? FlagClient(options: options) else { return nil }
            defer { client.close() }
            let ready = DispatchSemaphore(value: 0)
            Task {
                _ = await client.ready(timeout: .seconds(10))
                ready.signal()
            }
            ready.wait()

            let polling = DesignRunner(
                DesignInfo(
                    id: "halyard.bool.polling",
                    title: "flags.bool while the client polls a loopback server every 10 ms",
                    kind: .halyard, publisherSwaps: false, boundID: "halyard.bool"),
                HalyardPollingBool(keys: workload.keys, flags: client), sequence)
            guard let plain = runners.first(where: { $0.info.id == "halyard.bool" }) else { return nil }
            let batch = batches["halyard.bool"] ?? 24

            // The driver: new values every 100 ms, a context switch every 500 ms.
            let stop = Locked(false)
            let identifies = Locked(0)
            let driver = Thread {
                var tick = 0
                while !stop.withLock({ $0 }) {
                    Thread.sleep(forTimeInterval: 0.1)
                    tick += 1
                    server.replaceFlags(documents[tick & 1])
                    if tick % 5 == 0 {
                        let context = EvaluationContext(targetingKey: tick % 10 == 0 ? "user-a" : "user-b")
                        Task {
                            _ = await client.identify(context)
                            identifies.withLock { $0 += 1 }
                        }
                    }
                }
            }
            driver.start()
            defer { stop.withLock { $0 = true } }

            let threadCounts = options_threadsForPolling()
            let rounds = self.options.quick ? 2 : 4
            let durationNs = UInt64(self.options.duration * 1e9)
            var cells: [BenchReport.PollingCell] = []
            let statsBefore = client.stats.sync
            let t0 = halyard_now_ns()
            for threads in threadCounts {
                var pollingRounds: [PassResult] = [], plainRounds: [PassResult] = []
                for round in 0..<rounds {
                    let order = round % 2 == 0 ? [polling, plain] : [plain, polling]
                    for r in order {
                        let result = runPass(
                            r, threads: threads, publisher: false, rate: self.options.rate, batch: batch,
                            durationNs: durationNs, baseline: BaselinePublisher())
                        if r.info.id == polling.info.id {
                            pollingRounds.append(result)
                        } else {
                            plainRounds.append(result)
                        }
                    }
                }
                var pollingHistogram = Histogram(), plainHistogram = Histogram()
                for r in pollingRounds { pollingHistogram.merge(r.histogram) }
                for r in plainRounds { plainHistogram.merge(r.histogram) }
                let ratios = zip(pollingRounds, plainRounds).map { $0.readsPerSecond / $1.readsPerSecond }
                let cell = BenchReport.PollingCell(
                    threads: threads,
                    pollingReadsPerSecond: median(pollingRounds.map(\.readsPerSecond)),
                    plainReadsPerSecond: median(plainRounds.map(\.readsPerSecond)),
                    throughputRatio: median(ratios), throughputRatioRounds: ratios,
                    pollingP50Ns: pollingHistogram.quantileNs(0.5) ?? .nan,
                    pollingP999Ns: pollingHistogram.quantileNs(0.999) ?? .nan,
                    plainP50Ns: plainHistogram.quantileNs(0.5) ?? .nan,
                    plainP999Ns: plainHistogram.quantileNs(0.999) ?? .nan)
                cells.append(cell)
                progress(
                    "[polling] threads=\(threads): \(fmt(significant: cell.pollingReadsPerSecond / 1e6)) vs "
                        + "\(fmt(significant: cell.plainReadsPerSecond / 1e6)) Mreads/s (\(fmt(significant: cell.throughputRatio))x), p99.9 "
                        + "\(fmt(significant: cell.pollingP999Ns)) vs \(fmt(significant: cell.plainP999Ns)) ns")
            }
            let seconds = Double(halyard_now_ns() - t0) / 1e9
            let statsAfter = client.stats.sync
            return BenchReport.Polling(
                pollIntervalMilliseconds: 10, seconds: seconds,
                requestsPerSecond: Double(statsAfter.requestsSent - statsBefore.requestsSent) / seconds,
                snapshotsPerSecond: Double(statsAfter.snapshotsApplied - statsBefore.snapshotsApplied) / seconds,
                notModifiedPerSecond: Double(statsAfter.notModified - statsBefore.notModified) / seconds,
                identifies: identifies.withLock { $0 }, cells: cells)
        }

        private func options_threadsForPolling() -> [Int] {
            let wanted = [1, 4, 64]
            let chosen = wanted.filter { options.threads.contains($0) }
            return chosen.isEmpty ? [options.threads.first ?? 1] : chosen
        }
    }
#endif
