import Foundation

/// The exposure tests' view of the one loopback server (server.py, launched by
/// ``ControlPlaneServer``): faults written in the exposure tests' short form and the endpoint's
/// report.
typealias ExposureServer = ControlPlaneServer

extension ControlPlaneServer {
    /// Starts a server (no flags) whose exposure endpoint is `/v1/exposures`.
    static func start() async throws -> ControlPlaneServer { try await launched() }

    /// The server script, found from this file's location (exposure_endpoint.py sits beside it).
    static var scriptURL: URL { URL(fileURLWithPath: scriptPath) }

    /// Queues faults for the next uploads, one consumed per upload, in the short form:
    /// `[:]` answers normally; `"status"` (with `"headers"`) answers with that status; `"reset"`
    /// drops the connection; `"delay"` waits first; `"process": true` records the upload before a
    /// status or reset answer.
    func addFaults(_ faults: [[String: Any]], path: String = "/v1/exposures") async throws {
        try await script(
            faults.map { short in
                var fault: [String: Any] = ["path": path]
                if short["reset"] as? Bool == true {
                    fault["action"] = "reset"
                } else if let status = short["status"] {
                    fault["action"] = "status"
                    fault["status"] = status
                    fault["body"] = #"{"error": "injected"}"#
                } else {
                    fault["action"] = "pass"
                }
                for name in ["headers", "delay", "process"] { fault[name] = short[name] }
                return fault
            })
    }

    /// The exposure endpoint's report (`exposure_endpoint.report`), with or without the events.
    func report(includeEvents: Bool = true) async throws -> [String: Any] {
        let data = try await admin("GET", includeEvents ? "_admin/exposures" : "_admin/exposures?summary=1")
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw LaunchError(description: "report: not a JSON object")
        }
        return object
    }
}
