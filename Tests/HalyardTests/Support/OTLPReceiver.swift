import Foundation

/// The OTLP tests' view of the loopback server (server.py's `/v1/logs`, otlp_endpoint.py) and of
/// the independent OTLP implementation (otlp_parse.py run by the Python of `opentelemetry-proto`).
extension ControlPlaneServer {
    /// The OTLP endpoint (the server's base URL; the exporter appends `/v1/logs`).
    var otlpEndpoint: URL { baseURL }

    /// Queues faults for the next OTLP exports, one consumed per request: `[:]` answers
    /// normally; `"status"` (with `"headers"`) answers with that status; `"reset"` drops the
    /// connection; `"partial": k` (with `"message"`) answers a partial success rejecting the
    /// last k records; `"process": true` records the request before a status or reset answer.
    func addOTLPFaults(_ faults: [[String: Any]]) async throws {
        try await script(
            faults.map { short in
                var fault: [String: Any] = ["path": "/v1/logs"]
                if short["reset"] as? Bool == true {
                    fault["action"] = "reset"
                } else if let status = short["status"] {
                    fault["action"] = "status"
                    fault["status"] = status
                    fault["body"] = #"{"code": 14, "message": "injected"}"#
                } else if let rejected = short["partial"] {
                    fault["action"] = "partial"
                    fault["rejected"] = rejected
                    fault["message"] = short["message"]
                } else {
                    fault["action"] = "pass"
                }
                for name in ["headers", "delay", "process"] { fault[name] = short[name] }
                return fault
            })
    }

    /// The receiver's report (`otlp_endpoint.report`): `records`, `requests`, `rejected`,
    /// `recordCounts`, `partialRejected`, `headers`, and with `bodies` every decompressed body.
    func otlpReport(bodies: Bool = false) async throws -> [String: Any] {
        let data = try await admin("GET", bodies ? "_admin/otlp?bodies=1" : "_admin/otlp")
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw LaunchError(description: "OTLP report: not a JSON object")
        }
        return object
    }
}

/// The independent OTLP implementation: the PyPI package `opentelemetry-proto`, whose
/// `json_format.Parse` refuses unknown field names and mistyped values.
enum OTLPConformance {
    /// The Python that has `opentelemetry-proto`: `HALYARD_OTLP_PYTHON`, which `.ci/run` sets to
    /// the venv it creates (`.build/otlp-venv/bin/python`). Unset: the test does not run.
    static var python: String? {
        guard let path = ProcessInfo.processInfo.environment["HALYARD_OTLP_PYTHON"], !path.isEmpty else { return nil }
        return path
    }

    static var scriptPath: String {
        URL(fileURLWithPath: ControlPlaneServer.scriptPath).deletingLastPathComponent()
            .appendingPathComponent("otlp_parse.py").path
    }

    /// Parses every body; returns the script's exit status and its JSON summary.
    static func parse(_ bodies: [Any], python: String) throws -> (status: Int32, summary: [String: Any]) {
        let input = try JSONSerialization.data(withJSONObject: bodies)
        let (status, output) = try ExternalTool.filter(python, [scriptPath], input: input)
        let summary = (try? JSONSerialization.jsonObject(with: output) as? [String: Any]) ?? [:]
        return (status, summary)
    }
}
