import Foundation

@testable import Halyard

/// An in-process transport for the definitions sources: answers from a script (one per request,
/// the last repeated) and records every request.
final class DefinitionsScriptedTransport: FlagTransport, Sendable {
    enum Answer: Sendable {
        case response(TransportResponse)
        case error(TransportError)
    }

    private let script = Locked<[Answer]>([])
    private let log = Locked<[TransportRequest]>([])

    init(_ answers: [Answer] = []) {
        script.withLock { $0 = answers }
    }

    /// Appends answers to the script.
    func then(_ answers: Answer...) {
        script.withLock { $0.append(contentsOf: answers) }
    }

    /// The requests sent so far.
    var requests: [TransportRequest] { log.withLock { $0 } }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        log.withLock { $0.append(request) }
        let answer = script.withLock { s -> Answer? in
            guard let first = s.first else { return nil }
            if s.count > 1 { s.removeFirst() }
            return first
        }
        switch answer {
        case .response(let response)?: return response
        case .error(let error)?: throw error
        case nil: throw TransportError.network("no answer scripted")
        }
    }
}
