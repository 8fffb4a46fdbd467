import Foundation
import Testing

@testable import Halyard

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A real `redis-server` for one test: started by the test on a random loopback port (and a unix
/// socket), with no persistence (`--save '' --appendonly no`), stopped by its PID. Tests that
/// need it carry ``Testing/Trait/needsRedisServer`` and are reported as skipped where
/// `redis-server` is absent (CI fails if they were: `.ci/run`).
final class RedisTestServer: @unchecked Sendable {
    /// `redis-server`, where installed.
    static let executable: String? = ExternalTool.find("redis-server")

    private(set) var port = 0
    let password: String?
    /// More `redis-server` arguments (e.g. `--cluster-enabled yes`).
    let arguments: [String]
    let directory: URL
    var socketPath: String { directory.appendingPathComponent("redis.sock").path }
    private var process: Process?

    /// Starts a server on a random free port (a few attempts: a port taken meanwhile makes
    /// redis-server exit at once) and waits until it answers.
    init(password: String? = nil, arguments: [String] = []) throws {
        self.password = password
        self.arguments = arguments
        directory = URL(fileURLWithPath: "/tmp/hal-redis-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var lastError: any Error = RedisServerError("no attempt")
        for _ in 0..<8 {
            let candidate = Int.random(in: 20_000...60_000)
            do {
                process = try Self.launch(
                    port: candidate, password: password, arguments: arguments, directory: directory)
                port = candidate
                try waitUntilReady()
                return
            } catch {
                lastError = error
                stopProcess()
            }
        }
        throw lastError
    }

    deinit {
        stopProcess()
        try? FileManager.default.removeItem(at: directory)
    }

    /// The TCP endpoint (with the password, when the server has one).
    func endpoint(database: Int = 0, password: String? = nil) -> RedisEndpoint {
        RedisEndpoint(
            address: .tcp(host: "127.0.0.1", port: port), password: password ?? self.password, database: database)
    }

    /// A client of this server with a generous default deadline (the machine is shared).
    func client(database: Int = 0, timeout: Duration = .seconds(5)) -> RedisClient {
        RedisClient(endpoint: endpoint(database: database), timeout: timeout)
    }

    var pid: Int32 { process?.processIdentifier ?? 0 }

    /// SIGSTOP: the process stops reading, the kernel still accepts connections.
    func pause() { if pid > 0 { kill(pid, SIGSTOP) } }
    /// SIGCONT.
    func resume() { if pid > 0 { kill(pid, SIGCONT) } }

    /// Kills the process by its PID and waits (bounded) until it is gone.
    func kill9() throws {
        stopProcess()
    }

    /// Starts it again on the same port.
    func restart() throws {
        stopProcess()
        process = try Self.launch(port: port, password: password, arguments: arguments, directory: directory)
        try waitUntilReady()
    }

    private static func launch(port: Int, password: String?, arguments extra: [String], directory: URL) throws
        -> Process
    {
        guard let executable else { throw RedisServerError("redis-server not found") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        var arguments = [
            "--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", directory.path,
            "--unixsocket", directory.appendingPathComponent("redis.sock").path, "--unixsocketperm", "700",
            "--daemonize", "no", "--logfile", "",
        ]
        if let password { arguments += ["--requirepass", password] }
        arguments += extra
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// PINGs until the server answers (at most 20 s of real time).
    private func waitUntilReady() throws {
        let probe = RedisClient(endpoint: endpoint(), timeout: .milliseconds(500))
        defer { probe.close() }
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            guard process?.isRunning == true else { throw RedisServerError("redis-server exited at start") }
            if (try? probe.ping()) != nil { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
        throw RedisServerError("redis-server did not answer within 20 s")
    }

    /// SIGCONT (a stopped process ignores SIGKILL's wait otherwise), SIGKILL, and a bounded wait.
    private func stopProcess() {
        guard let process else { return }
        self.process = nil
        let pid = process.processIdentifier
        guard process.isRunning, pid > 0 else { return }
        kill(pid, SIGCONT)
        kill(pid, SIGKILL)
        let deadline = ContinuousClock.now + .seconds(10)
        while process.isRunning && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.005) }
    }
}

struct RedisServerError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension Trait where Self == ConditionTrait {
    /// Skips a test where `redis-server` is not installed, with the message `.ci/run` looks for.
    static var needsRedisServer: Self {
        .enabled(
            if: RedisTestServer.executable != nil,
            "redis-server not found: install it (apt-get install -y redis-server) to run the Redis tests")
    }
}
