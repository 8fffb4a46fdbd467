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

/// The deprecated option spellings (docs/public-api.md, "Naming"), reached through a protocol so
/// that the test that they forward compiles without a deprecation warning.
protocol DeprecatedClientOptionSpellings {
    var contextSizeLimit: Int { get set }
    var cacheEntrySizeLimit: Int { get set }
}
protocol DeprecatedServiceOptionSpellings {
    var contextSizeLimit: Int { get set }
}
protocol DeprecatedExposureOptionSpellings {
    var retryBaseDelay: Duration { get set }
    var retryMaxDelay: Duration { get set }
}
extension FlagClientOptions: DeprecatedClientOptionSpellings {}
extension FlagServiceOptions: DeprecatedServiceOptionSpellings {}
extension ExposureOptions: DeprecatedExposureOptionSpellings {}

extension ClientOptionsValidationTests {
    /// Each old spelling reads and writes the new name's storage, both ways.
    @Test func deprecatedSpellingsForwardToTheNewNames() throws {
        var client: any DeprecatedClientOptionSpellings = options("https://a.example")
        client.contextSizeLimit = 100
        client.cacheEntrySizeLimit = 200
        var c = try #require(client as? FlagClientOptions)
        #expect(c.maxContextCodeUnits == 100)
        #expect(c.maxCacheEntryBytes == 200)
        c.maxContextCodeUnits = 300
        c.maxCacheEntryBytes = 400
        client = c
        #expect(client.contextSizeLimit == 300)
        #expect(client.cacheEntrySizeLimit == 400)

        var service: any DeprecatedServiceOptionSpellings = FlagServiceOptions(
            baseURL: URL(string: "https://a.example")!, key: "srv-key")
        service.contextSizeLimit = 500
        var s = try #require(service as? FlagServiceOptions)
        #expect(s.maxContextCodeUnits == 500)
        s.maxContextCodeUnits = 600
        service = s
        #expect(service.contextSizeLimit == 600)

        var exposures: any DeprecatedExposureOptionSpellings = ExposureOptions()
        exposures.retryBaseDelay = .seconds(2)
        exposures.retryMaxDelay = .seconds(20)
        var e = try #require(exposures as? ExposureOptions)
        #expect(e.initialBackoff == .seconds(2))
        #expect(e.maxBackoff == .seconds(20))
        e.initialBackoff = .seconds(3)
        e.maxBackoff = .seconds(30)
        exposures = e
        #expect(exposures.retryBaseDelay == .seconds(3))
        #expect(exposures.retryMaxDelay == .seconds(30))
    }
}
