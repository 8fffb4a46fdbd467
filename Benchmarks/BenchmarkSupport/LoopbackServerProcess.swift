public import Foundation

/// The loopback control plane of the tests (`Tests/ControlPlaneServer/server.py`) as a child
/// process, for the benchmarks that need a real server: it serves `document` (the flag sets, in
/// the server's `--flags` format) on 127.0.0.1 and exits when ``stop()`` closes its stdin.
///
/// ```swift
/// let server = try LoopbackServerProcess(document: ["default": items], label: "halyard-bench")
/// defer { server.stop() }
/// print(server.baseURL)
/// ```
public final class LoopbackServerProcess: @unchecked Sendable {
    /// The port the server listens on (127.0.0.1).
    public let port: Int
    /// `http://127.0.0.1:<port>`.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    private let process = Process()
    private let stdin = Pipe()

    /// The server script: found from this source file, or from the working directory when the
    /// binary runs from a checkout whose sources moved.
    static var scriptPath: String {
        let fromSource = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Tests/ControlPlaneServer/server.py").path
        if FileManager.default.fileExists(atPath: fromSource) { return fromSource }
        return FileManager.default.currentDirectoryPath + "/Tests/ControlPlaneServer/server.py"
    }

    /// Starts the server and waits for the `PORT n` line it prints once it listens.
    ///
    /// - Parameter label: names the temporary flags file and the error, e.g. the benchmark.
    public init(document: [String: Any], label: String) throws {
        let flags = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID()).json")
        try JSONSerialization.data(withJSONObject: document).write(to: flags)
        defer { try? FileManager.default.removeItem(at: flags) }
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Self.scriptPath, "--flags", flags.path]
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardInput = stdin
        process.standardError = FileHandle.nullDevice
        try process.run()
        var line = Data()
        while !line.contains(0x0A) {
            let chunk = stdout.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.hasPrefix("PORT "), let port = Int(text.dropFirst(5)) else {
            process.terminate()
            throw NSError(domain: label, code: 1, userInfo: [NSLocalizedDescriptionKey: "server: \(text)"])
        }
        self.port = port
    }

    /// Stops the server and waits for it to exit.
    public func stop() {
        try? stdin.fileHandleForWriting.close()
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }
}
