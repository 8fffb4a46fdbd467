import Foundation

@testable import Halyard

/// A control plane that does not notice cancellation (SPEC §12, "Key rotation"): requests
/// carrying `Bearer <oldKey>` from the `holdFrom`-th on are held until ``releaseAll()``,
/// whatever happens to their task, and then answered `lateStatus` (counted in ``landed``): a
/// 200 with the old environment's value (`env = "old"`, ETag `"old"`), a 304, or any other
/// status with `Retry-After: 60`. Earlier old-key requests are answered the old environment's
/// 200 at once; any other key gets `env = "new"` (ETag `"new"`) at once.
final class LateOldKeyTransport: FlagTransport, Sendable {
    private struct State {
        var held: [CheckedContinuation<Void, Never>] = []
        var released = false
        var oldKeyRequests = 0
        var newKeyRequests = 0
        var landed = 0
    }

    private let state = Locked(State())
    private let oldKey: String
    private let holdFrom: Int
    private let lateStatus: Int

    init(oldKey: String = "old-key", holdFrom: Int = 1, lateStatus: Int = 200) {
        self.oldKey = oldKey
        self.holdFrom = holdFrom
        self.lateStatus = lateStatus
    }

    /// Old-key requests held now.
    var held: Int { state.withLock { $0.held.count } }
    /// Held old-key requests the transport has answered (after ``releaseAll()``).
    var landed: Int { state.withLock { $0.landed } }
    /// Requests carrying another key.
    var newKeyRequests: Int { state.withLock { $0.newKeyRequests } }

    /// Answers every held request, and every later one at once.
    func releaseAll() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.released = true
            defer { s.held.removeAll() }
            return s.held
        }
        for waiter in waiters { waiter.resume() }
    }

    static func answer(_ env: String) -> TransportResponse {
        let body = #"{"flags":[{"key":"env","value":"\#(env)","reason":"STATIC"}]}"#
        return TransportResponse(
            status: 200, headers: ["Content-Type": "application/json", "ETag": "\"\(env)\""], body: Data(body.utf8))
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        guard request.headers["Authorization"] == "Bearer \(oldKey)" else {
            state.withLock { $0.newKeyRequests += 1 }
            return Self.answer("new")
        }
        let number = state.withLock { s -> Int in
            s.oldKeyRequests += 1
            return s.oldKeyRequests
        }
        guard number >= holdFrom else { return Self.answer("old") }
        // No cancellation handler: the answer comes when the test says, cancelled or not.
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if !s.released { s.held.append(c) }
                return s.released
            }
            if now { c.resume() }
        }
        defer { state.withLock { $0.landed += 1 } }
        switch lateStatus {
        case 200: return Self.answer("old")
        case 304: return TransportResponse(status: 304, headers: ["ETag": "\"old\""])
        default: return TransportResponse(status: lateStatus, headers: ["Retry-After": "60"])
        }
    }
}
