import Foundation

@testable import Halyard

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A minimal URLSession transport for the exposure loopback tests, so they exercise the exposure
/// pipeline against a real HTTP stack without the production transport's own limits and gzip.
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
        urlRequest.timeoutInterval = max(0.05, request.timeout.fractionalSeconds)
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
