import Foundation
import Testing

@testable import Halyard

#if os(Linux)
    import CHalyardTestMalloc

    /// Issue 20, item 4: an online client on the default (curl) transport under churn keeps its
    /// resident memory flat. Polling every 20 ms against the loopback server.py, 8 reader threads
    /// reading continuously, and the churn sources: the served values change every 100 ms (through
    /// the admin API, sent on a curl transport: the test's own URLSession would be the growth
    /// measured, issue 15), `identify` every 200 ms (50 users in turn), exposures on (uploaded every
    /// 200 ms).
    ///
    /// Every second it samples resident memory (`VmRSS`) and glibc's `mallinfo2` (bytes in use, arena
    /// size); the slope of the least-squares line over the last half of the run tells a leak (bytes
    /// in use rising) from allocator growth (resident memory rising, bytes in use flat) and from a
    /// bounded table filling (rising, then flat: the first half). The last half's resident slope
    /// is asserted under 0.5 KB/s for runs of 10 minutes or more (``residentSlopeBound(seconds:)``).
    ///
    /// `HALYARD_CHURN_SECONDS` sets the run length (*default* 60 s, CI's; clamped to 20...3,600; the
    /// issue's proof run is 600 s). `HALYARD_CHURN_OFF` switches churn sources off, a comma-separated
    /// list of `values`, `identify`, `exposures`, `cache` (the on-device cache, on by default like
    /// the client's, in a temporary folder), `readers`. `HALYARD_CHURN_CSV` names a file that gets every
    /// sample. Results: docs/benchmarks-transport.md, "Memory under churn".
    ///
    /// Swift Testing keeps a backtrace of every error thrown while a test runs (a `swift_willThrow`
    /// hook; stale entries are flushed between tests), and every `identify` cancels the poll in
    /// flight, which throws: over a long run that cache is most of the live heap's growth
    /// (heaptrack, 2026-12-07). `.ci/run` and the documented commands set
    /// `SWT_SWIFT_ERROR_BACKTRACING_ENABLED=0` so the heap measured is the client's; the line
    /// printed says which it was.
    extension TransportProcessTests {
        /// Whether Swift Testing records a backtrace for every thrown error in this process (its
        /// *default*; `SWT_SWIFT_ERROR_BACKTRACING_ENABLED=0` turns it off).
        static var capturesThrownErrorBacktraces: Bool {
            ProcessInfo.processInfo.environment["SWT_SWIFT_ERROR_BACKTRACING_ENABLED"] != "0"
        }

        /// The run length in seconds (see above).
        static let churnSeconds: Double = {
            let raw = ProcessInfo.processInfo.environment["HALYARD_CHURN_SECONDS"].flatMap(Double.init) ?? 60
            return min(max(raw, 20), 3_600)
        }()

        /// The churn sources switched off (see above).
        static let churnOff: Set<String> = Set(
            (ProcessInfo.processInfo.environment["HALYARD_CHURN_OFF"] ?? "").split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces)
            })

        /// The flag-set document with `n` at `round` (16 values in turn, each its own variant) and a
        /// per-user value for the identified users.
        static func churnFlags(round: Int) -> [String: Any] {
            let value = round % 16
            let shared: [[String: Any]] = [
                ["key": "a", "value": true, "reason": "STATIC"],
                ["key": "n", "value": value, "variant": "v\(value)", "reason": "STATIC"],
                ["key": "s", "value": "x", "reason": "STATIC"],
            ]
            var contexts: [String: Any] = [:]
            for user in 0..<50 {
                contexts["user-\(user)"] =
                    shared + [
                        ["key": "u", "value": "\(user)-\(value)", "variant": "u\(value)", "reason": "TARGETING_MATCH"]
                    ]
            }
            return ["default": shared, "contexts": contexts]
        }

        /// One sample of the process's memory.
        struct ChurnSample {
            var seconds: Double
            var residentBytes: Int
            /// The anonymous part of resident memory (`RssAnon`: heap, stacks; not the binary's pages).
            var anonymousBytes: Int
            var malloc: halyard_test_malloc_stats
            var requests: Int

            /// Bytes handed out by malloc (arenas and mmap'd chunks).
            var inUseBytes: Int { Int(malloc.inUseBytes + malloc.mmappedBytes) }
        }

        @Test func pollingClientUnderChurnKeepsResidentMemoryFlat() async throws {
            if case .failure(let why) = CurlMulti.shared {
                Issue.record("libcurl did not load, the default transport is not curl: \(why.reason)")
                return
            }
            let seconds = Self.churnSeconds
            let off = Self.churnOff
            let server = try await ControlPlaneServer.launched(flags: Self.churnFlags(round: 0))
            defer { server.stop() }
            let admin = CurlTransport()
            let cacheFolder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "halyard-churn-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: cacheFolder) }
            var options = FlagClientOptions(baseURL: server.baseURL, key: "churn-test")
            options.installIDStorage = .fixed("install-churn")
            options.changeDetection = .polling
            options.pollInterval = .milliseconds(20)
            options.pollJitter = 0.1
            options.requestTimeout = .seconds(5)
            // The on-device cache on (its default), in a folder of the test's own.
            options.cacheDirectory = cacheFolder
            options.maxCachedContexts = off.contains("cache") ? 0 : 5
            options.exposures.enabled = !off.contains("exposures")
            options.exposures.flushInterval = .milliseconds(200)
            options.exposures.dedupWindow = .seconds(1)
            // Diagnosis: HALYARD_CHURN_TRANSPORT=memory answers in process (no sockets, no libcurl).
            if ProcessInfo.processInfo.environment["HALYARD_CHURN_TRANSPORT"] == "memory" {
                let plane = SoakTests.StatelessPlane()
                plane.setValue(.bool(true), for: "a")
                options.transport = plane
            }
            let client = try FlagClient(options: options)  // transport nil: the default, curl
            #expect(await client.ready(timeout: .seconds(10)))

            // 8 reader threads (real threads, so the cooperative pool stays the client's), reading
            // continuously in batches of 1,000 with a short pause between batches.
            let stop = Locked(false)
            let readsDone = Locked((threads: 0, reads: 0, checksum: 0))
            let readerCount = off.contains("readers") ? 0 : 8
            for _ in 0..<readerCount {
                Thread.detachNewThread {
                    var reads = 0
                    var sink = 0
                    while !stop.value {
                        for _ in 0..<250 {
                            if client.bool("a", default: false) { sink &+= 1 }
                            sink &+= client.int("n", default: 0)
                            sink &+= client.string("s", default: "").utf8.count
                            sink &+= client.string("u", default: "").utf8.count
                        }
                        reads += 1_000
                        usleep(500)
                    }
                    readsDone.withLock {
                        $0.threads += 1
                        $0.reads += reads
                        $0.checksum &+= sink
                    }
                }
            }
            let changes = Task {
                var round = 0
                var failures = 0
                while !Task.isCancelled {
                    round += 1
                    let request = TransportRequest(
                        url: server.baseURL.appendingPathComponent("_admin/flags"),
                        headers: ["Content-Type": "application/json"],
                        body: try JSONSerialization.data(withJSONObject: Self.churnFlags(round: round)),
                        timeout: .seconds(5))
                    if (try? await admin.send(request))?.status != 200 { failures += 1 }
                    try? await Task.sleep(for: .milliseconds(100))
                }
                return (round, failures)
            }
            let identifies = Task {
                var done = 0
                var round = 0
                while !Task.isCancelled {
                    round += 1
                    if await client.identify(EvaluationContext(targetingKey: "user-\(round % 50)")) { done += 1 }
                    try? await Task.sleep(for: .milliseconds(200))
                }
                return done
            }
            if off.contains("values") { changes.cancel() }
            if off.contains("identify") { identifies.cancel() }

            let start = ContinuousClock.now
            var samples: [ChurnSample] = []
            while true {
                let elapsed = Self.seconds(ContinuousClock.now - start)
                guard let resident = ProcessProbe.residentBytes else { break }
                samples.append(
                    ChurnSample(
                        seconds: elapsed, residentBytes: resident,
                        anonymousBytes: ProcessProbe.statusBytes("RssAnon") ?? 0,
                        malloc: halyard_test_malloc_stats_now(),
                        requests: client.stats.sync.requestsSent))
                if elapsed >= seconds { break }
                try await Task.sleep(for: .seconds(1))
            }
            stop.withLock { $0 = true }
            changes.cancel()
            identifies.cancel()
            let (rounds, changeFailures) = try await changes.value
            let identified = await identifies.value
            try await Wait.until("the reader threads to stop", seconds: 30) { readsDone.value.threads == readerCount }
            let stats = client.stats
            let report = await client.shutdown(timeout: .seconds(5))

            let residentSlope = MemorySlope.lastHalf(
                samples.map { (seconds: $0.seconds, bytes: Double($0.residentBytes)) }, runSeconds: seconds)
            let inUseSlope = MemorySlope.lastHalf(
                samples.map { (seconds: $0.seconds, bytes: Double($0.inUseBytes)) }, runSeconds: seconds)
            let anonymousSlope = MemorySlope.lastHalf(
                samples.map { (seconds: $0.seconds, bytes: Double($0.anonymousBytes)) }, runSeconds: seconds)
            let arenaSlope = MemorySlope.lastHalf(
                samples.map { (seconds: $0.seconds, bytes: Double($0.malloc.arenaBytes)) }, runSeconds: seconds)
            let firstHalfSlope = MemorySlope.bytesPerSecond(
                samples.filter { $0.seconds < seconds / 2 }.map {
                    (seconds: $0.seconds, bytes: Double($0.residentBytes))
                }
            )
            Self.writeChurnCSV(samples)
            let residentBeforeTrim = ProcessProbe.residentBytes ?? 0
            _ = halyard_test_malloc_trim()
            let residentAfterTrim = ProcessProbe.residentBytes ?? 0
            let first = samples.first
            let last = samples.last
            func perSecond(_ value: Double?) -> String { value.map { String(format: "%.1f B/s", $0) } ?? "n/a" }
            print(
                """
                churn \(Int(seconds)) s (off: \(off.isEmpty ? "none" : off.sorted().joined(separator: ","))\
                \(Self.capturesThrownErrorBacktraces ? "; Swift Testing's thrown-error backtraces on" : "")): \
                \(stats.sync.requestsSent) polls (\(stats.sync.snapshotsApplied) snapshots, \
                \(stats.sync.notModified) not modified, \(stats.sync.networkErrors) network errors, \
                \(stats.sync.timeouts) timeouts), \(rounds) value changes (\(changeFailures) failed), \
                \(identified) identifies, \(stats.exposures.sent) exposures sent, \
                \(readsDone.value.reads) reads; samples \(samples.count)
                churn resident \((first?.residentBytes ?? 0) >> 10) → \((last?.residentBytes ?? 0) >> 10) KiB, \
                slope first half \(perSecond(firstHalfSlope)), last half \(perSecond(residentSlope)); \
                anonymous \((first?.anonymousBytes ?? 0) >> 10) → \((last?.anonymousBytes ?? 0) >> 10) KiB, \
                last-half slope \(perSecond(anonymousSlope)); \
                malloc in use \((first?.inUseBytes ?? 0) >> 10) → \((last?.inUseBytes ?? 0) >> 10) KiB, \
                last-half slope \(perSecond(inUseSlope)); arena \(Int(first?.malloc.arenaBytes ?? 0) >> 10) → \
                \(Int(last?.malloc.arenaBytes ?? 0) >> 10) KiB, last-half slope \(perSecond(arenaSlope)); \
                malloc_trim: resident \(residentBeforeTrim >> 10) → \(residentAfterTrim >> 10) KiB
                """)

            #expect(report.completed)
            #expect(stats.sync.requestsSent >= Int(seconds) * 5, "polling stalled: \(stats.sync.requestsSent) polls")
            if !off.contains("values") { #expect(rounds > Int(seconds), "value changes stalled: \(rounds)") }
            if !off.contains("identify") { #expect(identified > 0) }
            // An exposure is recorded by a read: with the readers off there is none to send.
            if !off.contains("exposures"), !off.contains("readers") { #expect(stats.exposures.sent > 0) }
            let slope = try #require(residentSlope, "too few samples: \(samples.count)")
            let bound = Self.residentSlopeBound(seconds: seconds)
            #expect(
                slope < bound,
                "resident memory rose \(perSecond(slope)) over the last half of \(Int(seconds)) s (bound \(perSecond(bound)); malloc in use: \(perSecond(inUseSlope)))"
            )
        }

        /// The bound on the last half's resident-memory slope, in bytes per second: the issue's
        /// 0.5 KB/s from a 10-minute run on. A shorter run's last half is still warm-up (measured
        /// after the fix: ~3 KB/s over 30–60 s, ~1 KB/s over 120–240 s, 0.2 KB/s over 300–600 s, as
        /// the exposure, context and connection tables fill to their bounds), so CI's 60 s run
        /// asserts only that memory does not run away (16 KB/s); the per-request leak it cannot see
        /// is `curlRequestsKeepNoHeapMemory`'s to catch. See docs/benchmarks-transport.md.
        static func residentSlopeBound(seconds: Double) -> Double {
            seconds >= 600 ? 500 : 16_000
        }

        static func seconds(_ duration: Duration) -> Double {
            duration.fractionalSeconds
        }

        /// Writes every sample to `HALYARD_CHURN_CSV` when set.
        static func writeChurnCSV(_ samples: [ChurnSample]) {
            guard let path = ProcessInfo.processInfo.environment["HALYARD_CHURN_CSV"] else { return }
            var text =
                "seconds,resident_bytes,anonymous_bytes,malloc_in_use_bytes,malloc_arena_bytes,malloc_free_bytes,polls\n"
            for s in samples {
                text +=
                    "\(String(format: "%.2f", s.seconds)),\(s.residentBytes),\(s.anonymousBytes),\(s.inUseBytes),\(s.malloc.arenaBytes),\(s.malloc.freeBytes),\(s.requests)\n"
            }
            try? text.write(toFile: path, atomically: true, encoding: .utf8)
        }
    }
#endif

#if os(Linux)
    extension TransportProcessTests {
        /// Issue 20, item 4's finding, at its source: a request sent through Halyard's deadline
        /// guard (as every client request is) over the curl transport keeps no heap memory, neither
        /// while its deadline would still be running nor after. Counted with malloc's own figure
        /// (resident memory hides it while the arenas have free room), over 10,000 requests with a
        /// 2 s timeout, after 2,000 of warm-up. The unguarded transport is the control. With the
        /// guard's deadline a sleeping task (before the fix) this failed with 268 B per request right
        /// after and 51 B per request once the deadlines had passed.
        @Test(arguments: [false, true])
        func curlRequestsKeepNoHeapMemory(guarded: Bool) async throws {
            let server = try await ControlPlaneServer.launched(flags: Self.flags)
            defer { server.stop() }
            let transport = guarded ? GuardedTransport.wrapping(CurlTransport(), logHandler: nil) : CurlTransport()
            let request = RefreshTransportTests.request(server, timeout: .seconds(2))
            try await Self.send(2_000, concurrency: 1, transport, request)
            try await Task.sleep(for: .seconds(3))  // the warm-up's deadlines pass
            let before = Self.mallocInUse
            try await Self.send(10_000, concurrency: 1, transport, request)
            let rightAfter = Self.mallocInUse
            try await Task.sleep(for: .seconds(3))  // every deadline has passed
            let after = Self.mallocInUse
            let inFlightPerRequest = Double(rightAfter - before) / 10_000
            let perRequest = Double(after - before) / 10_000
            func format(_ value: Double) -> String { String(format: "%.1f", value) }
            print(
                "curl (guarded: \(guarded)): malloc in use \(before >> 10) → \(rightAfter >> 10) KiB right after 10,000 requests (\(format(inFlightPerRequest)) B per request), \(after >> 10) KiB 3 s later (\(format(perRequest)) B per request)"
            )
            #expect(
                inFlightPerRequest < 32,
                "\(format(inFlightPerRequest)) bytes of heap per request while the deadlines would run")
            #expect(perRequest < 4, "\(format(perRequest)) bytes of heap kept per request")
        }
    }
#endif
