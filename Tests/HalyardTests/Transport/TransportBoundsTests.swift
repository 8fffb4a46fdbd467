import Foundation
import Testing

@testable import Halyard

/// The curl transport's own deadline (a server that accepts and never answers, more requests than
/// the host-connection limit in flight, libcurl's own timeout switched off) and the response
/// header bound on each transport.
@Suite(.serialized) struct TransportBoundsTests {
    static var flags: [String: Any] { ["default": [["key": "a", "value": 1]]] }

    #if os(Linux)
        @Test func everyRequestFailsAtItsDeadlineBehindTheConnectionLimit() async throws {
            let server = try await ControlPlaneServer.launched(flags: Self.flags)
            defer { server.stop() }
            let count = CurlMulti.maxHostConnections + 8
            try await server.script([["action": "delay", "seconds": 60, "count": count]])
            let library = try CurlLibrary.load(names: CurlLibrary.defaultNames).get()
            // No libcurl timeout at all: only the driver's deadline can end these requests.
            let multi = try CurlMulti(library: library, libcurlBackstop: nil)
            let transport = CurlTransport(multi: multi)
            let request = RefreshTransportTests.request(server, timeout: .seconds(1))
            let outcomes = try await Wait.result("\(count) requests to a server that never answers", seconds: 30) {
                await withTaskGroup(of: String.self) { group in
                    for _ in 0..<count {
                        group.addTask {
                            do {
                                return "status \(try await transport.send(request).status)"
                            } catch {
                                return "\(error)"
                            }
                        }
                    }
                    var all: [String] = []
                    for await outcome in group { all.append(outcome) }
                    return all
                }
            }
            #expect(outcomes.count == count)
            #expect(outcomes.allSatisfy { $0 == "\(TransportError.timedOut)" }, "\(Set(outcomes))")
            try await Wait.until("the driver let go of every handle") { multi.pending.active == 0 }
        }
    #endif

    /// `count` header fields of about 40 bytes each.
    static func headers(_ count: Int) -> [String: String] {
        var fields: [String: String] = [:]
        for index in 0..<count { fields["X-Filler-\(index)"] = String(repeating: "h", count: 24) }
        return fields
    }

    @Test(arguments: TransportKind.available)
    func responseHeadersAreBounded(kind: TransportKind) async throws {
        let server = try await ControlPlaneServer.launched(flags: Self.flags)
        defer { server.stop() }
        let transport = kind.make()
        // ~80 KiB of header fields: over the 64 KiB default.
        try await server.script([["action": "status", "status": 200, "headers": Self.headers(2_000), "body": "{}"]])
        await #expect(throws: TransportError.responseTooLarge(limit: 64 << 10)) {
            try await transport.send(RefreshTransportTests.request(server, timeout: .seconds(10)))
        }
        // A limit of the request's own.
        var small = RefreshTransportTests.request(server, timeout: .seconds(10))
        small.maxResponseHeaderBytes = 4 << 10
        try await server.script([["action": "status", "status": 200, "headers": Self.headers(200), "body": "{}"]])
        await #expect(throws: TransportError.responseTooLarge(limit: 4 << 10)) { try await transport.send(small) }
        // Within the limit: answered.
        try await server.script([["action": "status", "status": 200, "headers": Self.headers(200), "body": "{}"]])
        let fine = try await transport.send(RefreshTransportTests.request(server, timeout: .seconds(10)))
        #expect(fine.status == 200)
        #expect(fine.header("X-Filler-7") != nil)
    }
}
