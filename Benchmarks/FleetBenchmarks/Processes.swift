import Dispatch
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// The parent's side of the child processes: workers, `redis-server`, and the control plane's
// admin endpoints. All blocking: the parent only orchestrates.

/// Lines from a pipe, read by a thread of their own and taken with a deadline.
final class LineQueue: Sendable {
    private let state = Locked<(lines: [String], closed: Bool)>(([], false))
    private let signal = DispatchSemaphore(value: 0)

    /// Starts reading `handle` until its end.
    init(reading handle: FileHandle) {
        let thread = Thread { [self] in
            var buffer = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                buffer.append(chunk)
                while let newline = buffer.firstIndex(of: 0x0A) {
                    let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                    buffer.removeSubrange(buffer.startIndex...newline)
                    state.withLock { $0.lines.append(line) }
                    signal.signal()
                }
            }
            state.withLock { $0.closed = true }
            signal.signal()
        }
        thread.start()
    }

    /// The next line, or nil when the pipe ended or `timeout` seconds passed.
    func next(timeout: Double) -> String? {
        let deadline = DispatchTime.now() + timeout
        while true {
            let (line, closed): (String?, Bool) = state.withLock { s in
                s.lines.isEmpty ? (nil, s.closed) : (s.lines.removeFirst(), s.closed)
            }
            if let line { return line }
            if closed { return nil }
            if signal.wait(timeout: deadline) == .timedOut { return nil }
        }
    }
}

struct FleetError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A worker process: this executable with `--worker`.
final class WorkerProcess {
    let index: Int
    private let process = Process()
    private let input = Pipe()
    private let lines: LineQueue

    init(index: Int, arguments: [String]) throws {
        self.index = index
        process.executableURL = Self.executable
        process.arguments = ["--worker", "--index", "\(index)"] + arguments
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        lines = LineQueue(reading: output.fileHandleForReading)
        try process.run()
    }

    /// This program's binary (`/proc/self/exe`; else `CommandLine.arguments[0]` resolved).
    static var executable: URL {
        let proc = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        if proc.path != "/proc/self/exe", FileManager.default.isExecutableFile(atPath: proc.path) { return proc }
        let argument = CommandLine.arguments[0]
        if argument.contains("/") {
            return URL(
                fileURLWithPath: argument, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
            )
            .standardizedFileURL
        }
        return URL(fileURLWithPath: findOnPath(argument) ?? argument)
    }

    /// Sends one command line.
    func send(_ command: String) {
        try? input.fileHandleForWriting.write(contentsOf: Data((command + "\n").utf8))
    }

    /// The next message of `type` (other messages are skipped), within `timeout` seconds.
    func receive(_ type: String, timeout: Double = 60) throws -> WorkerMessage {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0, let line = lines.next(timeout: left) else {
                throw FleetError("worker \(index): no \(type) message within \(Int(timeout)) s")
            }
            guard let message = try? JSONDecoder().decode(WorkerMessage.self, from: Data(line.utf8)) else {
                warn("worker \(index): \(line)")
                continue
            }
            if message.type == type { return message }
        }
    }

    /// Asks the worker to quit (its last message) and waits; kills it if it does not.
    func quit() -> WorkerMessage? {
        send("quit")
        let bye = try? receive("bye", timeout: 15)
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        return bye
    }
}

/// `name` in one of the folders of `PATH`.
func findOnPath(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
    for folder in path.split(separator: ":") {
        let candidate = "\(folder)/\(name)"
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
}

/// A `redis-server` this run starts on a random loopback port, without persistence, and stops
/// by its PID.
final class RedisServer {
    let port: Int
    private let process: Process

    var url: URL { URL(string: "redis://127.0.0.1:\(port)")! }

    /// Starts one (a few ports are tried); nil, with the reason, when it cannot.
    static func start() -> Result<RedisServer, FleetError> {
        guard let executable = findOnPath("redis-server") else {
            return .failure(FleetError("redis-server is not on PATH"))
        }
        var last = FleetError("no attempt")
        for _ in 0..<8 {
            let port = Int.random(in: 20_000...60_000)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = [
                "--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no",
                "--logfile", "",
            ]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            do { try process.run() } catch { return .failure(FleetError("redis-server: \(error)")) }
            let server = RedisServer(port: port, process: process)
            let deadline = Date().addingTimeInterval(10)
            while process.isRunning && Date() < deadline {
                if server.command(["PING"]) == "PONG" { return .success(server) }
                usleep(20_000)
            }
            server.stop()
            last = FleetError("redis-server did not answer on port \(port)")
        }
        return .failure(last)
    }

    private init(port: Int, process: Process) {
        self.port = port
        self.process = process
    }

    /// SIGSTOP (`true`: it stops reading, the kernel still accepts connections: a hung Redis)
    /// or SIGCONT (`false`).
    func setPaused(_ paused: Bool) {
        let pid = process.processIdentifier
        if process.isRunning, pid > 0 { kill(pid, paused ? SIGSTOP : SIGCONT) }
    }

    /// SIGTERM by PID, then SIGKILL after 5 s.
    func stop() {
        let pid = process.processIdentifier
        guard process.isRunning, pid > 0 else { return }
        kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { kill(pid, SIGKILL) }
        process.waitUntilExit()
    }

    /// `DBSIZE`.
    var keys: Int { command(["DBSIZE"]).flatMap { Int($0) } ?? -1 }

    /// A field of `INFO stats` (e.g. `total_commands_processed`), as a number.
    func info(_ field: String) -> Int {
        guard let text = command(["INFO", "stats"]) else { return -1 }
        // "\r\n" is one Character: split on it, not on "\r" or "\n".
        for line in text.components(separatedBy: "\r\n") where line.hasPrefix(field + ":") {
            return Int(line.dropFirst(field.count + 1)) ?? -1
        }
        return -1
    }

    /// One command on a connection of its own (the harness's few calls, never the services'):
    /// the reply's text for a simple string, integer or bulk string; nil on an error or failure.
    func command(_ words: [String]) -> String? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { return nil }
        var request = "*\(words.count)\r\n"
        for word in words { request += "$\(word.utf8.count)\r\n\(word)\r\n" }
        let bytes = Array(request.utf8)
        guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else {
            return nil
        }
        var reply = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return nil }
            reply += chunk[0..<n]
            if let text = Self.complete(reply) { return text }
        }
    }

    /// The text of a whole RESP2 reply in `bytes`, or nil while incomplete (or an error reply).
    private static func complete(_ bytes: [UInt8]) -> String? {
        guard let end = bytes.firstIndex(of: 0x0A), end > 0 else { return nil }
        let line = String(decoding: bytes[1..<(end - 1)], as: UTF8.self)
        switch bytes[0] {
        case UInt8(ascii: "+"), UInt8(ascii: ":"): return line
        case UInt8(ascii: "$"):
            guard let length = Int(line), length >= 0 else { return "" }
            guard bytes.count >= end + 1 + length + 2 else { return nil }
            return String(decoding: bytes[(end + 1)..<(end + 1 + length)], as: UTF8.self)
        default: return "-"
        }
    }
}

/// The loopback control plane's admin endpoints (server.py), called synchronously.
struct ControlPlaneAdmin {
    let baseURL: URL
    private let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        return URLSession(configuration: configuration)
    }()

    init(baseURL: URL) { self.baseURL = baseURL }

    /// `GET /_admin/counters`.
    struct Counters: Codable {
        var evaluate = 0
        var conditional = 0
        var ok = 0
        var notModified = 0
        var distinctContexts = 0
    }

    var counters: Counters {
        get throws {
            try JSONDecoder().decode(Counters.self, from: call("GET", "/_admin/counters"))
        }
    }

    /// A request to the server; the body of its 200 answer.
    @discardableResult
    func call(_ method: String, _ path: String, json: Any? = nil) throws -> Data {
        var request = URLRequest(url: baseURL.appendingPathComponent(path))
        request.httpMethod = method
        request.timeoutInterval = 10
        if let json {
            request.httpBody = try JSONSerialization.data(withJSONObject: json)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let result = Locked<(Data?, Int, String?)>((nil, 0, nil))
        let done = DispatchSemaphore(value: 0)
        session.dataTask(with: request) { data, response, error in
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            result.withLock { $0 = (data, status, error.map { "\($0)" }) }
            done.signal()
        }.resume()
        guard done.wait(timeout: .now() + 15) == .success else { throw FleetError("\(path): no answer") }
        let (data, status, error) = result.withLock { $0 }
        guard status == 200, let data else { throw FleetError("\(path): status \(status) \(error ?? "")") }
        return data
    }
}
