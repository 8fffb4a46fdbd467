import Foundation

@testable import Halyard

/// Wraps a transport and records every exchange with the (manual) clock's time.
final class RecordingTransport: FlagTransport, Sendable {
    struct Exchange: Sendable {
        var sentAt: Duration
        var completedAt: Duration
        var wallAtCompletion: Date
        var status: Int?
        var error: TransportError?
        var retryAfter: String?
        var ifNoneMatch: String?
        var body: String
        /// How long the inner transport took, in real time (the client's own deadline around
        /// this transport may have ended the request first when this is near its timeout).
        var realDuration: Duration = .zero
    }

    let inner: any FlagTransport
    let clock: any HalyardClock
    private let log = Locked<[Exchange]>([])
    private let sending = Locked(0)

    init(_ inner: any FlagTransport, clock: any HalyardClock) {
        self.inner = inner
        self.clock = clock
    }

    var exchanges: [Exchange] { log.withLock { $0 } }
    var inFlight: Int { sending.withLock { $0 } }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let sentAt = clock.monotonicNow
        let started = ContinuousClock.now
        sending.withLock { $0 += 1 }
        defer { sending.withLock { $0 -= 1 } }
        var exchange = Exchange(
            sentAt: sentAt, completedAt: sentAt, wallAtCompletion: clock.wallNow, status: nil, error: nil,
            retryAfter: nil,
            ifNoneMatch: request.headers["If-None-Match"], body: String(decoding: request.body, as: UTF8.self))
        do {
            let response = try await inner.send(request)
            exchange.status = response.status
            exchange.realDuration = ContinuousClock.now - started
            exchange.retryAfter = response.header("Retry-After")
            exchange.completedAt = clock.monotonicNow
            exchange.wallAtCompletion = clock.wallNow
            log.withLock { $0.append(exchange) }
            return response
        } catch {
            exchange.error = error as? TransportError ?? .network("\(error)")
            exchange.realDuration = ContinuousClock.now - started
            exchange.completedAt = clock.monotonicNow
            exchange.wallAtCompletion = clock.wallNow
            log.withLock { $0.append(exchange) }
            throw error
        }
    }
}
