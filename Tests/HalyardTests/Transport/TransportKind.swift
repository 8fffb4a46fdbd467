import Foundation
import Testing

@testable import Halyard

/// The production transports, for tests that run against each of them.
enum TransportKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// libcurl (Linux only).
    case curl
    /// URLSession (FoundationNetworking on Linux).
    case urlSession

    /// The transports this platform has (curl only where libcurl is linked).
    static var available: [TransportKind] {
        #if os(Linux)
            allCases
        #else
            [.urlSession]
        #endif
    }

    var testDescription: String { rawValue }

    /// A new transport of this kind; `trustedCAFile` applies to curl (URLSession on Linux cannot
    /// be told to trust a CA file per session).
    func make(trustedCAFile: String? = nil) -> any FlagTransport {
        switch self {
        case .curl:
            #if os(Linux)
                return CurlTransport(trustedCAFile: trustedCAFile)
            #else
                return URLSessionTransport()
            #endif
        case .urlSession: return URLSessionTransport()
        }
    }
}
