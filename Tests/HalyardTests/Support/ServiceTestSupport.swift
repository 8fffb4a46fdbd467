import Foundation
import HalyardTesting

@testable import Halyard

/// A transport for service tests: answers each OFREP request by the context's targeting key,
/// either with a fault (a status, a hang until the request timeout, a reset, a garbage body)
/// or by passing it to the in-memory plane.
final class ServiceFaultTransport: FlagTransport, Sendable {
    enum Fault: Sendable {
        case status(Int, headers: [String: String] = [:])
        case hang
        case reset
        case garbage
    }

    let inner: InMemoryControlPlane
    private let rule: @Sendable (String) -> Fault?
    private let counts = Locked<[String: Int]>([:])

    init(_ inner: InMemoryControlPlane, rule: @escaping @Sendable (_ targetingKey: String) -> Fault?) {
        self.inner = inner
        self.rule = rule
    }

    /// OFREP requests received, by fault name (`"pass"` for answered ones).
    var received: [String: Int] { counts.withLock { $0 } }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        guard request.url.path.hasSuffix("/ofrep/v1/evaluate/flags") else { return try await inner.send(request) }
        var key = ""
        if case .object(let body)? = OFREPWire.parse(request.body), case .object(let context)? = body["context"],
            case .string(let k)? = context["targetingKey"]
        {
            key = k
        }
        let fault = rule(key)
        let name: String
        switch fault {
        case nil: name = "pass"
        case .status(let code, _): name = "status \(code)"
        case .hang: name = "hang"
        case .reset: name = "reset"
        case .garbage: name = "garbage"
        }
        counts.withLock { $0[name, default: 0] += 1 }
        switch fault {
        case nil:
            return try await inner.send(request)
        case .status(let code, let headers):
            return TransportResponse(status: code, headers: headers)
        case .hang:
            try await Task.sleep(for: request.timeout)
            throw TransportError.timedOut
        case .reset:
            throw TransportError.network("connection reset by peer")
        case .garbage:
            return TransportResponse(status: 200, headers: ["ETag": "\"x\""], body: Data("{\"flags\": [".utf8))
        }
    }
}

/// A context with ten attributes, as the service benchmark uses.
func serviceContext(_ id: Int, kind: String = "user") -> EvaluationContext {
    var attributes: [String: JSONValue] = [:]
    for a in 0..<9 { attributes["attr\(a)"] = .string("value-\(id % (a + 7))") }
    attributes["plan"] = .string(id % 3 == 0 ? "pro" : "free")
    return EvaluationContext(targetingKey: "user-\(id)", kind: kind, attributes: attributes)
}

/// Holds every request while closed (``close()``) and lets them all through on ``open()``:
/// a test's reads then all find their fetches outstanding, as on a machine too loaded to run a
/// fetch task while a burst of requests arrives. Open when made.
final class BarrierTransport: FlagTransport, Sendable {
    let inner: any FlagTransport
    private let barrier = Barrier(open: true)

    init(_ inner: any FlagTransport) { self.inner = inner }

    /// Requests arriving from now on wait for ``open()``.
    func close() { barrier.close() }

    /// Lets the waiting requests and every later one through.
    func open() { barrier.open() }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        await barrier.pass()
        return try await inner.send(request)
    }
}

/// A control plane that tells keys apart (SPEC §12, key rotation): a request carrying
/// `Bearer old-key` is held until ``releaseOne()`` and then answered `oldKeyStatus` (a 200
/// serves `env = "old"`; a 429 or 503 carries `Retry-After: 60`); any other key is answered at
/// once with `env = "new"`.
final class OldKeyTransport: FlagTransport, Sendable {
    let oldKeyStatus: Int
    private let waiting = Locked<[CheckedContinuation<Void, Never>]>([])
    var held: Int { waiting.withLock { $0.count } }

    init(oldKeyStatus: Int) { self.oldKeyStatus = oldKeyStatus }

    func releaseOne() {
        let next = waiting.withLock { $0.isEmpty ? nil : $0.removeFirst() }
        next?.resume()
    }

    static func answer(_ env: String) -> TransportResponse {
        let body = #"{"flags":[{"key":"env","value":"\#(env)","reason":"STATIC"}]}"#
        return TransportResponse(status: 200, headers: ["Content-Type": "application/json"], body: Data(body.utf8))
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        guard request.headers["Authorization"] == "Bearer old-key" else { return Self.answer("new") }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in waiting.withLock { $0.append(c) } }
        if oldKeyStatus == 200 { return Self.answer("old") }
        return TransportResponse(status: oldKeyStatus, headers: ["Retry-After": "60"])
    }
}
