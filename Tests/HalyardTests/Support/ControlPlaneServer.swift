import Foundation
import Halyard

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Launches `Tests/ControlPlaneServer/server.py` (the one loopback test server: OFREP control
/// plane and exposure endpoint) with `Process`, reads its port, and drives its admin endpoints.
/// See the top of server.py for the fault format, and ExposureServer.swift for the exposure view.
///
/// `@unchecked Sendable`: `Process` is not Sendable; it is only touched in `init` and `stop()`,
/// which the `Locked` guards.
final class ControlPlaneServer: @unchecked Sendable {
    let port: Int
    let baseURL: URL
    private let process: Process
    private let stdin: Pipe
    private let stopped = Locked(false)
    private let session: URLSession

    static var scriptPath: String {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("ControlPlaneServer/server.py").path
    }

    struct LaunchError: Error, CustomStringConvertible {
        var description: String
    }

    /// Starts the server with `flags` (the flag-set document: `default`, `contexts`, `metadata`);
    /// with `tls` (PEM files) it serves HTTPS only (the admin helpers then need a trusting client).
    init(
        flags: [String: Any] = ["default": []], exposurePath: String? = nil,
        tls: (certificate: String, key: String)? = nil
    ) throws {
        let flagsFile = FileManager.default.temporaryDirectory.appendingPathComponent(
            "halyard-flags-\(UUID().uuidString).json")
        try JSONSerialization.data(withJSONObject: flags).write(to: flagsFile)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        var arguments = ["python3", Self.scriptPath, "--flags", flagsFile.path]
        if let exposurePath { arguments += ["--exposure-path", exposurePath] }
        if let tls { arguments += ["--tls-cert", tls.certificate, "--tls-key", tls.key] }
        process.arguments = arguments
        let stdout = Pipe()
        stdin = Pipe()
        process.standardOutput = stdout
        process.standardInput = stdin
        process.standardError = FileHandle.nullDevice
        try process.run()
        var line = Data()
        let handle = stdout.fileHandleForReading
        while !line.contains(0x0A) {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        try? FileManager.default.removeItem(at: flagsFile)
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.hasPrefix("PORT "), let port = Int(text.dropFirst(5)) else {
            process.terminate()
            throw LaunchError(description: "control plane did not start: \(text)")
        }
        self.port = port
        baseURL = URL(string: "\(tls == nil ? "http" : "https")://127.0.0.1:\(port)")!
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        session = URLSession(configuration: configuration)
    }

    deinit { stop() }

    /// Stops the server (idempotent).
    func stop() {
        let first = stopped.withLock { s -> Bool in
            defer { s = true }
            return !s
        }
        guard first else { return }
        try? stdin.fileHandleForWriting.close()
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        session.invalidateAndCancel()
    }

    /// One admin exchange (`path` below the base URL, may carry a query).
    func admin(_ method: String, _ path: String, json: Any? = nil) async throws -> Data {
        guard let url = URL(string: baseURL.absoluteString + "/" + path) else {
            throw LaunchError(description: "bad admin path \(path)")
        }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.timeoutInterval = 10
        if let json { request.httpBody = try JSONSerialization.data(withJSONObject: json) }
        let (data, response) = try await session.data(for: request)
        guard (response as? HTTPURLResponse)?.statusCode == 200 else {
            throw LaunchError(description: "admin \(path) failed: \(String(decoding: data, as: UTF8.self))")
        }
        return data
    }

    /// Appends faults to the server's queue.
    func script(_ faults: [[String: Any]]) async throws {
        _ = try await admin("POST", "_admin/script", json: faults)
    }

    /// Replaces the served flag sets.
    func setFlags(_ flags: [String: Any]) async throws {
        _ = try await admin("POST", "_admin/flags", json: flags)
    }

    /// Clears faults, the request log and exposure state.
    func reset() async throws {
        _ = try await admin("POST", "_admin/reset", json: [String: Any]())
    }

    /// One logged request.
    struct LoggedRequest: Sendable {
        var seq: Int
        var path: String
        var headers: [String: String]
        var body: String
        var fault: String?

        /// A header by case-insensitive name.
        func header(_ name: String) -> String? {
            headers.first { $0.key.lowercased() == name.lowercased() }?.value
        }
    }

    /// The request log, in arrival order.
    func requests() async throws -> [LoggedRequest] {
        let data = try await admin("GET", "_admin/requests")
        guard let doc = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let items = doc["requests"] as? [[String: Any]]
        else { return [] }
        return items.map { item in
            LoggedRequest(
                seq: item["seq"] as? Int ?? 0,
                path: item["path"] as? String ?? "",
                headers: item["headers"] as? [String: String] ?? [:],
                body: item["body"] as? String ?? "",
                fault: item["fault"] as? String)
        }
    }
}
