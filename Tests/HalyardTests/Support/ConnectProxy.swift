import Foundation

@testable import Halyard

/// `Tests/ControlPlaneServer/connect_proxy.py`, started for one test: a loopback HTTP CONNECT
/// proxy (what `https_proxy` names). ``tunnels`` lists the `host:port` of every tunnel opened.
final class ConnectProxy: Sendable {
    let port: Int
    private let process: Process
    private let stdin: Pipe
    private let log: URL

    /// The proxy's URL, for `CURLOPT_PROXY`.
    var url: String { "http://127.0.0.1:\(port)" }

    /// The tunnels opened so far (`host:port`), from the proxy's log file.
    var tunnels: [String] {
        ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    init() throws {
        let script = URL(fileURLWithPath: ControlPlaneServer.scriptPath).deletingLastPathComponent()
            .appendingPathComponent("connect_proxy.py").path
        log = FileManager.default.temporaryDirectory.appendingPathComponent("halyard-proxy-\(UUID().uuidString).log")
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, "--log", log.path]
        let stdout = Pipe()
        stdin = Pipe()
        process.standardOutput = stdout
        process.standardInput = stdin
        process.standardError = FileHandle.nullDevice
        try process.run()
        let handle = stdout.fileHandleForReading
        var first = Data()
        while !first.contains(0x0A) {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            first.append(chunk)
        }
        let text = String(decoding: first, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.hasPrefix("PORT "), let port = Int(text.dropFirst(5)) else {
            process.terminate()
            throw ControlPlaneServer.LaunchError(description: "the CONNECT proxy did not start: \(text)")
        }
        self.port = port
    }

    /// Ends the proxy: closing its stdin is what stops it (see the script's header).
    func stop() {
        try? stdin.fileHandleForWriting.close()
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: log)
    }
}
