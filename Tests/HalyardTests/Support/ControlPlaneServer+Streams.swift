import Foundation

/// The event-stream half of server.py's admin interface (see the "Event streams" block there).
extension ControlPlaneServer {
    /// The stream URL with `query` (e.g. `mode=silent`).
    func streamURL(_ query: String = "") -> URL {
        URL(string: baseURL.absoluteString + "/ofrep/v1/sse" + (query.isEmpty ? "" : "?" + query))!
    }

    /// Merges `config` into the stream configuration.
    func configureStream(_ config: [String: Any]) async throws {
        _ = try await admin("POST", "_admin/stream", json: config)
    }

    /// Writes an event (its JSON data) to every open stream; returns how many got it.
    @discardableResult
    func sendStreamEvent(_ data: [String: Any]) async throws -> Int {
        let answer = try await admin("POST", "_admin/stream/event", json: data)
        let doc = try JSONSerialization.jsonObject(with: answer) as? [String: Any]
        return doc?["delivered"] as? Int ?? 0
    }

    /// `GET /_admin/streams`: open streams, connects, and the recorded bulk and stream requests.
    func streamReport() async throws -> [String: Any] {
        let answer = try await admin("GET", "_admin/streams")
        return try JSONSerialization.jsonObject(with: answer) as? [String: Any] ?? [:]
    }

    /// The recorded stream requests (path, query, headers, status).
    func streamRequests() async throws -> [[String: Any]] {
        try await streamReport()["streams"] as? [[String: Any]] ?? []
    }
}
