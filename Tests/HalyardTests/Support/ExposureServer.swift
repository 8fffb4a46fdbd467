import Foundation

@testable import Halyard

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Launches `Tests/ControlPlaneServer/exposure_test_server.py` (python3, 127.0.0.1, port 0) for
/// the exposure integration tests, and talks to its admin endpoints.
final class ExposureServer: @unchecked Sendable {
    enum Failure: Error { case noPython, noPort(String), badReply(String) }

    /// `http://127.0.0.1:<port>`.
    let baseURL: URL
    private let process: Process
    private let stdin: Pipe
    private let session: URLSession

    private init(baseURL: URL, process: Process, stdin: Pipe) {
        self.baseURL = baseURL
        self.process = process
        self.stdin = stdin
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        session = URLSession(configuration: configuration)
    }

    /// The server script, found from this file's location.
    static var scriptURL: URL {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()  // Support
            .deletingLastPathComponent()  // HalyardTests
            .deletingLastPathComponent()  // Tests
            .appendingPathComponent("ControlPlaneServer/exposure_test_server.py")
    }

    /// Starts a server and waits for its port.
    static func start() throws -> ExposureServer {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", scriptURL.path]
        let stdin = Pipe(), stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { throw Failure.noPython }
        var line = Data()
        while true {
            let byte = stdout.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty || byte == Data([0x0A]) { break }
            line.append(byte)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard let port = Int(text), let url = URL(string: "http://127.0.0.1:\(port)") else {
            process.terminate()
            throw Failure.noPort(text)
        }
        return ExposureServer(baseURL: url, process: process, stdin: stdin)
    }

    /// Stops the server (closing its stdin makes it exit; terminate as a backstop).
    func stop() {
        try? stdin.fileHandleForWriting.close()
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        session.invalidateAndCancel()
    }

    deinit {
        if process.isRunning { process.terminate() }
    }

    private func exchange(_ method: String, _ path: String, body: Data? = nil) async throws -> Data {
        var request = URLRequest(url: baseURL.appendingPathComponent(path))
        request.httpMethod = method
        request.httpBody = body
        request.timeoutInterval = 30
        let (data, response) = try await LoopbackTransport.perform(session, request)
        guard response.statusCode == 200 else { throw Failure.badReply("\(path): \(response.statusCode)") }
        return data
    }

    /// Appends faults to the server's script (one consumed per upload).
    func addFaults(_ faults: [[String: Any]]) async throws {
        _ = try await exchange("POST", "/_admin/faults", body: try JSONSerialization.data(withJSONObject: faults))
    }

    /// The endpoint's report (`exposure_endpoint.report`).
    func report(includeEvents: Bool = true) async throws -> [String: Any] {
        let path = includeEvents ? "/_admin/exposures" : "/_admin/exposures"
        var components = URLComponents(url: baseURL.appendingPathComponent(path), resolvingAgainstBaseURL: false)!
        if !includeEvents { components.queryItems = [URLQueryItem(name: "summary", value: "1")] }
        var request = URLRequest(url: components.url!)
        request.timeoutInterval = 30
        let (data, response) = try await LoopbackTransport.perform(session, request)
        guard response.statusCode == 200,
            let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        else {
            throw Failure.badReply("report: \(response.statusCode)")
        }
        return object
    }
}

/// A minimal URLSession transport for the loopback tests (the production transport lives in the
/// sync module and is not a dependency of the exposure pipeline).
final class LoopbackTransport: FlagTransport, @unchecked Sendable {
    private let session: URLSession

    init() {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.httpMaximumConnectionsPerHost = 2
        session = URLSession(configuration: configuration)
    }

    deinit { session.invalidateAndCancel() }

    static func perform(_ session: URLSession, _ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        try await withCheckedThrowingContinuation { continuation in
            let task = session.dataTask(with: request) { data, response, error in
                if let error {
                    continuation.resume(throwing: error)
                } else if let http = response as? HTTPURLResponse {
                    continuation.resume(returning: (data ?? Data(), http))
                } else {
                    continuation.resume(throwing: TransportError.network("no HTTP response"))
                }
            }
            task.resume()
        }
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        urlRequest.httpBody = request.body
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        let (seconds, atto) = request.timeout.components
        urlRequest.timeoutInterval = max(0.05, Double(seconds) + Double(atto) / 1e18)
        do {
            let (data, response) = try await Self.perform(session, urlRequest)
            var headers: [String: String] = [:]
            for (name, value) in response.allHeaderFields {
                if let name = name as? String, let value = value as? String { headers[name] = value }
            }
            return TransportResponse(status: response.statusCode, headers: headers, body: data)
        } catch let error as URLError where error.code == .timedOut {
            throw TransportError.timedOut
        } catch let error as URLError where error.code == .cancelled {
            throw TransportError.cancelled
        } catch let error as TransportError {
            throw error
        } catch {
            throw TransportError.network(String(describing: error))
        }
    }
}
