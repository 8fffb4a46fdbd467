#if os(Linux)
    import Foundation
    import Testing

    @testable import Halyard

    /// libcurl loaded at run time: the real library loads and passes the version check; a library
    /// that is missing, is not libcurl, or is too old is refused with the reason, and the default
    /// transport then falls back to URLSession with one log line, and requests still work.
    @Suite struct CurlLoaderTests {
        /// A log handler that keeps what it is given.
        final class LogLines: Sendable {
            let lines = Locked<[(HalyardLogLevel, String)]>([])
            var handler: HalyardLogHandler { { level, message in self.lines.withLock { $0.append((level, message)) } } }
        }

        @Test func theSystemLibcurlLoadsAndIsRecentEnough() throws {
            let library = try CurlLibrary.load(names: CurlLibrary.defaultNames).get()
            #expect(library.versionNumber >= CurlABI.minimumVersion, "libcurl \(library.version)")
            #expect(CurlTransport.isAvailable)
            #expect(makeDefaultTransport() is CurlTransport)
        }

        @Test func aMissingLibraryFallsBackToURLSessionWithOneLogLineAndRequestsStillWork() async throws {
            let log = LogLines()
            let transport = makeDefaultTransport(
                libraryNames: ["libhalyard-no-such-curl.so.4", "libhalyard-no-such-curl.so"],
                logHandler: HalyardLogRecord.sink(logHandler: log.handler, recordHandler: nil))
            #expect(transport is URLSessionTransport)
            let lines = log.lines.value
            #expect(lines.count == 1, "\(lines.map(\.1))")
            #expect(lines.first?.0 == .warning)
            #expect(lines.first?.1.contains("libhalyard-no-such-curl.so.4") == true, "\(lines.map(\.1))")

            let server = try await ControlPlaneServer.launched(flags: ["default": [["key": "a", "value": 1]]])
            defer { server.stop() }
            #expect(
                try await transport.send(RefreshTransportTests.request(server, timeout: .seconds(10))).status == 200)
        }

        @Test func aLibraryThatIsNotLibcurlIsRefusedByTheFunctionItLacks() {
            // zlib is on every machine Halyard builds on (the CZlib target needs it).
            let result = CurlLibrary.load(names: ["libz.so.1"])
            guard case .failure(let why) = result else {
                Issue.record("libz.so.1 was accepted as libcurl")
                return
            }
            #expect(why.reason.contains("curl_version_info"), "\(why.reason)")
            let log = LogLines()
            #expect(
                makeDefaultTransport(
                    libraryNames: ["libz.so.1"],
                    logHandler: HalyardLogRecord.sink(logHandler: log.handler, recordHandler: nil))
                    is URLSessionTransport)
            #expect(log.lines.value.count == 1)
        }

        @Test func theVersionCheck() {
            let ssl = CurlABI.featureSSL
            #expect(CurlLibrary.unsupportedReason(versionNumber: 0x07_43_00, features: ssl) != nil)  // 7.67.0
            #expect(CurlLibrary.unsupportedReason(versionNumber: 0x07_44_00, features: ssl) == nil)  // 7.68.0
            #expect(CurlLibrary.unsupportedReason(versionNumber: 0x08_05_00, features: ssl) == nil)
            #expect(CurlLibrary.unsupportedReason(versionNumber: 0x08_05_00, features: 0) != nil)  // no TLS
        }

        @Test func aRequestCancelledBeforeItWasAddedLeavesNothingQueued() async throws {
            let library = try CurlLibrary.load(names: CurlLibrary.defaultNames).get()
            let multi = try CurlMulti(library: library)
            let transport = CurlTransport(multi: multi)
            let server = try await ControlPlaneServer.launched(flags: ["default": [["key": "a", "value": 1]]])
            defer { server.stop() }
            let request = RefreshTransportTests.request(server, timeout: .seconds(10))
            for _ in 0..<20 {
                let task = Task {
                    withUnsafeCurrentTask { $0?.cancel() }
                    return try await transport.send(request)
                }
                await #expect(throws: TransportError.cancelled) { try await task.value }
            }
            let pending = multi.pending
            #expect(pending.additions == 0 && pending.removals == 0, "\(pending)")
            // The multi handle still serves.
            #expect(try await transport.send(request).status == 200)
        }
    }
#endif
