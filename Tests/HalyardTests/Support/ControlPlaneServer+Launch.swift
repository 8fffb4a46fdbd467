import Dispatch
import Foundation

extension ControlPlaneServer {
    /// Starts a server like `init(flags:exposurePath:tls:)` on a Dispatch thread rather than a
    /// cooperative one: the launch blocks while Python starts (seconds on a loaded machine), and
    /// many suites doing that at once on the cooperative pool (two threads on a 2-core machine)
    /// starve every other test's timers. Tests in async contexts use this, never the initializer.
    static func launched(
        flags: [String: Any] = ["default": []], exposurePath: String? = nil,
        tls: (certificate: String, key: String)? = nil
    ) async throws -> ControlPlaneServer {
        let document = try JSONSerialization.data(withJSONObject: flags)
        let tlsFiles = tls.map { [$0.certificate, $0.key] }
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                do {
                    let flags = try JSONSerialization.jsonObject(with: document) as? [String: Any] ?? [:]
                    let tls = tlsFiles.map { (certificate: $0[0], key: $0[1]) }
                    continuation.resume(
                        returning: try ControlPlaneServer(flags: flags, exposurePath: exposurePath, tls: tls))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }
}
