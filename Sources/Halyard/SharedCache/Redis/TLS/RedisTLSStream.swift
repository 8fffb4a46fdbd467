#if os(Linux)
    import Glibc

    /// A TLS client session (OpenSSL, loaded at run time) over one ``RedisSocket``: the byte
    /// stream of a `rediss://` connection. The handshake runs in the initializer before the
    /// connection's deadline; the server's certificate chain and host name (or IP address) are
    /// verified, and SNI is sent for a host name.
    ///
    /// OpenSSL never touches the socket: it reads and writes two memory BIOs, and this type moves
    /// the ciphertext with `recv` and `send(MSG_NOSIGNAL)` on the non-blocking socket, waiting with
    /// the socket's `poll` (so a reset never raises SIGPIPE and every wait ends at a deadline).
    ///
    /// ```swift
    /// let context = try RedisTLSContext.shared(trustedCAFile: nil).get()
    /// let stream = try RedisTLSStream(over: socket, host: "cache.example", context: context, deadline: deadline)
    /// ```
    ///
    /// Not thread-safe, like the socket: one ``RedisConnection`` owns it.
    final class RedisTLSStream: RedisByteStream {
        private let socket: RedisSocket
        private let context: RedisTLSContext
        /// The `SSL *`; it owns both BIOs.
        private let session: OpaquePointer
        /// Ciphertext from the server, for OpenSSL to read.
        private let incoming: OpaquePointer
        /// Ciphertext from OpenSSL, for the server.
        private let outgoing: OpaquePointer
        /// Ciphertext taken from `outgoing` that the socket has not accepted yet.
        private var pending: [UInt8] = []
        private var pendingSent = 0
        private var chunk = [UInt8](repeating: 0, count: 16 << 10)

        private var library: OpenSSLLibrary { context.library }

        /// Starts a session on `socket` and completes the handshake before `deadline`.
        init(over socket: RedisSocket, host: String, context: RedisTLSContext, deadline: ContinuousClock.Instant)
            throws(RedisError)
        {
            let library = context.library
            library.errorClear()
            guard let session = library.sessionNew(context.context) else {
                throw .tlsFailed(library.takeError("SSL_new failed"))
            }
            guard let incoming = library.bioNew(library.memoryMethod()) else {
                library.sessionFree(session)
                throw .tlsFailed(library.takeError("BIO_new failed"))
            }
            guard let outgoing = library.bioNew(library.memoryMethod()) else {
                _ = library.bioFree(incoming)
                library.sessionFree(session)
                throw .tlsFailed(library.takeError("BIO_new failed"))
            }
            _ = library.bioControl(incoming, OpenSSLABI.setMemoryEOFReturn, -1, nil)
            _ = library.bioControl(outgoing, OpenSSLABI.setMemoryEOFReturn, -1, nil)
            library.setBIO(session, incoming, outgoing)
            self.socket = socket
            self.context = context
            self.session = session
            self.incoming = incoming
            self.outgoing = outgoing
            try expect(host: host)
            try handshake(deadline: deadline)
        }

        deinit { library.sessionFree(session) }

        /// Names the peer the certificate must match (an IP address or a DNS name) and sends
        /// SNI for a name (RFC 6066 has none for an address).
        private func expect(host: String) throws(RedisError) {
            let set: Int32
            if Self.isIPAddress(host) {
                set = library.setIPAddress(library.param(session), host)
            } else {
                set = library.setHost(session, host)
                let named = host.withCString { name in
                    library.sessionControl(
                        session, OpenSSLABI.setServerName, OpenSSLABI.nameTypeHost,
                        UnsafeMutableRawPointer(mutating: name))
                }
                guard named == 1 else { throw .tlsFailed(library.takeError("the server name (SNI) was not set")) }
            }
            guard set == 1 else { throw .tlsFailed(library.takeError("the host to verify was not set")) }
        }

        static func isIPAddress(_ host: String) -> Bool {
            var buffer = [UInt8](repeating: 0, count: 16)
            return inet_pton(AF_INET, host, &buffer) == 1 || inet_pton(AF_INET6, host, &buffer) == 1
        }

        private func handshake(deadline: ContinuousClock.Instant) throws(RedisError) {
            while true {
                library.errorClear()
                let result = library.connect(session)
                try flush()
                if result == 1 { break }
                let code = library.getError(session, result)
                guard code == OpenSSLABI.errorWantRead || code == OpenSSLABI.errorWantWrite else {
                    throw failure(code)
                }
                let events = try socket.wait(read: true, write: !pending.isEmpty, deadline: deadline)
                if events.writable { try flush() }
                if events.readable || events.failed { _ = try fill() }
            }
            // The handshake's last flight goes out before the connection is used.
            while !pending.isEmpty {
                let events = try socket.wait(read: false, write: true, deadline: deadline)
                if events.writable || events.failed { try flush() }
            }
        }

        /// Why an OpenSSL call failed: the certificate's verification result first.
        private func failure(_ code: Int32) -> RedisError {
            let verification = library.verifyResult(session)
            if verification != OpenSSLABI.verified {
                library.errorClear()
                let text = library.verifyErrorText(verification).map { String(cString: $0) }
                return .tlsVerificationFailed(text ?? "X509 verification error \(verification)")
            }
            if code == OpenSSLABI.errorSyscall {
                return .connectionClosed(library.takeError("the TLS connection ended"))
            }
            return .tlsFailed(library.takeError("TLS error \(code)"))
        }

        // MARK: RedisByteStream

        func wait(read: Bool, write: Bool, deadline: ContinuousClock.Instant) throws(RedisError) -> RedisSocket.Events {
            while true {
                let events = try socket.wait(read: read, write: write || !pending.isEmpty, deadline: deadline)
                if events.writable && !pending.isEmpty { try flush() }
                let writable = write && events.writable && pending.isEmpty
                if events.readable || events.failed || writable {
                    return RedisSocket.Events(readable: events.readable, writable: writable, failed: events.failed)
                }
            }
        }

        func send(_ bytes: ArraySlice<UInt8>) throws(RedisError) -> Int {
            try flush()
            guard pending.isEmpty, !bytes.isEmpty else { return 0 }
            library.errorClear()
            let written = bytes.withUnsafeBytes { raw in
                library.write(session, raw.baseAddress, Int32(clamping: raw.count))
            }
            if written > 0 {
                try flush()
                return Int(written)
            }
            let code = library.getError(session, written)
            if code == OpenSSLABI.errorWantRead || code == OpenSSLABI.errorWantWrite { return 0 }
            throw failure(code)
        }

        func receive(into decoder: inout RESPDecoder) throws(RedisError) -> Int {
            _ = try fill()
            var total = 0
            while true {
                library.errorClear()
                let count = chunk.withUnsafeMutableBytes { raw in
                    library.read(session, raw.baseAddress, Int32(clamping: raw.count))
                }
                if count > 0 {
                    chunk.withUnsafeBytes { raw in decoder.append(UnsafeRawBufferPointer(rebasing: raw[..<Int(count)]))
                    }
                    total += Int(count)
                    continue
                }
                let code = library.getError(session, count)
                if code == OpenSSLABI.errorWantRead || code == OpenSSLABI.errorWantWrite { break }
                if code == OpenSSLABI.errorZeroReturn {
                    if total > 0 { break }
                    throw .connectionClosed("closed by the server (TLS close_notify)")
                }
                throw failure(code)
            }
            // Reading may have queued an answer (a TLS 1.3 key update).
            try flush()
            return total
        }

        // MARK: Ciphertext

        /// Receives what the socket holds into `incoming`; returns how many bytes (0: none yet).
        private func fill() throws(RedisError) -> Int {
            let result = chunk.withUnsafeMutableBytes { raw in recv(socket.fd, raw.baseAddress, raw.count, 0) }
            if result > 0 {
                let taken = chunk.withUnsafeBytes { raw in library.bioWrite(incoming, raw.baseAddress, Int32(result)) }
                guard taken == Int32(result) else { throw .tlsFailed(library.takeError("BIO_write failed")) }
                return result
            }
            if result == 0 { throw .connectionClosed("closed by the server") }
            let code = errno
            if code == EAGAIN || code == EWOULDBLOCK || code == EINTR { return try socket.pendingError() }
            throw .connectionClosed(RedisSocket.errorText(code))
        }

        /// Moves OpenSSL's output to `pending` and sends what the socket takes without blocking.
        private func flush() throws(RedisError) {
            while library.bioPending(outgoing) > 0 {
                let count = chunk.withUnsafeMutableBytes { raw in
                    library.bioRead(outgoing, raw.baseAddress, Int32(clamping: raw.count))
                }
                guard count > 0 else { break }
                pending.append(contentsOf: chunk[..<Int(count)])
            }
            while pendingSent < pending.count {
                let result = pending[pendingSent...].withUnsafeBytes { raw in
                    Glibc.send(socket.fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL))
                }
                if result > 0 {
                    pendingSent += result
                    continue
                }
                if result == 0 { return }
                let code = errno
                if result < 0 && (code == EAGAIN || code == EWOULDBLOCK || code == EINTR) { return }
                throw .connectionClosed(RedisSocket.errorText(code))
            }
            pending.removeAll(keepingCapacity: pending.capacity <= 64 << 10)
            pendingSent = 0
        }
    }
#endif

extension RedisTLSContext {
    /// A TLS stream to `host` over `socket`, its handshake done before `deadline`.
    func stream(over socket: RedisSocket, host: String, deadline: ContinuousClock.Instant) throws(RedisError)
        -> any RedisByteStream
    {
        #if os(Linux)
            return try RedisTLSStream(over: socket, host: host, context: self, deadline: deadline)
        #else
            throw .tlsUnavailable("rediss:// needs OpenSSL, which Halyard loads on Linux only")
        #endif
    }
}
