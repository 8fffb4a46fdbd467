/// The TLS settings every `rediss://` connection of a process shares for one trust store: an
/// OpenSSL `SSL_CTX` (Linux) that verifies the server's certificate chain against the system
/// store, or against ``trustedCAFile`` alone when one is given, with TLS 1.2 at least.
///
/// Made once per CA file and kept for the life of the process (a CA file that changes is read
/// again only by a new process). Where TLS cannot be had — `libssl.so.3` absent, a CA file that
/// does not load, or an Apple platform (Halyard loads OpenSSL on Linux only) — ``shared(trustedCAFile:)``
/// says why, and the service runs without its shared cache (docs/fleet.md, "TLS").
///
/// ```swift
/// switch RedisTLSContext.shared(trustedCAFile: "/etc/redis/ca.pem") {
/// case .success: break                       // rediss:// connections can be made
/// case .failure(let error): print(error)     // e.g. "TLS is not available: libssl.so.3: cannot open…"
/// }
/// ```
final class RedisTLSContext: @unchecked Sendable {
    /// The PEM file whose certificates are trusted instead of the system store (nil: the system's).
    let trustedCAFile: String?

    #if os(Linux)
        let library: OpenSSLLibrary
        /// The `SSL_CTX *`, configured once and only read after (OpenSSL 3: `SSL_new` from one
        /// context on several threads is safe).
        let context: OpaquePointer

        private init(library: OpenSSLLibrary, context: OpaquePointer, trustedCAFile: String?) {
            self.library = library
            self.context = context
            self.trustedCAFile = trustedCAFile
        }

        /// A new context for `trustedCAFile` (nil: the system store).
        static func make(library: OpenSSLLibrary, trustedCAFile: String?) -> Result<RedisTLSContext, RedisError> {
            library.errorClear()
            guard let method = library.clientMethod(), let context = library.contextNew(method) else {
                return .failure(.tlsUnavailable(library.takeError("SSL_CTX_new failed")))
            }
            library.contextSetVerify(context, OpenSSLABI.verifyPeer, nil)
            _ = library.contextControl(context, OpenSSLABI.setMinimumProtocol, OpenSSLABI.tls12, nil)
            _ = library.contextControl(context, OpenSSLABI.setMode, OpenSSLABI.partialWrites, nil)
            let loaded: Bool
            if let trustedCAFile {
                loaded = library.contextLoadLocations(context, trustedCAFile, nil) == 1
            } else {
                loaded = library.contextDefaultPaths(context) == 1
            }
            guard loaded else {
                let reason = library.takeError("no certificate loaded")
                library.contextFree(context)
                return .failure(
                    .tlsUnavailable(
                        trustedCAFile.map { "the CA file \($0) did not load: \(reason)" }
                            ?? "the system trust store did not load: \(reason)"))
            }
            return .success(RedisTLSContext(library: library, context: context, trustedCAFile: trustedCAFile))
        }
    #else
        private init(trustedCAFile: String?) { self.trustedCAFile = trustedCAFile }
    #endif

    /// The contexts made so far, by CA file ("" for the system store).
    private static let contexts = Locked<[String: Result<RedisTLSContext, RedisError>]>([:])

    /// The process's context for `trustedCAFile` (nil: the system store), made on first use; a
    /// failure is kept too (the same reason is given to every later caller).
    static func shared(trustedCAFile: String?) -> Result<RedisTLSContext, RedisError> {
        #if os(Linux)
            return contexts.withLock { table in
                if let made = table[trustedCAFile ?? ""] { return made }
                let made = OpenSSLLibrary.shared.flatMap { make(library: $0, trustedCAFile: trustedCAFile) }
                table[trustedCAFile ?? ""] = made
                return made
            }
        #else
            return .failure(.tlsUnavailable("rediss:// needs OpenSSL, which Halyard loads on Linux only"))
        #endif
    }
}
