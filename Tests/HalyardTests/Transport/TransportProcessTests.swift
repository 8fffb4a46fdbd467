import CHalyardTestMalloc
import Foundation
import Testing

@testable import Halyard

/// Process-wide proofs for the Linux transport: resident memory stays flat over 20,000 requests,
/// and 300 clients created and closed leave no thread and no memory behind; the heap per guarded
/// request and a polling client under churn are in `TransportProcessTests+Churn.swift`.
///
/// They read process-wide figures (`/proc/self/status`, `/proc/self/task`), which other suites
/// running in parallel would disturb, so they run only when `HALYARD_PROCESS_TESTS=1`, alone:
/// `HALYARD_PROCESS_TESTS=1 swift test --skip-build --filter TransportProcessTests` (a step of
/// `.ci/run`; about two and a half minutes with the churn test's default 60 s).
@Suite(
    .serialized,
    .enabled(
        if: ProcessInfo.processInfo.environment["HALYARD_PROCESS_TESTS"] == "1",
        "process-wide measurements: run alone with HALYARD_PROCESS_TESTS=1"))
struct TransportProcessTests {
    static var flags: [String: Any] { ["default": [["key": "a", "value": true, "reason": "STATIC"]]] }

    /// Sends `count` requests, `concurrency` at a time, each expecting a 200.
    static func send(_ count: Int, concurrency: Int, _ transport: any FlagTransport, _ request: TransportRequest)
        async throws
    {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<concurrency {
                let share = count / concurrency + (worker < count % concurrency ? 1 : 0)
                group.addTask {
                    for _ in 0..<share {
                        let response = try await transport.send(request)
                        guard response.status == 200 else { throw TransportError.network("status \(response.status)") }
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    @Test(arguments: TransportKind.available)
    func twentyThousandRequestsKeepResidentMemoryFlat(kind: TransportKind) async throws {
        let server = try await ControlPlaneServer.launched(flags: Self.flags)
        defer { server.stop() }
        let transport = kind.make()
        let request = RefreshTransportTests.request(server, timeout: .seconds(10))
        try await Self.send(2_000, concurrency: 4, transport, request)
        let early = try #require(ProcessProbe.residentBytes)
        try await Self.send(18_000, concurrency: 4, transport, request)
        let late = try #require(ProcessProbe.residentBytes)
        let growth = late - early
        print("\(kind.rawValue): resident \(early >> 10) KiB after 2,000 requests, \(late >> 10) KiB after 20,000")
        if kind == .urlSession {
            // FoundationNetworking keeps ~190 bytes per request (issue 15): recorded, not required.
            withKnownIssue("URLSession on Linux grows per request", isIntermittent: true) {
                #expect(growth < 256 << 10, "URLSession: resident memory grew by \(growth >> 10) KiB")
            }
        } else {
            #expect(growth < 256 << 10, "resident memory grew by \(growth >> 10) KiB over 18,000 requests")
        }
    }

    /// A stream URL answering 503 leaks nothing per open (SPEC §14: "a stream URL answering 503
    /// for a day leaks nothing"): 5,000 opens, each cancelled, and resident memory flat; the
    /// curl transport's live stream transfers back to zero. Before the fix about 10 KB stayed
    /// per open (the transfer and its easy handle, held in a cycle).
    @Test(arguments: TransportKind.available)
    func fiveThousandOpensOfA503StreamURLKeepResidentMemoryFlat(kind: TransportKind) async throws {
        let server = try await ControlPlaneServer.launched(flags: Self.flags)
        defer { server.stop() }
        let transport = try #require(kind.make() as? any StreamingTransport)
        let request = TransportRequest(
            method: "GET", url: server.streamURL("mode=status&status=503"), headers: [:], timeout: .seconds(10))
        func open(_ count: Int) async throws {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<4 {
                    group.addTask {
                        for _ in 0..<(count / 4 + (worker < count % 4 ? 1 : 0)) {
                            let stream = try await transport.openStream(request, inactivityTimeout: .seconds(30))
                            stream.cancel()
                            guard stream.status == 503 else { throw TransportError.network("status \(stream.status)") }
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        try await open(500)
        let early = try #require(ProcessProbe.residentBytes)
        try await open(4_500)
        let late = try #require(ProcessProbe.residentBytes)
        let growth = late - early
        print(
            "\(kind.rawValue): resident \(early >> 10) KiB after 500 opens of a 503 stream, \(late >> 10) KiB after 5,000"
        )
        #if canImport(CHalyardCurl)
            if let curl = transport as? CurlTransport {
                try await Wait.until("every stream transfer freed (\(curl.liveStreamTransfers.value) alive)") {
                    curl.liveStreamTransfers.value == 0
                }
            }
        #endif
        if kind == .urlSession {
            // FoundationNetworking keeps memory per task on Linux (see above): recorded, not required.
            withKnownIssue("URLSession on Linux grows per request", isIntermittent: true) {
                #expect(growth < 512 << 10, "URLSession: resident memory grew by \(growth >> 10) KiB")
            }
        } else {
            #expect(growth < 512 << 10, "resident memory grew by \(growth >> 10) KiB over 4,500 opens of a 503 stream")
        }
    }

    /// A client on the platform's default transport (`kind == nil`) or on `kind`.
    static func makeClient(_ server: ControlPlaneServer, _ kind: TransportKind?) throws -> FlagClient {
        var options = FlagClientOptions(baseURL: server.baseURL, key: "process-test")
        if let kind { options.transport = kind.make() }
        options.installIDStorage = .fixed("install-process")
        options.maxCachedContexts = 0
        options.pollInterval = .zero
        options.exposures.enabled = false
        return try FlagClient(options: options)
    }

    /// Waits (real time, bounded) until the thread count is back to `limit` or below.
    static func threadsSettle(atMost limit: Int, seconds: Double = 15) async -> Int {
        let deadline = Date().addingTimeInterval(seconds)
        var count = ProcessProbe.threadCount ?? .max
        while count > limit, Date() < deadline {
            try? await Task.sleep(for: .milliseconds(50))
            count = ProcessProbe.threadCount ?? .max
        }
        return count
    }

    /// Bytes malloc has handed out and not taken back (arenas and mmap'd chunks; 0 where the
    /// allocator's figures are unknown).
    static var mallocInUse: Int {
        let stats = halyard_test_malloc_stats_now()
        return Int(stats.inUseBytes + stats.mmappedBytes)
    }

    /// The default transport (curl on Linux) must leave nothing; URLSession is measured too, as a
    /// known issue.
    ///
    /// Memory is read two ways, each after `malloc_trim`: bytes malloc has handed out and not
    /// taken back (`mallinfo2`, every arena: what a leak grows), and resident memory. Untrimmed,
    /// resident memory after the suite's other tests (the process then has twice the threads,
    /// so glibc spreads the clients over more arenas, each keeping its own free space) grew
    /// 744-772 KiB for 300 clients while alone it grew 232-292 KiB.
    @Test(arguments: [nil] + TransportKind.available.filter { $0 == .urlSession })
    func threeHundredClientsCreatedAndClosedLeaveNoThreadsAndNoMemory(kind: TransportKind?) async throws {
        let server = try await ControlPlaneServer.launched(flags: Self.flags)
        defer { server.stop() }
        // Warm-up: the cooperative pool, Foundation, libcurl's caches and the shared driver exist.
        for _ in 0..<30 {
            let client = try Self.makeClient(server, kind)
            #expect(await client.ready(timeout: .seconds(30)))
            client.close()
        }
        try await Task.sleep(for: .seconds(2))  // let the driver thread's idle linger pass
        let threadsBefore = try #require(ProcessProbe.threadCount)
        _ = halyard_test_malloc_trim()
        let residentBefore = try #require(ProcessProbe.residentBytes)
        let inUseBefore = Self.mallocInUse
        for _ in 0..<300 {
            let client = try Self.makeClient(server, kind)
            #expect(await client.ready(timeout: .seconds(30)))
            #expect(client.bool("a", default: false))
            client.close()
        }
        let threadsAfter = await Self.threadsSettle(atMost: threadsBefore)
        _ = halyard_test_malloc_trim()
        let residentAfter = try #require(ProcessProbe.residentBytes)
        let inUseAfter = Self.mallocInUse
        let growth = residentAfter - residentBefore
        let inUseGrowth = inUseAfter - inUseBefore
        let name = kind?.rawValue ?? "default"
        print(
            "300 clients (\(name)): threads \(threadsBefore) → \(threadsAfter), resident \(residentBefore >> 10) → \(residentAfter >> 10) KiB, malloc in use \(inUseBefore >> 10) → \(inUseAfter >> 10) KiB"
        )
        let check = {
            #expect(threadsAfter <= threadsBefore, "threads left behind: \(threadsBefore) → \(threadsAfter)")
            #expect(inUseGrowth < 256 << 10, "300 clients (\(name)) left \(inUseGrowth >> 10) KiB allocated")
            #expect(growth < 512 << 10, "300 clients (\(name)) left \(growth >> 10) KiB of resident memory")
        }
        if kind == .urlSession {
            withKnownIssue("URLSession on Linux keeps memory per session", isIntermittent: true) { check() }
        } else {
            #expect(threadsAfter <= threadsBefore, "threads left behind: \(threadsBefore) → \(threadsAfter)")
            #expect(growth < 512 << 10, "300 clients (\(name)) left \(growth >> 10) KiB of resident memory")
            // Until SystemClock slept on a Dispatch timer (TimerSleep) every client left ~0.93 KiB
            // here: the cancelled `Task.sleep` of its `ready(timeout: 30 s)` and of its driver's
            // wakes, kept until the time they would have woken (285-304 KiB for 300 clients).
            #expect(inUseGrowth < 256 << 10, "300 clients (\(name)) left \(inUseGrowth >> 10) KiB allocated")
        }
    }

    /// `SystemClock.sleep` gives its memory back when the sleep is cancelled, not when it would
    /// have woken: 5,000 sleeps of an hour, each cancelled, leave under 1 MiB allocated (measured
    /// here: ~360 KiB, the test process's own noise; heaptrack on a program of its own: +21 KiB
    /// from 1,000 to 5,000 sleeps, as for tasks that do not sleep). With `Task.sleep` each kept
    /// ~680 bytes (the sleeping job and the runtime's timer source) for the hour: +2.65 MiB from
    /// 1,000 to 5,000 under heaptrack, so this would leave over 3 MiB.
    @Test func cancelledSleepsKeepNoMemory() async throws {
        let clock = SystemClock()
        // Rounds of 100 at once, as clients' sleeps come (a few per client, one after another):
        // Dispatch keeps freed sources' memory in per-thread caches sized by the most it held at
        // once, which is not what this measures.
        func cancelled(_ count: Int) async {
            for _ in 0..<(count / 100) {
                await withTaskGroup(of: Void.self) { group in
                    for _ in 0..<100 { group.addTask { try? await clock.sleep(for: .seconds(3600)) } }
                    try? await Task.sleep(for: .milliseconds(5))  // most of them are sleeping by now
                    group.cancelAll()
                }
            }
        }
        await cancelled(500)  // warm-up: the cooperative pool and Dispatch's caches exist
        _ = halyard_test_malloc_trim()
        let before = Self.mallocInUse
        await cancelled(5_000)
        try await Task.sleep(for: .milliseconds(200))  // timer sources are released asynchronously
        _ = halyard_test_malloc_trim()
        let growth = Self.mallocInUse - before
        print("5,000 cancelled sleeps of an hour: malloc in use \(before >> 10) → \((before + growth) >> 10) KiB")
        #expect(growth < 1 << 20, "5,000 cancelled sleeps left \(growth >> 10) KiB allocated")
    }
}
