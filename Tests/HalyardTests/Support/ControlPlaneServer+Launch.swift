import Dispatch
import Foundation

extension ControlPlaneServer {
    /// Starts a server like `init(flags:)` on a Dispatch thread rather than a cooperative one:
    /// the launch blocks while Python starts (seconds on a loaded machine), and many suites doing
    /// that at once on the cooperative pool (two threads on a 2-core machine) starve every other
    /// test's timers.
    static func launched(flags: [String: Any] = ["default": []]) async throws -> ControlPlaneServer {
        let document = try JSONSerialization.data(withJSONObject: flags)
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                do {
                    let flags = try JSONSerialization.jsonObject(with: document) as? [String: Any] ?? [:]
                    continuation.resume(returning: try ControlPlaneServer(flags: flags))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }
}
