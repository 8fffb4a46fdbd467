#if os(Linux)
    import Glibc

    /// OpenSSL 3, loaded at run time for `rediss://` (docs/fleet.md, "TLS"): `dlopen` of
    /// `libssl.so.3` and `libcrypto.so.3` (on every toolchain image: libcurl links them), and
    /// every function the TLS stream calls resolved once into typed function pointers. No
    /// OpenSSL header or `-dev` package is needed to build Halyard: the few types are declared
    /// here, with C's own types (an `SSL *`, `SSL_CTX *`, `BIO *` is an opaque pointer).
    ///
    /// ```swift
    /// switch OpenSSLLibrary.shared {
    /// case .success(let ssl): _ = ssl.clientMethod()
    /// case .failure(let unavailable): print(unavailable)   // "libssl.so.3: cannot open shared object file…"
    /// }
    /// ```
    ///
    /// `@unchecked Sendable`: every field is written once by ``load(ssl:crypto:)`` and only read
    /// after; OpenSSL 3 is thread-safe without set-up, and Halyard never uses one `SSL` from two
    /// threads at once (a connection is used under its client's lock).
    final class OpenSSLLibrary: @unchecked Sendable {
        typealias InitSSL = @convention(c) (UInt64, UnsafeRawPointer?) -> Int32
        typealias Method = @convention(c) () -> OpaquePointer?
        typealias ContextNew = @convention(c) (OpaquePointer?) -> OpaquePointer?
        typealias ContextFree = @convention(c) (OpaquePointer?) -> Void
        typealias ContextSetVerify = @convention(c) (OpaquePointer?, Int32, OpaquePointer?) -> Void
        typealias ContextDefaultPaths = @convention(c) (OpaquePointer?) -> Int32
        typealias ContextLoadLocations =
            @convention(c) (
                OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?
            ) -> Int32
        typealias Control = @convention(c) (OpaquePointer?, Int32, Int, UnsafeMutableRawPointer?) -> Int
        typealias SessionNew = @convention(c) (OpaquePointer?) -> OpaquePointer?
        typealias SessionFree = @convention(c) (OpaquePointer?) -> Void
        typealias SetBIO = @convention(c) (OpaquePointer?, OpaquePointer?, OpaquePointer?) -> Void
        typealias SetHost = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> Int32
        typealias Param = @convention(c) (OpaquePointer?) -> OpaquePointer?
        typealias Connect = @convention(c) (OpaquePointer?) -> Int32
        typealias ReadWrite = @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32) -> Int32
        typealias Write = @convention(c) (OpaquePointer?, UnsafeRawPointer?, Int32) -> Int32
        typealias GetError = @convention(c) (OpaquePointer?, Int32) -> Int32
        typealias VerifyResult = @convention(c) (OpaquePointer?) -> Int
        typealias BIONew = @convention(c) (OpaquePointer?) -> OpaquePointer?
        typealias BIOFree = @convention(c) (OpaquePointer?) -> Int32
        typealias BIOPending = @convention(c) (OpaquePointer?) -> Int
        typealias VerifyErrorText = @convention(c) (Int) -> UnsafePointer<CChar>?
        typealias ErrorGet = @convention(c) () -> UInt
        typealias ErrorText = @convention(c) (UInt, UnsafeMutablePointer<CChar>?, Int) -> Void
        typealias ErrorClear = @convention(c) () -> Void

        // libssl
        let initSSL: InitSSL
        let clientMethod: Method
        let contextNew: ContextNew
        let contextFree: ContextFree
        let contextSetVerify: ContextSetVerify
        let contextDefaultPaths: ContextDefaultPaths
        let contextLoadLocations: ContextLoadLocations
        let contextControl: Control
        let sessionNew: SessionNew
        let sessionFree: SessionFree
        let setBIO: SetBIO
        let sessionControl: Control
        let setHost: SetHost
        let param: Param
        let connect: Connect
        let read: ReadWrite
        let write: Write
        let getError: GetError
        let verifyResult: VerifyResult
        // libcrypto
        let memoryMethod: Method
        let bioNew: BIONew
        let bioFree: BIOFree
        let bioRead: ReadWrite
        let bioWrite: Write
        let bioControl: Control
        let bioPending: BIOPending
        let setIPAddress: SetHost
        let verifyErrorText: VerifyErrorText
        let errorGet: ErrorGet
        let errorText: ErrorText
        let errorClear: ErrorClear

        /// The names tried, libssl with its libcrypto.
        static let defaultNames = (ssl: "libssl.so.3", crypto: "libcrypto.so.3")

        /// The process's OpenSSL: loaded and initialised once, on first use.
        static let shared: Result<OpenSSLLibrary, RedisError> = load(
            ssl: defaultNames.ssl, crypto: defaultNames.crypto)

        /// Loads `ssl` and `crypto` and resolves every function; the failure says which step.
        /// The libraries stay loaded for the life of the process.
        static func load(ssl: String, crypto: String) -> Result<OpenSSLLibrary, RedisError> {
            guard let cryptoHandle = dlopen(crypto, RTLD_NOW | RTLD_LOCAL) else { return .failure(failure(crypto)) }
            guard let sslHandle = dlopen(ssl, RTLD_NOW | RTLD_LOCAL) else {
                dlclose(cryptoHandle)
                return .failure(failure(ssl))
            }
            do throws(RedisError) {
                let library = try OpenSSLLibrary(
                    ssl: Symbols(handle: sslHandle, name: ssl), crypto: Symbols(handle: cryptoHandle, name: crypto))
                // OPENSSL_INIT_LOAD_SSL_STRINGS | OPENSSL_INIT_LOAD_CRYPTO_STRINGS: readable errors.
                guard library.initSSL(0x0020_0000 | 0x0000_0002, nil) == 1 else {
                    throw .tlsUnavailable("OPENSSL_init_ssl failed")
                }
                return .success(library)
            } catch {
                dlclose(sslHandle)
                dlclose(cryptoHandle)
                return .failure(error)
            }
        }

        private static func failure(_ name: String) -> RedisError {
            .tlsUnavailable(dlerror().map { String(cString: $0) } ?? "\(name) could not be loaded")
        }

        /// One library's symbols, resolved by name into a function type.
        private struct Symbols {
            let handle: UnsafeMutableRawPointer
            let name: String

            func callAs<T>(_ symbol: String, _: T.Type = T.self) throws(RedisError) -> T {
                guard let pointer = dlsym(handle, symbol) else { throw .tlsUnavailable("\(name) has no \(symbol)") }
                return unsafeBitCast(pointer, to: T.self)
            }
        }

        private init(ssl: Symbols, crypto: Symbols) throws(RedisError) {
            initSSL = try ssl.callAs("OPENSSL_init_ssl")
            clientMethod = try ssl.callAs("TLS_client_method")
            contextNew = try ssl.callAs("SSL_CTX_new")
            contextFree = try ssl.callAs("SSL_CTX_free")
            contextSetVerify = try ssl.callAs("SSL_CTX_set_verify")
            contextDefaultPaths = try ssl.callAs("SSL_CTX_set_default_verify_paths")
            contextLoadLocations = try ssl.callAs("SSL_CTX_load_verify_locations")
            contextControl = try ssl.callAs("SSL_CTX_ctrl")
            sessionNew = try ssl.callAs("SSL_new")
            sessionFree = try ssl.callAs("SSL_free")
            setBIO = try ssl.callAs("SSL_set_bio")
            sessionControl = try ssl.callAs("SSL_ctrl")
            setHost = try ssl.callAs("SSL_set1_host")
            param = try ssl.callAs("SSL_get0_param")
            connect = try ssl.callAs("SSL_connect")
            read = try ssl.callAs("SSL_read")
            write = try ssl.callAs("SSL_write")
            getError = try ssl.callAs("SSL_get_error")
            verifyResult = try ssl.callAs("SSL_get_verify_result")
            memoryMethod = try crypto.callAs("BIO_s_mem")
            bioNew = try crypto.callAs("BIO_new")
            bioFree = try crypto.callAs("BIO_free")
            bioRead = try crypto.callAs("BIO_read")
            bioWrite = try crypto.callAs("BIO_write")
            bioControl = try crypto.callAs("BIO_ctrl")
            bioPending = try crypto.callAs("BIO_ctrl_pending")
            setIPAddress = try crypto.callAs("X509_VERIFY_PARAM_set1_ip_asc")
            verifyErrorText = try crypto.callAs("X509_verify_cert_error_string")
            errorGet = try crypto.callAs("ERR_get_error")
            errorText = try crypto.callAs("ERR_error_string_n")
            errorClear = try crypto.callAs("ERR_clear_error")
        }

        /// The oldest error on this thread's OpenSSL error queue, as text (the queue is then
        /// cleared), or `fallback` when it is empty.
        func takeError(_ fallback: String) -> String {
            let code = errorGet()
            defer { errorClear() }
            guard code != 0 else { return fallback }
            var text = [CChar](repeating: 0, count: 256)
            errorText(code, &text, text.count)
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// The numbers of OpenSSL's ABI the TLS stream uses (stable across 3.x; the names are
    /// OpenSSL's).
    enum OpenSSLABI {
        /// `SSL_VERIFY_PEER`.
        static let verifyPeer: Int32 = 1
        /// `SSL_CTRL_SET_MIN_PROTO_VERSION` with `TLS1_2_VERSION`.
        static let setMinimumProtocol: Int32 = 123
        static let tls12: Int = 0x0303
        /// `SSL_CTRL_SET_TLSEXT_HOSTNAME` with `TLSEXT_NAMETYPE_host_name` (SNI).
        static let setServerName: Int32 = 55
        static let nameTypeHost: Int = 0
        /// `SSL_CTRL_MODE` with `SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER`.
        static let setMode: Int32 = 33
        static let partialWrites: Int = 0x1 | 0x2
        /// `BIO_C_SET_BUF_MEM_EOF_RETURN`: an empty memory BIO reads as "retry", not end of file.
        static let setMemoryEOFReturn: Int32 = 130
        /// `SSL_get_error` results.
        static let errorNone: Int32 = 0
        static let errorSSL: Int32 = 1
        static let errorWantRead: Int32 = 2
        static let errorWantWrite: Int32 = 3
        static let errorSyscall: Int32 = 5
        static let errorZeroReturn: Int32 = 6
        /// `X509_V_OK`.
        static let verified = 0
    }
#endif
