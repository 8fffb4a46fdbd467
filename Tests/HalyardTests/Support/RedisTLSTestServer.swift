import Foundation
import Testing

@testable import Halyard

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A real `redis-server` speaking TLS only (`--port 0 --tls-port N`) on a random loopback port,
/// with a CA and a server certificate the test makes with the `openssl` command in a temporary
/// directory: the certificate names `redis.halyard.test` and `127.0.0.1` (not `localhost`), and
/// a second CA that signed nothing is there to be trusted wrongly. Clients are not asked for a
/// certificate (`--tls-auth-clients no`). Stopped by its PID; tests that need it carry
/// ``Testing/Trait/needsRedisTLS``.
final class RedisTLSTestServer: @unchecked Sendable {
    static let openssl: String? = ExternalTool.find("openssl")

    private(set) var port = 0
    let password: String
    let directory: URL
    var caFile: String { directory.appendingPathComponent("ca.crt").path }
    var otherCAFile: String { directory.appendingPathComponent("other-ca.crt").path }
    private var process: Process?

    init(password: String = "tls-test-password") throws {
        self.password = password
        directory = URL(fileURLWithPath: "/tmp/hal-redis-tls-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try makeCertificates()
        var lastError: any Error = RedisServerError("no attempt")
        for _ in 0..<8 {
            let candidate = Int.random(in: 20_000...60_000)
            do {
                try launch(port: candidate)
                port = candidate
                try waitUntilReady()
                return
            } catch {
                lastError = error
                stop()
            }
        }
        throw lastError
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// `rediss://:password@host:port` with the test CA trusted (nil: the system store).
    func endpoint(host: String = "127.0.0.1", trustedCAFile: String?) -> RedisEndpoint {
        var endpoint = RedisEndpoint(address: .tcp(host: host, port: port), tls: true, password: password)
        endpoint.trustedCAFile = trustedCAFile
        return endpoint
    }

    /// A client trusting the test CA, with a generous deadline (the machine is shared).
    func client(host: String = "127.0.0.1", timeout: Duration = .seconds(5)) -> RedisClient {
        RedisClient(endpoint: endpoint(host: host, trustedCAFile: caFile), timeout: timeout)
    }

    private func openssl(_ arguments: [String]) throws {
        guard let executable = Self.openssl else { throw RedisServerError("openssl not found") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw RedisServerError("openssl \(arguments.first ?? "") exited with \(process.terminationStatus)")
        }
    }

    private func makeCertificates() throws {
        let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        for (name, subject) in [("ca", "/CN=Halyard Test CA"), ("other-ca", "/CN=Halyard Other CA")] {
            try openssl(
                ["req", "-x509"] + key + [
                    "-keyout", "\(name).key", "-out", "\(name).crt", "-days", "2", "-subj", subject,
                ])
        }
        try openssl(["req"] + key + ["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=redis.halyard.test"])
        try Data("subjectAltName=DNS:redis.halyard.test,IP:127.0.0.1\n".utf8).write(
            to: directory.appendingPathComponent("server.ext"))
        try openssl([
            "x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.crt", "-days", "2", "-extfile", "server.ext",
        ])
    }

    private func launch(port: Int) throws {
        guard let executable = RedisTestServer.executable else { throw RedisServerError("redis-server not found") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        let path = directory.path
        process.arguments = [
            "--port", "0", "--tls-port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--dir", path, "--daemonize", "no", "--logfile", "", "--requirepass", password,
            "--tls-cert-file", "\(path)/server.crt", "--tls-key-file", "\(path)/server.key",
            "--tls-ca-cert-file", "\(path)/ca.crt", "--tls-auth-clients", "no",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
    }

    /// PINGs over TLS until the server answers (at most 20 s of real time).
    private func waitUntilReady() throws {
        let probe = client(timeout: .milliseconds(500))
        defer { probe.close() }
        let deadline = ContinuousClock.now + .seconds(20)
        var last: (any Error)?
        while ContinuousClock.now < deadline {
            guard process?.isRunning == true else { throw RedisServerError("redis-server (TLS) exited at start") }
            do {
                try probe.ping()
                return
            } catch {
                last = error
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        throw RedisServerError("redis-server (TLS) did not answer within 20 s: \(String(describing: last))")
    }

    private func stop() {
        guard let process else { return }
        self.process = nil
        let pid = process.processIdentifier
        guard process.isRunning, pid > 0 else { return }
        kill(pid, SIGKILL)
        let deadline = ContinuousClock.now + .seconds(10)
        while process.isRunning && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.005) }
    }

    /// Whether this process can load OpenSSL for `rediss://` (Linux, `libssl.so.3`).
    static var libsslLoads: Bool {
        #if os(Linux)
            if case .success = OpenSSLLibrary.shared { return true }
        #endif
        return false
    }
}

extension Trait where Self == ConditionTrait {
    /// Skips a test where `redis-server`, `openssl` or `libssl.so.3` is absent (or on Apple
    /// platforms), with the message `.ci/run` looks for.
    static var needsRedisTLS: Self {
        .enabled(
            if: RedisTestServer.executable != nil && RedisTLSTestServer.openssl != nil
                && RedisTLSTestServer.libsslLoads,
            "redis-server, openssl or libssl.so.3 not found: install them (apt-get install -y redis-server openssl libssl3) to run the Redis TLS tests"
        )
    }
}
