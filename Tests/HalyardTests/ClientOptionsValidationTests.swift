import Foundation
import Testing

@_spi(Fuzzing) @testable import Halyard

/// `FlagClientOptions.validate()`: the configurations it accepts, and each one it refuses as a
/// distinct `FlagClientError`.
@Suite struct ClientOptionsValidationTests {
    private func options(_ url: String, key: String = "cli-key") -> FlagClientOptions {
        FlagClientOptions(baseURL: URL(string: url)!, key: key)
    }

    @Test func programmingErrorsAreDistinct() {
        #expect(throws: FlagClientError.blankKey) { try options("https://a.example", key: "  ").validate() }
        #expect(throws: FlagClientError.serverKeyInClientRole(prefix: "srv-")) {
            try options("https://a.example", key: "srv-123").validate()
        }
        #expect(throws: FlagClientError.baseURLNotAbsolute) { try options("/relative/path").validate() }
        #expect(throws: FlagClientError.unsupportedScheme("ftp")) { try options("ftp://a.example").validate() }
        #expect(throws: FlagClientError.insecureHTTPToNonLoopbackHost("a.example")) {
            try options("http://a.example").validate()
        }
    }

    @Test func acceptedConfigurations() throws {
        try options("https://a.example").validate()
        try options("http://127.0.0.1:8080").validate()
        try options("http://localhost:1").validate()
        try options("http://[::1]:1").validate()
        var service = options("https://a.example", key: "srv-123")
        service.role = .service
        try service.validate()
        var custom = options("https://a.example", key: "srv-123")
        custom.serverKeyPrefixes = ["secret-"]
        try custom.validate()
    }

    @Test func loopbackDetection() {
        #expect(FlagClientOptions.isLoopback("127.0.0.1"))
        #expect(FlagClientOptions.isLoopback("127.1.2.3"))
        #expect(FlagClientOptions.isLoopback("LOCALHOST"))
        #expect(!FlagClientOptions.isLoopback("127.0.0.1.example.com"))
        #expect(!FlagClientOptions.isLoopback("128.0.0.1"))
        #expect(!FlagClientOptions.isLoopback("127.0.0.256"))
    }

    @Test func defaults() {
        let o = options("https://a.example")
        #expect(o.pollInterval == .seconds(30))
        #expect(o.pollJitter == 0.1)
        #expect(o.requestTimeout == .seconds(10))
        #expect(o.readyTimeout == .seconds(5))
        #expect(o.refreshIfStaleThreshold == .seconds(15))
        #expect(o.initialBackoff == .seconds(1))
        #expect(o.maxBackoff == .seconds(300))
        #expect(o.maxResponseBytes == 8 << 20)
        #expect(o.role == .client)
        #expect(o.effectiveStaleAfter == .seconds(90))
    }
}
