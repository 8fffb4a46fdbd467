import Foundation
import HalyardTesting
import Testing

@testable import Halyard

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `rediss://` (docs/fleet.md, "TLS"): Halyard's RESP2 client over OpenSSL loaded at run time,
/// against a real `redis-server --tls-port` with a CA and certificate the test makes. The
/// server's certificate and host name are verified; a refusal is a typed error; every step of
/// the handshake ends at the call's deadline. Skipped, with a message `.ci/run` fails on, where
/// `redis-server`, `openssl` or `libssl.so.3` is absent.
@Suite struct RedisTLSTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test(.needsRedisTLS) func getSetPipelineAndALargeValueRoundTripOverTLS() throws {
        let server = try RedisTLSTestServer()
        let client = server.client()
        defer { client.close() }
        let key = Self.bytes("halyard:v1:tls:k")
        #expect(try client.get(key) == nil)
        #expect(try client.set(key, Self.bytes("over TLS"), expiry: .seconds(60)))
        #expect(try client.get(key) == Self.bytes("over TLS"))
        // Larger than a TLS record (16 KiB) and the socket buffers: partial writes and reads.
        let large = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try client.set(key, large, expiry: .seconds(60))
        #expect(try client.get(key) == large)
        let sets = (0..<100).map { RedisCommand.set(Self.bytes("k\($0)"), Self.bytes("v\($0)"), expiry: .seconds(60)) }
        #expect(try client.pipeline(sets).allSatisfy { $0 == .simple("OK") })
        let gets = try client.pipeline((0..<100).map { RedisCommand.get(Self.bytes("k\($0)")) })
        #expect(gets == (0..<100).map { RedisValue.bulk(Self.bytes("v\($0)")) })
        #expect(client.connectionsOpened == 1, "one TLS connection (AUTH inside it) for every call")
    }

    @Test(.needsRedisTLS) func aHostNameTheCertificateDoesNotNameIsRefused() throws {
        let server = try RedisTLSTestServer()
        // localhost resolves to the server, but the certificate names 127.0.0.1 and redis.halyard.test.
        let client = server.client(host: "localhost")
        defer { client.close() }
        do {
            try client.ping()
            Issue.record("a certificate for another host name was accepted")
        } catch {
            guard case .tlsVerificationFailed(let reason) = error else { throw error }
            #expect(reason.contains("hostname mismatch"), "\(reason)")
            #expect(error.description.contains("certificate was refused"), "\(error)")
        }
    }

    @Test(.needsRedisTLS) func aCertificateOfAnUntrustedCAIsRefused() throws {
        let server = try RedisTLSTestServer()
        for trusted in [server.otherCAFile, nil] {
            let client = RedisClient(endpoint: server.endpoint(trustedCAFile: trusted), timeout: .seconds(5))
            defer { client.close() }
            do {
                try client.ping()
                Issue.record(
                    "a certificate of an untrusted CA was accepted (trusting \(trusted ?? "the system store"))")
            } catch {
                guard case .tlsVerificationFailed(let reason) = error else { throw error }
                // The server sends its CA with its certificate: OpenSSL names the untrusted root.
                #expect(reason.contains("self-signed") || reason.contains("issuer certificate"), "\(reason)")
            }
        }
    }

    /// A listener that completes TCP's handshake (the kernel's backlog) and never answers TLS:
    /// the call ends at its deadline with `.timeout`, not at the kernel's timeouts.
    @Test(.needsRedisTLS) func aStalledHandshakeEndsAtTheCallsDeadline() throws {
        let listener = try SilentListener()
        var endpoint = RedisEndpoint(address: .tcp(host: "127.0.0.1", port: listener.port), tls: true)
        endpoint.trustedCAFile = nil
        let client = RedisClient(endpoint: endpoint, timeout: .milliseconds(300))
        defer { client.close() }
        let start = ContinuousClock.now
        #expect(throws: RedisError.timeout) { try client.ping() }
        // Generous: the point is that the call ends near its deadline, not after the kernel's minutes.
        #expect(ContinuousClock.now - start < .seconds(10))
    }

    /// Two services share entries over `rediss://`; a third, trusting another CA, serves from
    /// the control plane, counts the refusals, and logs the outage once with the certificate's
    /// reason. Tolerant of a loaded machine: the tier's calls keep their 25 ms default deadline,
    /// so only "at least one" entry is asked to cross over TLS.
    @Test(.needsRedisTLS) func servicesShareEntriesOverTLSAndAnUntrustedServerIsLoggedOnce() async throws {
        let server = try RedisTLSTestServer()
        let plane = InMemoryControlPlane(values: ["version": .int(1)])
        let warnings = Locked<[String]>([])
        func service(trusting caFile: String) throws -> FlagService {
            var options = plane.makeServiceOptions(key: "srv-tls-test-key")
            let url = try #require(URL(string: "rediss://:\(server.password)@127.0.0.1:\(server.port)"))
            options.sharedCache = .redis(url: url, trustedCAFile: caFile)
            options.changeDetection = .polling
            options.exposures.enabled = false
            options.coldFetchTimeout = .seconds(30)
            options.logHandler = { level, message in
                if level == .warning { warnings.withLock { $0.append(message) } }
            }
            return try FlagService(options: options)
        }
        let contexts = (0..<5).map { serviceContext($0) }
        let first = try service(trusting: server.caFile)
        defer { first.close() }
        for context in contexts { #expect(await first.flags(for: context).int("version", default: 0) == 1) }
        #expect(first.stats.sharedCache?.writes ?? 0 >= 1, "\(String(describing: first.stats.sharedCache))")
        let second = try service(trusting: server.caFile)
        defer { second.close() }
        for context in contexts { #expect(await second.flags(for: context).int("version", default: 0) == 1) }
        #expect(second.stats.sharedCache?.hits ?? 0 >= 1, "\(String(describing: second.stats.sharedCache))")
        #expect(warnings.withLock { $0 }.isEmpty, "\(warnings.withLock { $0 })")

        let untrusting = try service(trusting: server.otherCAFile)
        defer { untrusting.close() }
        for id in 100..<112 {
            #expect(await untrusting.flags(for: serviceContext(id)).int("version", default: 0) == 1)
        }
        let stats = try #require(untrusting.stats.sharedCache)
        #expect(stats.errors >= 5 && stats.breakerOpenings >= 1 && stats.hits == 0, "\(stats)")
        let logged = warnings.withLock { $0 }
        #expect(logged.count == 1, "\(logged)")
        #expect(logged.first?.contains("certificate was refused") == true, "\(logged)")
    }

    /// Where `libssl.so.3` cannot be loaded, `rediss://` is refused with the loader's reason
    /// (the service then runs on its own cache with one warning: SharedCacheOptionsTests).
    @Test func aLibsslThatDoesNotLoadIsATypedReason() throws {
        #if os(Linux)
            let result = OpenSSLLibrary.load(ssl: "libhalyard-absent-ssl.so.3", crypto: "libhalyard-absent-crypto.so.3")
            guard case .failure(.tlsUnavailable(let reason)) = result else {
                Issue.record("an absent libssl loaded: \(result)")
                return
            }
            #expect(reason.contains("libhalyard-absent"), "\(reason)")
        #else
            guard case .failure(.tlsUnavailable) = RedisTLSContext.shared(trustedCAFile: nil) else {
                Issue.record("rediss:// is documented as Linux-only")
                return
            }
        #endif
    }
}

/// A loopback TCP listener that never accepts: connects complete in the kernel's backlog and
/// nothing is ever answered. Closed when released.
final class SilentListener {
    let fd: Int32
    let port: Int

    init() throws {
        (fd, port) = try LoopbackListener.open(backlog: 8)
    }

    deinit { close(fd) }
}
