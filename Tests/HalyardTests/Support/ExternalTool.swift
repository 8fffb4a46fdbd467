import Foundation

/// Runs independent implementations (Python, Node) as filters for differential tests.
enum ExternalTool {
    /// The first executable named `name` in the usual places or on `PATH`, or nil.
    static func find(_ name: String) -> String? {
        let fixed = ["/usr/bin/\(name)", "/usr/local/bin/\(name)"]
        let onPath = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { "\($0)/\(name)" }
        return (fixed + onPath).first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Runs `executable arguments`, writes `input` to its stdin from another thread (so a full
    /// stdout pipe cannot deadlock), and returns its exit status and stdout.
    static func filter(_ executable: String, _ arguments: [String], input: Data) throws -> (status: Int32, output: Data)
    {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        try process.run()
        let handle = stdin.fileHandleForWriting
        let writer = Thread {
            handle.write(input)
            try? handle.close()
        }
        writer.start()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, output)
    }
}
